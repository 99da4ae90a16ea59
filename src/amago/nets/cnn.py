"""AMAGO's ``amago.nets.cnn``: the image backbones (amago-nets).

The ``cnn`` timestep encoder picks its backbone by name: ``-o tstep_encoder.cnn_type=impala`` (AMAGO's
``CNNTstepEncoder.cnn_type = IMPALAishCNN``; ``nature``, ``impala``, ``drq`` or ``gridworld``), and
``-o tstep_encoder.impala_block_depths=[32,64,64]`` (AMAGO's ``IMPALAishCNN.cnn_block_depths``) or
``-o tstep_encoder.cnn_channels=[16,32,32]`` (AMAGO's ``NatureishCNN.channels`` or ``GridworldCNN.channels``).
The classes are here for custom timestep encoders: amago-nets' backbones with AMAGO's arguments and AMAGO's
``blank_img`` (:mod:`amago.from_amago.nets`).
"""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "CNN": "amago_nets.cnn:ImageBackbone",
        "NatureishCNN": "amago.from_amago.nets:NatureishCNN",
        "IMPALAishCNN": "amago.from_amago.nets:IMPALAishCNN",
        "DrQCNN": "amago.from_amago.nets:DrQCNN",
        "GridworldCNN": "amago.from_amago.nets:GridworldCNN",
        "DrQv2Aug": "amago_nets.cnn:DrQv2Aug",
    },
)
