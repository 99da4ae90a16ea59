"""amago-envs: env suites (one extra each) and exploration wrappers, as plugins.

The rollout contract these build on (``AMAGOEnv``, ``SequenceEnv``, ``EnvCreator``, the vector pools) lives in
``amago_core.rollout``; import it from there. Public names load lazily (PEP 562): spec modules under this
package are imported by ``amago list``, which must not pay for gymnasium.
"""

from __future__ import annotations

from amago_core.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "EpsilonGreedy": "amago_envs.exploration.wrappers",
        "BilevelEpsilonGreedy": "amago_envs.exploration.wrappers",
    },
)
