"""Shared checks of the external env-suite tests, as fixtures (the tests import with ``--import-mode=importlib``).

- ``dry_run`` / ``run_tiny``: ``amago run`` through typer's runner: the resolved config of ``--dry-run``, or one
  tiny job in the test's ``tmp_path`` whose printed summary comes back parsed.
- ``tiny_gru``: the CLI arguments of the one-epoch GRU job most suites' CLI tests run.
- ``assert_imports_clean``: a module imports in a fresh interpreter without loading the heavy libraries.
- ``assert_missing_extra`` / ``assert_listed_missing``: a suite whose library is absent is listed as missing with
  its install hint, and building it fails with a ``MissingRequirementError`` that names the fix.
- ``build`` / ``play``: a suite from an env id (plus options), and random play through a ``SequenceEnv``.

Nothing here imports torch or a suite's library at collection time (``procgen_real/`` runs in its own
environment and shares this file).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

TINY_GRU_SETTINGS = (
    "traj_encoder.d_hidden=16",
    "traj_encoder.d_output=16",
    "tstep_encoder.d_output=16",
    "schedule.epochs=1",
    "schedule.train_timesteps_per_epoch=8",
    "schedule.train_batches_per_epoch=1",
    "schedule.val_interval=null",
    "schedule.val_timesteps_per_epoch=8",
    "run.max_seq_len=8",
    "replay.traj_save_len=16",
    "rollout.parallel_actors=2",
    "optim.batch_size=2",
)
"""One epoch of 8 train steps on 2 actors, 16-wide GRU and timestep encoders: 16 frames in all."""


def as_overrides(settings: Iterable[str]) -> list[str]:
    """``["-o", setting, ...]`` for ``amago run``."""
    return [arg for setting in settings for arg in ("-o", setting)]


def invoke_amago(*args: str) -> Any:
    """``amago *args`` through typer's ``CliRunner``; returns its result."""
    from typer.testing import CliRunner

    from amago_core.cli.app import app

    return CliRunner().invoke(app, list(args))


@pytest.fixture
def dry_run() -> Callable[..., dict[str, Any]]:
    """``dry_run(env_id, *args)``: the config ``amago run --env env_id *args --dry-run`` prints, parsed."""

    def run(env_id: str, *args: str) -> dict[str, Any]:
        result = invoke_amago("run", "--env", env_id, *args, "--dry-run")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return run


@pytest.fixture
def run_tiny(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """``run_tiny(env_id, *args, overrides=(), name=None)``: one quiet ``amago run`` under ``tmp_path``.

    ``args`` go to the command as they are, each of ``overrides`` after a ``-o``; then ``--quiet``, the run
    folder ``run.ckpt_base_dir=tmp_path`` and ``--name name`` when given. Asserts exit status 0 and returns
    the printed summary.
    """

    def run(
        env_id: str, *args: str, overrides: Sequence[str] = (), name: str | None = None
    ) -> dict[str, Any]:
        # logging.verbose=false: no progress bars; the JSON summary (which --quiet drops) is what this reads.
        command = ["run", "--env", env_id, *args, *as_overrides(overrides), "-o", "logging.verbose=false"]
        command += ["-o", f"run.ckpt_base_dir={tmp_path}", *(["--name", name] if name else [])]
        result = invoke_amago(*command)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return run


@pytest.fixture
def tiny_gru() -> Callable[[str], list[str]]:
    """``tiny_gru(tstep_width="d_hidden")``: ``amago run`` arguments of a one-epoch GRU job (16 frames).

    ``tstep_width`` names the timestep encoder's width setting: ``d_hidden`` (ff), ``img_features`` (cnn).
    """

    def args(tstep_width: str = "d_hidden") -> list[str]:
        settings = (f"tstep_encoder.{tstep_width}=16", *TINY_GRU_SETTINGS)
        return ["--traj-encoder", "gru", *as_overrides(settings)]

    return args


@pytest.fixture
def assert_imports_clean() -> Callable[[str, Sequence[str]], None]:
    """``assert_imports_clean(module, heavy)``: importing ``module`` in a fresh interpreter loads none of ``heavy``."""

    def check(module: str, heavy: Sequence[str]) -> None:
        code = f"import sys, {module}\nprint([m for m in {tuple(heavy)!r} if m in sys.modules])"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert result.stdout.strip() == "[]", f"importing {module} loaded {result.stdout.strip()}"

    return check


def _check_listed_missing(suite: str, hint: str, build: Any, match: str) -> None:
    from amago_core.plugins.errors import MissingRequirementError
    from amago_core.plugins.registry import registries

    info = next(i for i in registries().env_suites.describe() if i.name == suite)
    assert info.status == "missing"
    assert str(info.status) == "missing"
    assert hint in info.detail
    if build is not None:
        with pytest.raises(MissingRequirementError, match=match):
            registries().env_suites.build(build)


@pytest.fixture
def assert_listed_missing() -> Callable[..., None]:
    """``assert_listed_missing(suite, hint, build=None, match=...)``: the registry lists ``suite`` as missing
    with ``hint`` in its detail, and (where ``build`` is given) building it raises MissingRequirementError
    matching ``match`` (default: the hint, escaped)."""

    def check(suite: str, hint: str, build: Any = None, match: str | None = None) -> None:
        _check_listed_missing(suite, hint, build, re.escape(hint) if match is None else match)

    return check


@pytest.fixture
def assert_missing_extra(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """``assert_missing_extra(spec, module, extra, build=None)``: with ``module`` hidden from ``find_spec``,
    ``spec`` reports exactly it missing, its suite is listed as missing with ``pip install "amago-envs[extra]"``,
    and (where ``build`` is given) building ``build`` raises MissingRequirementError naming the extra."""

    def check(spec: Any, module: str, extra: str, build: Any = None) -> None:
        real = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a)
        )
        assert spec.missing_requirements() == [module]
        hint = f'pip install "amago-envs[{extra}]"'
        _check_listed_missing(spec.name, hint, build, re.escape(f"amago-envs[{extra}]"))

    return check


@pytest.fixture
def build() -> Callable[..., Any]:
    """``build(env_id, **options)``: the suite the registry resolves ``env_id`` to, with extra options."""
    from amago_core.plugins.registry import registries

    def make(env_id: str, **options: Any) -> Any:
        regs = registries()
        suite_name, task = regs.resolve_env_id(env_id)
        return regs.env_suites.build({"kind": suite_name, "task": task, **options})

    return make


@pytest.fixture
def play() -> Callable[..., tuple[Any, Any]]:
    """``play(env, steps, seed=0)``: random actions through a SequenceEnv; returns the last timestep and it."""
    import numpy as np

    from amago_core.rollout.sequence import SequenceEnv

    def run(env: Any, steps: int, seed: int = 0) -> tuple[Any, Any]:
        seq = SequenceEnv(env)
        timestep = seq.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            if env.is_discrete:
                action = rng.integers(env.action_space.n, size=(1,))
            else:
                action = rng.uniform(-1, 1, size=(1, *env.action_space.shape)).astype(np.float32)
            timestep = seq.step(action).timestep
        return timestep, seq

    return run
