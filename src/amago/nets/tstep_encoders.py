"""AMAGO's ``amago.nets.tstep_encoders``: the timestep encoders (amago-nets) under AMAGO's names.

Their options come from a config (``FFTstepEncoderConfig``...), not keyword arguments: pass the class, the name
or a table to ``Experiment(tstep_encoder_type=...)``, and set options with ``-o tstep_encoder.d_output=128``.
A custom encoder subclasses ``TstepEncoder`` as in AMAGO (``emb_dim`` and ``inner_forward(obs, rl2s)``);
``@register_tstep_encoder("my_encoder")`` registers it under a name, as in AMAGO.
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import TSTEP_ENCODER_REGISTRY

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "TstepEncoder": "amago_nets.base:TstepEncoder",
        "FFTstepEncoder": "amago_nets.tstep_ff:FFTstepEncoder",
        "CNNTstepEncoder": "amago_nets.tstep_cnn:CNNTstepEncoder",
        **TSTEP_ENCODER_REGISTRY,
    },
)
