"""The ``popgym`` env suite: every POPGym task with AMAGO's wrappers, and MultiDomainPOPGym (AMAGO-2)."""
