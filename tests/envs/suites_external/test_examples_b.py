"""Examples 00, 04, 05, 07, 12, 13 and 14 run end to end with ``--smoke``.

The scripts run as ``__main__`` in two subprocesses (the machine has 2 cores), a few scripts each: every fresh
interpreter pays for importing torch (seconds, more where bytecode caching is off), so one per script would
triple the time without testing anything more.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"
EXAMPLES = {
    "07_metaworld.py": ("metaworld",),
    "00_meta_frozen_lake.py": (),
    "04_tmaze.py": (),
    "13_mazerunner_relabel.py": (),
    "14_d4rl.py": ("minari",),
    "12_half_cheetah_vel.py": ("mujoco",),
    "05_dark_key_door.py": (),
}
"""Script -> the libraries it needs (skipped where one is missing); ordered to balance the two batches."""

DRIVER = """
import os, runpy, sys, traceback
for path in sys.argv[1:]:
    sys.argv = [path, "--smoke"]
    sys.path.insert(0, os.path.dirname(path))  # as `python path` does: the script imports _launch
    print(f"@@start {path}", flush=True)
    try:
        runpy.run_path(path, run_name="__main__")
        print(f"@@ok {path}", flush=True)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        print(f"@@fail {path}", flush=True)
"""


def _runnable() -> list[str]:
    return [name for name, needs in EXAMPLES.items() if all(importlib.util.find_spec(m) for m in needs)]


@pytest.fixture(scope="module")
def smoke_outputs(tmp_path_factory) -> dict[str, str]:
    """Each runnable script's stdout, ending in ``@@ok`` or ``@@fail`` (or missing if its batch died)."""
    cwd = tmp_path_factory.mktemp("examples")  # the scripts use temp folders; nothing lands in the repo
    env = {**os.environ, "MUJOCO_GL": "disable", "PYTHONWARNINGS": "ignore"}
    names = _runnable()
    batches = [names[0::2], names[1::2]]

    def run(batch: list[str]) -> str:
        paths = [str(EXAMPLES_DIR / name) for name in batch]
        result = subprocess.run(
            [sys.executable, "-c", DRIVER, *paths],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=300,
        )
        return result.stdout + result.stderr[-3000:]

    outputs: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for text in pool.map(run, batches):
            for chunk in text.split("@@start ")[1:]:
                path, _, rest = chunk.partition("\n")
                outputs[Path(path).name] = rest
    return outputs


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_smoke(name: str, smoke_outputs: dict[str, str]) -> None:
    if name not in _runnable():
        pytest.skip(f"{name} needs {', '.join(EXAMPLES[name])}")
    output = smoke_outputs.get(name, "(never started: its batch died)")
    assert f"@@ok {EXAMPLES_DIR / name}" in output, output[-4000:]
    assert '"Average Total Return (Across All Env Names)"' in output


def _tmaze_example_config(monkeypatch, horizon: int):
    """The config examples/04_tmaze.py hands to ``Experiment`` for ``--horizon`` (nothing is built or run)."""
    monkeypatch.syspath_prepend(str(EXAMPLES_DIR))
    import _launch

    built = []

    def capture(plan, **_):
        built.append(plan.config)  # the examples build from the plan (train(plan), as `amago run`)
        raise SystemExit(0)

    monkeypatch.setattr(_launch, "Experiment", capture)
    spec = importlib.util.spec_from_file_location("tmaze_example", EXAMPLES_DIR / "04_tmaze.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit):
        module.main(["--horizon", str(horizon)])
    (config,) = built
    return config


def test_the_tmaze_example_builds_amagos_recipe_for_its_horizon(monkeypatch):
    # The example's job sits over the suite's preset as `amago run` puts it: the preset's T-Maze exploration
    # follows the corridor the example asks for (0.5 / H over episode steps [1, H - 3)).
    config = _tmaze_example_config(monkeypatch, 100)
    assert config.exploration.kind == "tmaze"
    assert config.exploration.corridor_steps == (1, 97)
    assert config.run.max_seq_len == config.replay.traj_save_len == 101
    assert config.schedule.train_timesteps_per_epoch == 1000  # AMAGO's example: its CLI default per actor


def test_the_examples_plan_their_run_like_amago_run_does(monkeypatch):
    # examples/_launch.py had a resolver of its own without the AMAGO_* layer; it now plans the run (plan_run).
    monkeypatch.setenv("AMAGO_OPTIM__LEARNING_RATE", "0.000123")
    config = _tmaze_example_config(monkeypatch, 20)
    assert config.optim.learning_rate == 0.000123
    assert config.exploration.corridor_steps == (1, 17)  # the preset followed the example's corridor
