"""Examples 01, 03, 08 and 10 run end to end with ``--smoke``, as ``__main__`` like a user runs them.

Two subprocesses (the machine has 2 cores) run two scripts each, so each interpreter pays for importing torch
once; every script's printed test metrics are read back from between markers.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"
BATCHES: tuple[tuple[str, ...], ...] = (("08_ale.py", "01_gym.py"), ("10_babyai.py", "03_popgym.py"))
"""Scripts per subprocess, paired to balance the two (ALE and BabyAI are the slowest)."""

NEEDS = {
    "01_gym.py": "gymnasium",
    "03_popgym.py": "popgym",
    "08_ale.py": "ale_py",
    "10_babyai.py": "minigrid",
}
"""The library each script needs; a script whose library is missing is skipped."""

DRIVER = """
import os, runpy, sys
for path in sys.argv[1:]:
    sys.argv = [path, "--smoke"]
    sys.path.insert(0, os.path.dirname(path))  # as `python path` does: the script imports _launch
    print("@@start", path, flush=True)
    runpy.run_path(path, run_name="__main__")
    print("@@end", path, flush=True)
"""


def _run(scripts: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    paths = [str(EXAMPLES_DIR / s) for s in scripts]
    return subprocess.run(
        [sys.executable, "-c", DRIVER, *paths], capture_output=True, text=True, timeout=300, check=False
    )


def _printed_metrics(stdout: str, script: str) -> dict[str, float]:
    """The JSON object ``script`` printed last between its markers."""
    section = stdout.split(f"@@start {EXAMPLES_DIR / script}\n", 1)[1].split(
        f"@@end {EXAMPLES_DIR / script}", 1
    )[0]
    return json.loads(section[section.rindex("\n{") + 1 :] if not section.startswith("{") else section)


@pytest.mark.slow
def test_examples_run_with_smoke() -> None:
    batches = [tuple(s for s in batch if importlib.util.find_spec(NEEDS[s]) is not None) for batch in BATCHES]
    if not any(batches):
        pytest.skip("none of the examples' libraries is installed")
    with ThreadPoolExecutor(len(batches)) as pool:
        results = list(pool.map(_run, batches))
    metrics = {}
    for batch, result in zip(batches, results, strict=True):
        assert result.returncode == 0, f"{batch} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
        for script in batch:
            metrics[script] = _printed_metrics(result.stdout, script)
            assert "Env FPS (per_process)" in metrics[script], f"{script} printed no test metrics"
    if "01_gym.py" in metrics:
        assert "Average Total Return in CartPole-v1" in metrics["01_gym.py"]
    if "03_popgym.py" in metrics:
        assert "Average Total Return in popgym-autoencode-easy" in metrics["03_popgym.py"]
