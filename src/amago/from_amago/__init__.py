"""AMAGO compatibility: AMAGO's ``Experiment`` (:mod:`amago.from_amago.experiment`, its flat keyword table in
:mod:`amago.from_amago.flat`), and bringing AMAGO v3.3.0 run folders into amago: weights, gin config and a run
folder ``amago.load_policy`` reads.

The command is ``amago import-amago AMAGO_RUN_DIR [OUT]``; :func:`amago_state_dict_to_amago` maps a state dict
alone. AMAGO's gin files are read by :mod:`amago.from_amago.gin`, which ``amago migrate-gin`` uses too. Nothing
here imports AMAGO or unpickles objects: checkpoints are read as tensors only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AmagoCheckpointError", "amago_state_dict_to_amago"]


def __getattr__(name: str) -> Any:
    # The weight converter imports torch; the package itself stays cheap for the CLI hook.
    if name in __all__:
        from amago.from_amago import weights

        return getattr(weights, name)
    raise AttributeError(name)
