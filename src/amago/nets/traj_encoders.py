"""AMAGO's ``amago.nets.traj_encoders``: the trajectory encoders (amago-nets) under AMAGO's names.

``TformerTrajEncoder`` is amago's ``TransformerTrajEncoder``. Options come from a config
(``TransformerTrajEncoderConfig``...), not keyword arguments: pass the class, the name or a table to
``Experiment(traj_encoder_type=...)``, and set options with ``-o traj_encoder.n_layers=4``.
``@register_traj_encoder("my_encoder")`` registers a class of the script under a name, as in AMAGO.
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import TRAJ_ENCODER_REGISTRY

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "TrajEncoder": "amago_nets.base:TrajEncoder",
        "IdentityTrajEncoder": "amago_nets.traj_simple:IdentityTrajEncoder",
        "FFTrajEncoder": "amago_nets.traj_simple:FFTrajEncoder",
        "GRUTrajEncoder": "amago_nets.traj_rnn:GRUTrajEncoder",
        "TformerTrajEncoder": "amago_nets.traj_transformer:TransformerTrajEncoder",
        "MambaTrajEncoder": "amago_nets.traj_mamba:MambaTrajEncoder",
        **TRAJ_ENCODER_REGISTRY,
    },
)
