"""Collection on other processes and machines (optional backends; nothing here is imported by a default run)."""
