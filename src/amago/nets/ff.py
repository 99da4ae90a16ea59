"""AMAGO's ``amago.nets.ff``: feed-forward pieces (amago-nets' layers).

``Normalization(method, d_model)`` builds the normalisation module named ``method`` (``"none"``, ``"layer"``,
``"rmsnorm"``, ``"unitball"``, ``"hypersphere"``, ``"simnorm"``) as AMAGO's did.
"""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "Normalization": "amago.from_amago.nets:Normalization",
        "SimNorm": "amago_nets.layers:SimNorm",
        "FFBlock": "amago_nets.layers:FFBlock",
        "MLP": "amago_nets.layers:MLP",
    },
)
