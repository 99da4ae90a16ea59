"""An AMAGO run's ``config.txt`` round-trips through the one gin mapping, checked against what AMAGO's classes got.

``fixtures/amago_runs/tmaze_rnn`` is a run of AMAGO's own ``examples/04_tmaze.py`` (v3.3.0, in the reference
interpreter, as a separate program; its command line is ``command.json``, with ``extra.gin`` passed through
AMAGO's ``--configs``): ``config.txt`` is the operative config AMAGO wrote, and ``received.json`` the arguments
each configurable's ``__init__`` received in AMAGO's process (``bench/record_amago_run.py``). Expected values come
from that recording only, never from amago's output.

The three readers of the mapping are checked on it: ``amago migrate-gin`` (its ``-o`` lines, resolved by
``amago config show``), ``import-amago`` (:func:`amago.from_amago.gin_config.read_config`) and ``use_config``
(in a fresh interpreter, a script that does not define ``TMazeExploration`` itself). T-Maze's exploration,
``TMazeExploration(EpsilonGreedy)`` of example 04, is amago's ``tmaze``; a binding of its base's parameter counts
as gin applied it, which the recording shows: ``EpsilonGreedy.eps_start = 0.5`` never reached the run.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amago.from_amago.gin import (
    CONVERSIONS,
    GinStatement,
    lookup,
    migrate,
    parse_gin,
    plain,
    read_gin,
)
from amago.from_amago.gin_config import read_config
from amago_core.cli.app import app

HERE = Path(__file__).resolve().parent
RUN = HERE / "fixtures" / "amago_runs" / "tmaze_rnn"
CONFIG_TXT = RUN / "config.txt"
EXTRA_GIN = RUN / "extra.gin"
RECEIVED: dict[str, list[dict[str, Any]]] = json.loads((RUN / "received.json").read_text(encoding="utf-8"))[
    "configurables"
]
COMMAND = json.loads((RUN / "command.json").read_text(encoding="utf-8"))
runner = CliRunner()


def _flag(name: str) -> str:
    args = COMMAND["args"]
    return str(args[args.index(name) + 1])


def _received(configurable: str, parameter: str) -> Any:
    """The one value AMAGO's ``configurable`` received for ``parameter`` (every call got the same)."""
    values = {
        json.dumps(call[parameter], sort_keys=True) for call in RECEIVED[configurable] if parameter in call
    }
    assert len(values) == 1, f"AMAGO's {configurable} received {parameter} = {sorted(values)}"
    return json.loads(values.pop())


def _at(tree: Any, key: str) -> Any:
    for part in key.split("."):
        assert isinstance(tree, dict), f"the resolved config has no {key}"
        assert part in tree, f"the resolved config has no {key}"
        tree = tree[part]
    return tree


def _bindings(path: Path) -> list[GinStatement]:
    return [statement for statement in read_gin(path) if statement.parameter is not None]


def _overrides(stdout: str) -> list[str]:
    words = shlex.split(stdout)
    assert words[::2] == ["-o"] * (len(words) // 2), stdout
    return words[1::2]


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("amago migrate-gin:")]


def _resolved(overrides: list[str]) -> dict[str, Any]:
    """``amago config show`` for the env the run used (its ``--horizon``), with ``overrides``."""
    args = ["config", "show", "--env", "tmaze-passive", "-o", f"env.corridor_length={_flag('--horizon')}"]
    for override in overrides:
        args += ["-o", override]
    shown = runner.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    config: dict[str, Any] = json.loads(shown.stdout)
    return config


def test_the_fixture_is_a_run_of_amagos_tmaze_example():
    assert (COMMAND["amago_version"], COMMAND["script"]) == ("3.3.0", "04_tmaze.py")
    assert _received("TMazeExploration", "horizon") == int(_flag("--horizon"))
    assert "TMazeExploration" in {s.target for s in _bindings(CONFIG_TXT)}
    assert sum(path.stat().st_size for path in RUN.iterdir()) < 20_000


