"""Tools around amago runs (plots, policy export, the plugin scaffold), added to the ``amago`` command through amago-core's public hooks."""
