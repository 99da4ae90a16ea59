"""AMAGO's ``amago.nets.cnn``: the image backbones (amago-nets).

The ``cnn`` timestep encoder picks its backbone by name: ``-o tstep_encoder.cnn_type=impala`` (AMAGO's
``CNNTstepEncoder.cnn_type = IMPALAishCNN``), and ``-o tstep_encoder.impala_block_depths=[32,64,64]`` (AMAGO's
``IMPALAishCNN.cnn_block_depths``). The classes are here for custom timestep encoders.
"""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "CNN": "amago_nets.cnn:ImageBackbone",
        "NatureishCNN": "amago_nets.cnn:NatureishCNN",
        "IMPALAishCNN": "amago_nets.cnn:IMPALAishCNN",
        "DrQv2Aug": "amago_nets.cnn:DrQv2Aug",
    },
    no_counterpart={
        "GridworldCNN": "the cnn tstep encoder offers cnn_type nature or impala; for small grids write a "
        "TstepEncoder around your own backbone (docs/tutorial/02-components.md)",
        "DrQCNN": "the cnn tstep encoder offers cnn_type nature or impala; DrQ's augmentation is "
        "-o tstep_encoder.drqv2_aug=true",
    },
)
