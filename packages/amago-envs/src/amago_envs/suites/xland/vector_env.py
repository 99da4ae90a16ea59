"""``XLandVectorEnv``: a batch of XLand-MiniGrid rows, each playing k episodes per ruleset, in one jax call."""

from __future__ import annotations

import functools
import os
from typing import Any

# jax reads this when its backend starts; on a GPU it would otherwise reserve most of the memory torch needs.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import xminigrid
from xminigrid.core.constants import NUM_ACTIONS, NUM_COLORS, NUM_TILES
from xminigrid.types import RuleSet

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites.xland.rulesets import GOAL_LEN, Rulesets


def _where_rows(mask: jax.Array, new: Any, old: Any) -> Any:
    """Per row of a batched pytree: ``new`` where ``mask``, else ``old``."""

    def pick(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(pick, new, old)


@functools.lru_cache(maxsize=16)
def compiled_functions(env_id: str, view_size: int, max_steps: int | None, n: int, k: int) -> tuple[Any, Any]:
    """The jit-compiled batch ``reset`` and ``step`` of one layout and batch shape.

    Cached so that the train, val and sample envs of one experiment share the traced programs (an XLand
    compile takes seconds on a CPU); the ruleset pool is an argument, not a constant, for the same reason.
    """
    kwargs: dict[str, Any] = {"view_size": view_size}
    if max_steps is not None:
        kwargs["max_steps"] = max_steps
    env, params = xminigrid.make(env_id, **kwargs)

    def reset_row(ruleset: RuleSet, key: jax.Array) -> Any:
        return env.reset(params.replace(ruleset=ruleset), key)

    def step_row(ruleset: RuleSet, timestep: Any, action: jax.Array) -> Any:
        return env.step(params.replace(ruleset=ruleset), timestep, action)

    v_reset, v_step = jax.vmap(reset_row), jax.vmap(step_row)

    def draw(pool: tuple[RuleSet, jax.Array], key: jax.Array) -> RuleSet:
        rulesets, size = pool  # rows past `size` are padding (so pools of any size share one program)
        index = jax.random.randint(key, (n,), 0, size)
        return jax.tree.map(lambda a: a[index], rulesets)

    def observe(timestep: Any, new_episode: jax.Array, rulesets: RuleSet) -> dict[str, jax.Array]:
        direction = jax.nn.one_hot(timestep.state.agent.direction, 4, dtype=jnp.float32)
        flag = new_episode.astype(jnp.float32)[:, None]
        return {
            "grid": timestep.observation,
            "direction_done": jnp.concatenate([direction, flag], axis=1),
            "goal": rulesets.goal,
        }

    def reset_all(pool: tuple[RuleSet, jax.Array], key: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
        rule_key, reset_key = jax.random.split(key)
        rulesets = draw(pool, rule_key)
        timestep = v_reset(rulesets, jax.random.split(reset_key, n))
        carry = (timestep, rulesets, jnp.zeros(n, jnp.int32), jnp.zeros((n, k), jnp.float32))
        return carry, observe(timestep, jnp.zeros(n, bool), rulesets)

    def step_all(
        pool: tuple[RuleSet, jax.Array], carry: Any, action: jax.Array, key: jax.Array
    ) -> tuple[Any, ...]:
        timestep, rulesets, episode, returns = carry
        stepped = v_step(rulesets, timestep, action)
        episode_over = stepped.last()
        returns = returns.at[jnp.arange(n), episode].add(stepped.reward)
        episode = episode + episode_over.astype(jnp.int32)
        rollout_over = episode >= k
        rule_key, reset_key = jax.random.split(key)
        # Rows that finished their k-th episode get a new ruleset; any finished episode gets a new layout.
        rulesets = _where_rows(rollout_over, draw(pool, rule_key), rulesets)
        fresh = v_reset(rulesets, jax.random.split(reset_key, n))
        timestep = _where_rows(episode_over, fresh, stepped)
        finished_returns = returns
        episode = jnp.where(rollout_over, 0, episode)
        returns = jnp.where(rollout_over[:, None], 0.0, returns)
        obs = observe(timestep, episode_over & ~rollout_over, rulesets)
        return (timestep, rulesets, episode, returns), obs, stepped.reward, rollout_over, finished_returns

    return jax.jit(reset_all), jax.jit(step_all)


class XLandVectorEnv(gymnasium.Env[dict, np.ndarray]):
    """``num_envs`` XLand-MiniGrid rows; each plays ``k_episodes`` episodes on one ruleset, then draws another.

    Inside a row's k-episode rollout an episode that ends is reset at once (new layout, same ruleset) and the
    next observation's done flag is 1; when the k-th episode ends the row reports terminated and truncated,
    gets a new ruleset from its pool and starts over in the same step (SAME_STEP autoreset), and
    ``AMAGO_LOG_METRIC Ep {n} Return`` carries that rollout's per-episode returns (masked to finished rows).

    Observations (one row): ``grid`` ``(view, view, 2)`` uint8 tile and colour ids, ``direction_done`` ``(5,)``
    float32 (one-hot facing direction, then 1.0 on the first step of an episode after the first), ``goal``
    ``(5,)`` uint8 (the ruleset's goal encoding). Actions: ``Discrete(6)``.

    Args:
        env_id: an xminigrid XLand id, e.g. ``XLand-MiniGrid-R1-9x9``.
        rulesets: the pool rows draw rulesets from.
        num_envs: rows.
        k_episodes: episodes per ruleset.
        view_size: side of the egocentric view.
        max_steps: episode step limit (None: xminigrid's default).
        seed: seed of the jax key; None draws one.
        env_name: the name to log under.
        pool_capacity: pad the pool to this many rulesets, so that envs with pools of different sizes (train
            and val) share one compiled program.
    """

    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": "SameStep"}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        env_id: str,
        rulesets: Rulesets,
        num_envs: int,
        k_episodes: int,
        view_size: int = 5,
        max_steps: int | None = None,
        seed: int | None = None,
        env_name: str = "xland",
        pool_capacity: int | None = None,
    ):
        if num_envs < 1 or k_episodes < 1:
            msg = f"num_envs and k_episodes must be at least 1, got {num_envs} and {k_episodes}."
            raise ValueError(msg)
        self.num_envs = int(num_envs)
        self.k_episodes = int(k_episodes)
        self.max_steps = max_steps
        self.env_name = env_name
        capacity = max(len(rulesets), pool_capacity or 0)
        padded = rulesets.padded(capacity)
        stacked = RuleSet(
            goal=jnp.asarray(padded.goals),
            rules=jnp.asarray(padded.rules),
            init_tiles=jnp.asarray(padded.init_tiles),
        )
        self._pool = (stacked, jnp.asarray(len(rulesets), dtype=jnp.int32))
        self.single_observation_space = gymnasium.spaces.Dict(
            {
                "grid": gymnasium.spaces.Box(
                    0, max(NUM_TILES, NUM_COLORS), (view_size, view_size, 2), np.uint8
                ),
                "direction_done": gymnasium.spaces.Box(0.0, 1.0, (5,), np.float32),
                "goal": gymnasium.spaces.Box(0, 255, (GOAL_LEN,), np.uint8),
            }
        )
        self.single_action_space = gymnasium.spaces.Discrete(int(NUM_ACTIONS))
        self.observation_space = self.single_observation_space
        # The unbatched space, as gymnax's env does; step() itself takes a (num_envs,) batch of actions.
        self.action_space = self.single_action_space  # type: ignore[assignment]
        self._reset_fn, self._step_fn = compiled_functions(
            env_id, view_size, max_steps, self.num_envs, self.k_episodes
        )
        rng_seed = seed if seed is not None else int(np.random.default_rng().integers(2**31 - 1))
        self._key = jax.random.key(rng_seed)
        self._carry: Any = None

    def _next_key(self) -> jax.Array:
        self._key, sub = jax.random.split(self._key)
        return sub

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Starts a new k-episode rollout with a new ruleset in every row."""
        if seed is not None:
            self._key = jax.random.key(seed)
        self._carry, obs = self._reset_fn(self._pool, self._next_key())
        return jax.tree.map(np.asarray, obs), {}

    # A batched env: rewards and done flags are (num_envs,) arrays, as AMAGOEnv(batched_envs=N) expects,
    # where gymnasium.Env.step declares one scalar reward and bool flags.
    def step(  # type: ignore[override]
        self, action: np.ndarray
    ) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every row; rows whose k-th episode ended come back already on a new ruleset."""
        if self._carry is None:
            msg = "XLandVectorEnv.step() before reset(); call reset() first."
            raise RuntimeError(msg)
        batch_action = jnp.asarray(np.asarray(action, dtype=np.int32).reshape(self.num_envs))
        self._carry, obs, reward, done, returns = self._step_fn(
            self._pool, self._carry, batch_action, self._next_key()
        )
        done = np.asarray(done, dtype=bool)
        info: dict[str, Any] = {}
        if done.any():
            returns = np.asarray(returns)
            for episode in range(self.k_episodes):
                key = f"{AMAGO_ENV_LOG_PREFIX} Ep {episode + 1} Return"
                info[key] = returns[:, episode]
                info[f"_{key}"] = done
        return jax.tree.map(np.asarray, obs), np.asarray(reward, dtype=np.float32), done, done.copy(), info