def test_a_runs_config_txt_round_trips_into_the_settings_amagos_classes_received(fresh_registries):
    lines = runner.invoke(app, ["migrate-gin", str(CONFIG_TXT)])
    assert lines.exit_code == 0, lines.output
    config = _resolved(_overrides(lines.stdout))
    assert config["exploration"]["kind"] == "tmaze"
    notes = _notes(lines.stderr)
    migration = migrate(read_gin(CONFIG_TXT))
    as_amago_does = set(migration.as_amago_does)
    noted = {note.binding for note in migration.notes}
    compared = 0
    for statement in _bindings(CONFIG_TXT):
        configurable = lookup(statement.target)
        assert configurable is not None, statement.binding
        row = configurable.parameter(statement.parameter or "")
        assert row is not None, statement.binding
        received = _received(configurable.name, row.parameter)
        if statement.where in as_amago_does:  # no setting: amago always does what AMAGO's value does
            assert plain(row.fixed[0]) == plain(received), statement.binding
            continue
        if statement.binding in noted:
            assert sum(f": {statement.binding}: " in line for line in notes) == 1, statement.binding
            continue
        assert row.kind == "setting", statement.binding
        assert row.key is not None
        expected = CONVERSIONS[row.convert].apply(received) if row.convert else received
        actual = _at(config, row.key)
        if row.key == "rollout.async_env_mp_context" and expected is None:
            assert actual in (
                None,
                "forkserver",
            )  # AMAGO's None (the platform's default) is amago's forkserver
            continue
        assert plain(actual) == plain(expected), (
            f"{statement.binding} -> {row.key}: {actual!r} vs AMAGO {expected!r}"
        )
        compared += 1
    assert compared >= 60
    assert len(notes) == len(noted)


def test_base_class_bindings_count_as_gin_applied_them_in_amagos_run(fresh_registries):
    # extra.gin binds EpsilonGreedy's eps_start and eps_end, which TMazeExploration passes to it itself
    lines = runner.invoke(app, ["migrate-gin", str(EXTRA_GIN)])
    assert lines.exit_code == 0, lines.output
    notes = _notes(lines.stderr)
    for statement in _bindings(EXTRA_GIN):
        if statement.target != "EpsilonGreedy":
            continue
        got = _received("EpsilonGreedy", statement.parameter or "")
        assert got != statement.value, f"AMAGO's EpsilonGreedy received {statement.binding} after all"
        [line] = [line for line in notes if f": {statement.binding}: " in line]
        assert "no effect in AMAGO either" in line
        assert f"TMazeExploration passes {statement.parameter} to EpsilonGreedy itself" in line
    assert len(notes) == 2
    exploration = _resolved(_overrides(lines.stdout))["exploration"]
    for parameter in ("eps_start", "eps_end", "steps_anneal"):
        assert exploration[parameter] == _received("TMazeExploration", parameter), parameter


def test_a_subclass_wins_over_its_base_and_its_bases_bindings_follow_gin():
    def settle(text: str) -> tuple[dict[str, Any], dict[str, str]]:
        migration = migrate(parse_gin(text, "f.gin"))
        return migration.settings, {n.binding: f"{n.reason}: {n.message}" for n in migration.notes}

    # left to the base (randomize_eps) applies to the subclass; passed by the subclass (eps_start) does not
    settings, notes = settle(
        "TMazeExploration.horizon = 30\nEpsilonGreedy.randomize_eps = False\nEpsilonGreedy.eps_start = 0.5\n"
    )
    assert settings == {
        "exploration.kind": "tmaze",
        "exploration.corridor_length": 30,
        "exploration.randomize_eps": False,
    }
    assert list(notes) == ["EpsilonGreedy.eps_start"]
    assert notes["EpsilonGreedy.eps_start"].startswith("passed_by_subclass: no effect in AMAGO either: ")
    assert "bind TMazeExploration.eps_start instead" in notes["EpsilonGreedy.eps_start"]
    # two levels: EpsilonGreedy passes every argument of BilevelEpsilonGreedy itself
    settings, notes = settle("TMazeExploration.eps_end = 0.02\nBilevelEpsilonGreedy.randomize_eps = False\n")
    assert settings == {"exploration.kind": "tmaze", "exploration.eps_end": 0.02}
    assert (
        "EpsilonGreedy passes randomize_eps to BilevelEpsilonGreedy itself"
        in notes["BilevelEpsilonGreedy.randomize_eps"]
    )
    settings, notes = settle("EpsilonGreedy.eps_end = 0.1\nBilevelEpsilonGreedy.eps_end_end = 0.2\n")
    assert settings == {"exploration.kind": "egreedy", "exploration.eps_end": 0.1}
    assert notes["BilevelEpsilonGreedy.eps_end_end"].startswith("passed_by_subclass: ")
    # the base alone is the base; a pick of the base makes the subclass's options inactive
    settings, notes = settle("EpsilonGreedy.eps_start = 0.5\n")
    assert settings == {"exploration.kind": "egreedy", "exploration.eps_start": 0.5}
    settings, notes = settle(
        "Experiment.exploration_wrapper_type = @EpsilonGreedy\nTMazeExploration.horizon = 9\n"
        "EpsilonGreedy.eps_start = 0.5\n"
    )
    assert settings == {"exploration.kind": "egreedy", "exploration.eps_start": 0.5}
    assert notes["TMazeExploration.horizon"].startswith("inactive: no effect in AMAGO either: f.gin:1 picks")
    settings, _ = settle("Experiment.exploration_wrapper_type = @TMazeExploration\n")
    assert settings == {"exploration.kind": "tmaze"}


