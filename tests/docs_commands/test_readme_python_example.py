"""The README's Python example is the main job, so it learns what the main job learns, in its time.

Its comment promises test return 1.0 in ~2 minutes on a 2-core CPU: that is the main job's result (measured when
the README was written; the main job's learning is tested in tests/experiment). An example that drifts from the
main job (a component's default size, the T-Maze's step penalty) learns nothing in that time, as an earlier
version did (test return 0.0 after 2:42), so its settings are held to the main job's here, cheaply: the example
runs up to ``experiment.start()`` and its resolved config and env are compared with ``amago run``'s.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
IGNORED = {
    ("env",),  # the example builds its env with a maker: compared as an env below
    ("run", "name"),
    ("run", "ckpt_base_dir"),
    ("logging", "log_interval"),  # how often it logs, not what it learns
    ("schedule", "ckpt_interval"),
}


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    [block] = [b for b in blocks if "amago.Experiment(" in b and "experiment.learn()" in b]
    return block


def _flat(tree: dict, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    flat: dict[tuple[str, ...], object] = {}
    for key, value in tree.items():
        path = (*prefix, key)
        if any(path[: len(ignored)] == ignored for ignored in IGNORED):
            continue
        flat.update(_flat(value, path) if isinstance(value, dict) else {path: value})
    return flat


@pytest.fixture
def example_experiment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _example().split("experiment.start()")[0]
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)  # the README's own example
    return namespace


def test_the_readme_python_example_is_the_main_job(example_experiment):
    from amago.default_job import DEFAULT_JOB
    from amago_core.config.resolve import plan_run

    main = plan_run(default_job=DEFAULT_JOB, environ={}).config
    example = example_experiment["experiment"].config
    differences = {
        path: (value, _flat(main.model_dump(mode="json")).get(path))
        for path, value in _flat(example.model_dump(mode="json")).items()
        if _flat(main.model_dump(mode="json")).get(path) != value
    }
    assert not differences, f"the README's example differs from the main job: {differences}"


def test_the_readme_python_example_plays_the_main_jobs_tmaze(example_experiment):
    from amago.default_job import DEFAULT_JOB
    from amago_core.config.resolve import plan_run
    from amago_envs.suites.tmaze import TMazeSuite

    suite = TMazeSuite(plan_run(default_job=DEFAULT_JOB, environ={}).config.component("env"))
    theirs = example_experiment["make_env"]().env
    ours = suite.make_gym_env()
    for name in ("corridor_length", "active", "goal_reward", "penalty"):
        assert getattr(theirs, name) == getattr(ours, name), name
