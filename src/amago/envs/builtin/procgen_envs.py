"""AMAGO's ``amago.envs.builtin.procgen_envs``: two-attempt multi-game Procgen is amago-envs' ``procgen``
suite."""

from __future__ import annotations

from amago._compat import shim_exports

_PROCGEN = (
    "use the env id procgen-easy (or procgen-easy-rescaled, procgen-memory-hard), or "
    "amago_envs.suites.procgen.two_attempt.TwoAttemptProcgen(games, level_range, distribution)"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "TwoAttemptMTProcgen": _PROCGEN,
        "ProcgenAMAGO": _PROCGEN,
        "ALL_PROCGEN_GAMES": "the games of each distribution are options of the procgen suite "
        "(`amago show envs procgen`)",
    },
)
