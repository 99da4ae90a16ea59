"""``AsyncPool``: one subprocess per env, stepped in parallel (expensive envs).

Each worker builds its env stack from cloudpickled creators, so creators may be lambdas or classes defined
in a script. The same-step reset happens inside the worker (in ``SequenceEnv``), not through gymnasium's
vector autoreset. With ``envs_per_worker > 1`` each worker runs a ``SyncPool`` of several envs, which pays
off when envs are cheap and cores are few (one process per env spends its time on pipe round trips).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import cloudpickle
import numpy as np

from amago_core.data.timestep import Timestep
from amago_core.rollout.env import EnvContractError, NonFiniteEnvDataError
from amago_core.rollout.pools.base import VectorPool, concat_results, merge_stats
from amago_core.rollout.sequence import SequenceEnv, StepResult

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext

StartMethod = Literal["forkserver", "spawn", "fork"]


class EnvWorkerError(RuntimeError):
    """An env raised inside an async worker; the message names the env row and carries its traceback."""


def _pickleable_exception(exc: BaseException) -> BaseException | None:
    try:
        cloudpickle.dumps(exc)
    except Exception:
        return None
    return exc


def _build_worker_envs(creators: list[Callable[[], SequenceEnv]]) -> Any:
    if len(creators) == 1:
        return creators[0]()
    from amago_core.rollout.pools.sync import SyncPool  # only workers that hold several envs need it

    return SyncPool(creators)


def _worker(conn: Connection, payload: bytes) -> None:
    try:
        env = _build_worker_envs(cloudpickle.loads(payload))
        conn.send(("ok", getattr(env, "num_envs", None) or env.batched_envs))
    except BaseException as exc:
        conn.send(("error", (_pickleable_exception(exc), traceback.format_exc())))
        conn.close()
        return
    while True:
        try:
            cmd, arg = conn.recv()
        except EOFError:  # the parent went away
            break
        try:
            if cmd == "step":
                out: Any = env.step(arg)
            elif cmd == "reset":
                out = env.reset(seed=arg)
            elif cmd == "stats":
                out = env.stats()
            elif cmd == "reset_stats":
                out = env.reset_stats()
            elif cmd == "save":
                out = env.save_finished_trajs()
            elif cmd == "close":
                env.close()
                conn.send(("ok", None))
                break
            else:
                msg = f"unknown command {cmd!r}"
                raise ValueError(msg)
            conn.send(("ok", out))
        except BaseException as exc:
            conn.send(("error", (_pickleable_exception(exc), traceback.format_exc())))
    conn.close()


class AsyncPool(VectorPool):
    """Envs in worker processes.

    Args:
        env_fns: one creator per env (each returns a ``SequenceEnv``); pickled with cloudpickle.
        start_method: ``forkserver`` (default: fast starts, no inherited threads), ``spawn`` (most portable),
            or ``fork`` (fastest, unsafe once torch threads exist).
        envs_per_worker: consecutive creators that share one worker process (row order is kept).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], SequenceEnv]],
        start_method: StartMethod = "forkserver",
        envs_per_worker: int = 1,
    ) -> None:
        if not env_fns:
            msg = "a pool needs at least one env creator."
            raise ValueError(msg)
        if start_method not in ("forkserver", "spawn", "fork"):
            msg = f"start_method must be 'forkserver', 'spawn' or 'fork'; got {start_method!r}."
            raise ValueError(msg)
        if envs_per_worker < 1:
            msg = f"envs_per_worker must be >= 1; got {envs_per_worker}."
            raise ValueError(msg)
        groups = [list(env_fns[i : i + envs_per_worker]) for i in range(0, len(env_fns), envs_per_worker)]
        # typeshed returns the bare BaseContext (which lacks ``Process``) for a union of method names.
        ctx = cast("ForkServerContext | SpawnContext | ForkContext", mp.get_context(start_method))
        if start_method == "forkserver":
            # Workers fork from the server: with these imported there once, each new worker starts in ms.
            ctx.set_forkserver_preload(["numpy", "gymnasium", "amago_core.rollout.pools.async_pool"])
        self._group_size = envs_per_worker
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._closed = False
        for group in groups:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, cloudpickle.dumps(group)), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        try:
            self._rows = [int(r) for r in self._gather()]
        except BaseException:
            self.close()
            raise
        self._offsets = np.cumsum([0, *self._rows])
        self.num_envs = int(self._offsets[-1])

    def _gather(self, conns: Sequence[Connection] | None = None) -> list[Any]:
        results, first_error = [], None
        for i, conn in enumerate(conns or self._conns):
            try:
                status, value = conn.recv()
            except EOFError:
                status, value = "error", (None, f"worker {i} exited unexpectedly (killed or crashed)")
            if status == "error" and first_error is None:
                first_error = (i, *value)
            results.append(value)
        if first_error is not None:
            i, exc, tb = first_error
            last_line = tb.strip().splitlines()[-1] if tb.strip() else "unknown error"
            g = self._group_size
            who = f"env {i}" if g == 1 else f"worker {i} (envs {i * g} to {i * g + g - 1})"
            if isinstance(exc, EnvContractError | NonFiniteEnvDataError):
                # The env broke amago's contract: the message already says what and what to do.
                raise type(exc)(f"{who} of the async pool: {exc}") from None
            msg = f"{who} of the async pool raised {last_line}\n{tb}"
            raise EnvWorkerError(msg) from exc
        return results

    def _broadcast(self, cmd: str, arg: Any = None) -> list[Any]:
        if self._closed:
            msg = "the async pool is closed; build a new one."
            raise RuntimeError(msg)
        for conn in self._conns:
            conn.send((cmd, arg))
        return self._gather()

    def reset(self, seed: int | None = None) -> Timestep:
        """Resets every env (in parallel)."""
        for conn, off in zip(self._conns, self._offsets[:-1], strict=True):
            conn.send(("reset", None if seed is None else seed + int(off)))
        return Timestep.concat(self._gather())

    def step(self, actions: Any) -> StepResult:
        """Sends every env its actions, then waits for all of them."""
        actions = np.asarray(actions)
        if len(actions) != self.num_envs:
            msg = f"got {len(actions)} actions for {self.num_envs} env rows; pass one per row (leading dim)."
            raise ValueError(msg)
        off = self._offsets
        for i, conn in enumerate(self._conns):
            conn.send(("step", actions[off[i] : off[i + 1]]))
        return concat_results(self._gather())

    def stats(self) -> dict[str, Any]:
        """Merged histories and frame counts of every worker."""
        return merge_stats(self._broadcast("stats"))

    def reset_stats(self) -> None:
        """Forgets histories in every worker."""
        self._broadcast("reset_stats")

    def save_finished_trajs(self) -> list[Path]:
        """Each worker writes its own finished trajectories."""
        return [p for paths in self._broadcast("save") for p in paths]

    def close(self) -> None:
        """Asks workers to close their envs, then stops them."""
        if self._closed:
            return
        self._closed = True
        for conn in self._conns:
            with contextlib.suppress(BrokenPipeError, OSError):  # the worker is already gone
                conn.send(("close", None))
        for conn in self._conns:
            try:
                if conn.poll(5):
                    conn.recv()
            except (EOFError, OSError):
                pass
            conn.close()
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
