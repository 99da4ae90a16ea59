"""``AsyncPool``: one subprocess per env, stepped in parallel (expensive envs).

Each worker builds its env stack from cloudpickled creators, so creators may be lambdas or classes defined
in a script. The same-step reset happens inside the worker (in ``SequenceEnv``), not through gymnasium's
vector autoreset. With ``envs_per_worker > 1`` each worker runs a ``SyncPool`` of several envs, which pays
off when envs are cheap and cores are few (one process per env spends its time on pipe round trips).

Under ``forkserver`` and ``spawn``, multiprocessing runs the main script's top level again in every worker (as
``__mp_main__``): a script that starts its run outside an ``if __name__ == "__main__":`` block is warned once.
"""

from __future__ import annotations

import ast
import contextlib
import multiprocessing as mp
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
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
    commands: dict[str, Callable[[Any], Any]] = {
        "step": env.step,
        "reset": lambda seed: env.reset(seed=seed),
        "stats": lambda _: env.stats(),
        "reset_stats": lambda _: env.reset_stats(),
        "save": lambda _: env.save_finished_trajs(),
    }
    while True:
        try:
            cmd, arg = conn.recv()
        except EOFError:  # the parent went away
            break
        try:
            if cmd == "close":
                env.close()
                conn.send(("ok", None))
                break
            if cmd not in commands:
                msg = f"unknown command {cmd!r}"
                raise ValueError(msg)
            conn.send(("ok", commands[cmd](arg)))
        except BaseException as exc:
            conn.send(("error", (_pickleable_exception(exc), traceback.format_exc())))
    conn.close()


_WARNED_SCRIPTS: set[str] = set()
"""Main scripts already warned about (one warning per script and process)."""


def _is_main_guard(node: ast.stmt) -> bool:
    """Whether ``node`` is ``if __name__ == "__main__":`` (either operand order, possibly with more conditions)."""
    if not isinstance(node, ast.If):
        return False
    for compare in ast.walk(node.test):
        if isinstance(compare, ast.Compare) and len(compare.comparators) == 1:
            operands = {compare.left, compare.comparators[0]}
            names = {o.id for o in operands if isinstance(o, ast.Name)}
            constants = {o.value for o in operands if isinstance(o, ast.Constant)}
            if names == {"__name__"} and constants == {"__main__"}:
                return True
    return False


def _unguarded_main_line() -> tuple[str, int] | None:
    """``(script, line)`` when the main script's top level, outside an ``if __name__ == "__main__":`` block, is
    what started this pool (and so would start it again in every worker); else None.

    Mirrors ``multiprocessing.spawn.get_preparation_data``: a worker re-runs the main module when it has a
    file or a module name other than a package's ``__main__`` (an interactive session has neither).
    """
    main = sys.modules.get("__main__")
    if main is None:
        return None
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    if spec_name is not None and (spec_name == "__main__" or spec_name.endswith(".__main__")):
        return None  # `python -m package`: multiprocessing does not re-run a package's __main__
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None:  # the main module is not running its top level (a thread, an atexit hook)
        return None
    script, line = frame.f_code.co_filename, frame.f_lineno
    try:
        tree = ast.parse(Path(script).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None  # no source to look at (a frozen app, an exec'd string): nothing to point at
    for node in tree.body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            return None if _is_main_guard(node) else (script, line)
    return None


def _warn_if_main_unguarded(start_method: StartMethod) -> None:
    """Warns once per script when the workers would re-run the code that started this pool (see the module
    docstring); ``fork`` copies the parent instead and re-runs nothing."""
    if start_method == "fork":
        return
    found = _unguarded_main_line()
    if found is None or found[0] in _WARNED_SCRIPTS:
        return
    script, line = found
    _WARNED_SCRIPTS.add(script)
    msg = (
        f"the async env pool's {start_method} workers each re-run the top level of {Path(script).name}, which "
        f'starts this pool outside an `if __name__ == "__main__":` block (line {line}), so every worker would '
        "start it again; move the code that starts the run under that guard"
    )
    warnings.warn_explicit(msg, UserWarning, script, line)


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
        _warn_if_main_unguarded(start_method)
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