def test_tmaze_explorations_windows_are_amagos_defaults_or_one_line():
    migration = migrate(
        parse_gin("TMazeExploration.start_window = 0\nTMazeExploration.end_window = 3\n", "f.gin")
    )
    assert (migration.notes, migration.as_amago_does) == ((), ("f.gin:1", "f.gin:2"))
    migration = migrate(
        parse_gin("TMazeExploration.start_window = 2\nTMazeExploration.end_window = 5\n", "f.gin")
    )
    assert [(n.binding, n.reason) for n in migration.notes] == [
        ("TMazeExploration.start_window", "no_counterpart"),
        ("TMazeExploration.end_window", "no_counterpart"),
    ]
    assert all("\n" not in note.message and "corridor" in note.message for note in migration.notes)


def test_import_amago_reads_the_runs_networks_as_amagos_classes_received():
    imported = read_config(CONFIG_TXT)
    assert imported.notes == []  # TMazeExploration is an exploration of the mapping: nothing to leave out
    traj = imported.traj_encoder
    assert traj["kind"] == "rnn"
    for parameter in ("d_hidden", "d_output", "n_layers", "norm"):
        assert traj[parameter] == _received("GRUTrajEncoder", parameter), parameter
    tstep = imported.tstep_encoder
    for parameter in ("n_layers", "d_hidden", "d_output", "normalize_inputs", "out_norm"):
        assert tstep[parameter] == _received("FFTstepEncoder", parameter), parameter
    for parameter in ("gamma", "tau", "reward_multiplier", "num_critics", "num_critics_td"):
        assert imported.agent[parameter] == _received("Agent", parameter), parameter
    assert imported.agent_for(discrete=True)["multigammas"] == _received("Multigammas", "discrete")


_SCRIPT = """
import json, warnings
import amago
from amago import cli_utils

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cli_utils.use_config({"TMazeExploration.horizon": int(HORIZON)}, [EXTRA])
experiment = amago.Experiment(env="tmaze-passive")
print(json.dumps({
    "exploration": experiment.config.exploration.model_dump(mode="json"),
    "warnings": [str(w.message) for w in caught],
}))
"""


def test_use_config_reads_example_04s_bindings_through_the_same_mapping(tmp_path):
    # a script that uses amago's components, with bindings carried over from AMAGO's T-Maze example: it defines
    # no TMazeExploration of its own, so they are amago's tmaze exploration (a fresh interpreter: no test module
    # has registered a TMazeExploration with gin there)
    script = _SCRIPT.replace("HORIZON", repr(_flag("--horizon"))).replace("EXTRA", repr(str(EXTRA_GIN)))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    exploration = result["exploration"]
    assert exploration["kind"] == "tmaze"
    for parameter, key in (
        ("horizon", "corridor_length"),
        ("eps_start", "eps_start"),
        ("eps_end", "eps_end"),
    ):
        assert exploration[key] == _received("TMazeExploration", parameter), parameter
    assert exploration["steps_anneal"] == _received("TMazeExploration", "steps_anneal")
    lines = [w for w in result["warnings"] if "no effect in AMAGO either" in w]
    assert len(lines) == 2, result["warnings"]
    assert all("TMazeExploration passes" in line and "\n" not in line for line in lines)


@pytest.mark.parametrize("binding", ["EpsilonGreedy.eps_start", "EpsilonGreedy.randomize_eps"])
def test_real_gin_config_applies_a_base_binding_only_where_the_subclass_leaves_the_argument(binding):
    # the gin semantics the mapping encodes, with gin-config itself, on example 04's class shapes
    gin = pytest.importorskip("gin")
    parameter = binding.partition(".")[2]
    module = f"gin_semantics_probe_{parameter}"  # gin registers a name once per process

    @gin.configurable("EpsilonGreedy", module=module)
    class Base:
        def __init__(self, env: Any, eps_start: float = 1.0, randomize_eps: bool = True) -> None:
            self.eps_start, self.randomize_eps = eps_start, randomize_eps

    @gin.configurable("TMazeExploration", module=module)
    class Sub(Base):
        def __init__(self, env: Any, horizon: int = 1, eps_start: float = 1.0) -> None:
            super().__init__(env, eps_start=eps_start)  # as example 04: eps_start passed, randomize_eps left

    value = 0.5 if parameter == "eps_start" else False
    gin.clear_config()
    try:
        gin.bind_parameter(f"{module}.{binding}", value)
        assert getattr(Base(None), parameter) == value  # the base itself gets it
        reached = getattr(Sub(None), parameter) == value
    finally:
        gin.clear_config()
    assert reached == (parameter == "randomize_eps")
    migration = migrate(parse_gin(f"TMazeExploration.horizon = 3\n{binding} = {value!r}\n", "f.gin"))
    assert reached == (f"exploration.{parameter}" in migration.settings), binding
    assert reached == (not migration.notes), binding
