"""AMAGO's built-in env classes (``amago.envs.builtin.*``) with AMAGO's constructor arguments, on amago-envs'
suites: one module per suite, imported only when a script names one of its classes (each needs its suite's
third-party package, as AMAGO's did)."""
