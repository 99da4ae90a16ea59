"""``amago run --budget 10m`` and ``--steps 200k`` (a run sized to this machine) and the wall-time estimate of a
long run before it starts, added to ``amago run`` through amago-core's run hooks (see
:mod:`amago_tools.sizing.run_options`).

- :mod:`~amago_tools.sizing.budget`: a run's wall time at measured costs, and the env steps a budget affords;
- :mod:`~amago_tools.sizing.calibrate`: the throw-away copy of the run that measures those costs here;
- :mod:`~amago_tools.sizing.estimate`: the line that says how long a long run takes here;
- :mod:`~amago_tools.sizing.run_options`: the two options and the hooks' bodies.
"""
