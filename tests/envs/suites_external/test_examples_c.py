"""Examples 02, 06, 09 and 11 with ``--smoke``, each in its own process (as CI and users run them).

02 (gymnax) and 11 (xland) must train for one tiny epoch where their extras are installed. 06 (alchemy,
git-only) and 09 (procgen, own environment) must, where their library is missing, exit with status 2 and
one line on stderr that names the install command; where it is installed they must train like the others.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MISSING_EXIT_CODE = 2


def run_smoke(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--smoke"], capture_output=True, text=True, timeout=300
    )


def metrics_of(result: subprocess.CompletedProcess[str]) -> dict[str, float]:
    assert result.returncode == 0, result.stderr[-3000:]
    start = result.stdout.rindex("{\n")  # the script prints the test metrics last, as indented JSON
    return json.loads(result.stdout[start:])


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.slow
@pytest.mark.skipif(
    not installed("gymnax"), reason='needs the gymnax extra: pip install "amago-envs[gymnax]"'
)
def test_02_gymnax_smoke_trains_and_evaluates() -> None:
    metrics = metrics_of(run_smoke("02_gymnax.py"))
    assert "Average Total Return in gymnax-MemoryChain-bsuite" in metrics


@pytest.mark.slow
@pytest.mark.skipif(
    not installed("xminigrid"), reason='needs the xland extra: pip install "amago-envs[xland]"'
)
def test_11_xland_smoke_trains_and_evaluates() -> None:
    metrics = metrics_of(run_smoke("11_xland.py"))
    assert "Average Total Return in XLand-local-trivial-R1-9x9" in metrics


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "module", "hint"),
    [
        ("06_alchemy.py", "dm_alchemy", "pip install git+https://github.com/deepmind/dm_alchemy"),
        ("09_procgen.py", "procgen", 'pip install "amago-envs[procgen]"'),
    ],
)
def test_examples_of_uninstallable_suites_fail_with_one_clear_line(
    script: str, module: str, hint: str
) -> None:
    result = run_smoke(script)
    if installed(module):
        metrics_of(result)
        return
    assert result.returncode == MISSING_EXIT_CODE, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert hint in lines[0]
    assert module in lines[0]
