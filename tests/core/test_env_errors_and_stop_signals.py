"""Small items of issue 25: a sync env that raises is one line naming the env and the call; a second SIGTERM
exits 143 with a line that says SIGTERM (a second Ctrl-C still exits 130)."""

from __future__ import annotations

import os
import signal
from functools import partial
from typing import Any

import gymnasium
import numpy as np
import pytest
import typer

from amago_core.cli.errors import error_lines, one_line_errors
from amago_core.experiment.signals import StopSignalAbort, stop_on_signals
from amago_core.rollout import AMAGOEnv, EnvContractError
from amago_core.rollout.creator import EnvCreator
from amago_core.rollout.pools import EnvCallError, SyncPool


class Fragile(gymnasium.Env[Any, Any]):
    observation_space = gymnasium.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, fail_in: str | None = None):
        self.fail_in = fail_in

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        if self.fail_in == "reset":
            raise ZeroDivisionError("division by zero\nsecond line of detail")
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action: Any) -> Any:
        if self.fail_in == "step":
            raise KeyError("lever")
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


def _env(fail_in: str | None, name: str) -> AMAGOEnv:
    return AMAGOEnv(Fragile(fail_in), env_name=name)


def _pool(failing_row: int, fail_in: str, *, stack: bool) -> SyncPool:
    makers = [partial(_env, fail_in if row == failing_row else None, f"Lever{row}") for row in range(3)]
    return SyncPool([EnvCreator(make_env=m) for m in makers], stack=stack)


@pytest.mark.parametrize("stack", [True, False])
def test_an_env_that_raises_in_step_is_one_line_naming_it(stack: bool) -> None:
    pool = _pool(2, "step", stack=stack)
    assert pool.stacked is stack
    pool.reset(seed=0)
    with pytest.raises(EnvCallError) as excinfo:
        pool.step(np.zeros(3, dtype=np.int64))
    (line,) = error_lines(excinfo.value)
    assert line.startswith("env 2 ('Lever2') of the sync pool raised in step: KeyError: 'lever'.")
    assert "--debug" in line
    assert isinstance(excinfo.value.__cause__, KeyError)  # --debug shows the env's own traceback


@pytest.mark.parametrize("stack", [True, False])
def test_an_env_that_raises_in_reset_is_one_line_naming_it(stack: bool) -> None:
    pool = _pool(1, "reset", stack=stack)
    with pytest.raises(EnvCallError) as excinfo:
        pool.reset(seed=0)
    (line,) = error_lines(excinfo.value)
    assert "env 1 ('Lever1') of the sync pool raised in reset: ZeroDivisionError: division by zero." in line
    assert "second line" not in line


def test_an_env_that_cannot_be_made_is_one_line() -> None:
    def broken() -> AMAGOEnv:
        raise FileNotFoundError("no such map: maps/level9.txt")

    with pytest.raises(EnvCallError, match=r"^env 1 of the sync pool raised in make_env: FileNotFoundError"):
        SyncPool([EnvCreator(make_env=partial(_env, None, "Ok")), EnvCreator(make_env=broken)])


def test_amagos_own_env_errors_pass_through_unchanged() -> None:
    class WrongShape(Fragile):
        def step(self, action: Any) -> Any:
            return np.zeros(5, dtype=np.float32), 0.0, False, False, {}

    pool = SyncPool([EnvCreator(make_env=lambda: AMAGOEnv(WrongShape(), env_name="Shape"))])
    pool.reset(seed=0)
    with pytest.raises(EnvContractError):
        pool.step(np.zeros(1, dtype=np.int64))


# --- a second stop signal ------------------------------------------------------------------------------------


def _second_signal(first: signal.Signals, second: signal.Signals) -> int:
    """Sends ``first`` then ``second`` to this process inside a run's signal handling; the CLI's exit status."""
    stops: list[str] = []
    try:
        with one_line_errors(False), stop_on_signals(stops.append):
            os.kill(os.getpid(), first)
            assert stops == [first.name]
            os.kill(os.getpid(), second)
            for _ in range(1000):  # the handler runs between bytecodes of the main thread
                pass
    except typer.Exit as exit_:
        return exit_.exit_code
    pytest.fail("the second signal did not abort")


def test_a_second_sigterm_exits_143_and_says_sigterm(capsys) -> None:
    before = signal.getsignal(signal.SIGTERM)
    code = _second_signal(signal.SIGTERM, signal.SIGTERM)
    err = capsys.readouterr().err
    assert code == 143
    assert err.splitlines()[-1] == "amago: error: aborted (SIGTERM after SIGTERM)."
    assert "Ctrl-C" not in err.splitlines()[-1]
    assert signal.getsignal(signal.SIGTERM) == before  # the previous handler came back


def test_a_second_ctrl_c_still_exits_130(capsys) -> None:
    assert _second_signal(signal.SIGINT, signal.SIGINT) == 130
    assert capsys.readouterr().err.splitlines()[-1] == "amago: error: aborted (Ctrl-C twice)."


def test_sigterm_after_ctrl_c_exits_as_sigterm(capsys) -> None:
    assert _second_signal(signal.SIGINT, signal.SIGTERM) == 143
    assert "aborted (SIGTERM after SIGINT)" in capsys.readouterr().err


def test_the_abort_names_its_exit_status() -> None:
    assert StopSignalAbort("SIGTERM", "SIGINT").exit_code == 143
    assert isinstance(StopSignalAbort("SIGINT", "SIGINT"), KeyboardInterrupt)
