"""A plugin written against amago's plugin API 1 as first published (specs use ``extra={...}``)."""
