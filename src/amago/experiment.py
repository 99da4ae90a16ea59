"""AMAGO's ``amago.experiment``: ``Experiment``, amago-core's with AMAGO's keyword arguments and methods.

``Experiment(...)`` (:mod:`amago.from_amago.experiment`) keeps AMAGO's flat settings (``learning_rate``,
``parallel_actors``...), ``start()``, ``learn()``, ``evaluate_test()`` and the checkpoint methods; every setting
lives in one config tree (``experiment.config``), the same one ``amago run`` builds.
"""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__, {"Experiment": "amago.from_amago.experiment:Experiment"}
)
