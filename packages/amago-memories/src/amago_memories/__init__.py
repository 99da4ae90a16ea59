"""amago-memories: memories researchers compare today, as ``amago.traj_encoders`` plugins.

Each memory is a subpackage with a torch-free ``specs.py`` (what ``amago list`` imports) and an ``encoder.py``
(built only when a run uses it). They use amago-core's public plugin API alone, as a third party would.
"""

__version__ = "0.1.0"
