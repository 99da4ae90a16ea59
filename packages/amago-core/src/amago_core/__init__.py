"""amago-core: the plugin API, configs, CLI and experiment machinery. Importing it is cheap (no torch)."""

__version__ = "0.1.0"
