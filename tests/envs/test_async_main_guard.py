"""Scripts that start an async env pool: the workers re-run the main script's top level, so an unguarded start
is warned once (forkserver, spawn) and a guarded one runs quietly."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = """\
import gymnasium as gym

from amago_core.rollout.creator import EnvCreator
from amago_core.rollout.env import AMAGOEnv
from amago_core.rollout.pools.async_pool import AsyncPool

print("top level")


def make():
    return AMAGOEnv(gym.make("CartPole-v1"), env_name="cartpole")


def main():
    pool = AsyncPool([EnvCreator(make), EnvCreator(make)], start_method={method!r})
    pool.reset()
    pool.close()
    print("done")


{start}
"""
GUARDED = 'if __name__ == "__main__":\n    main()'
WARNING = "UserWarning: the async env pool's"


def run_script(tmp_path, start: str, method: str = "forkserver") -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(method=method, start=start), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_an_unguarded_start_is_warned_once_naming_the_line(tmp_path, method):
    result = run_script(tmp_path, "main()  # no guard: every worker would run this again", method)
    assert result.stderr.count(WARNING) == 1, result.stderr
    warning = next(text for text in result.stderr.splitlines() if WARNING in text)
    assert warning.startswith(f"{tmp_path / 'train.py'}:")
    assert f"{method} workers each re-run the top level of train.py" in warning
    assert 'outside an `if __name__ == "__main__":` block' in warning


def test_a_guarded_script_runs_without_a_warning(tmp_path):
    result = run_script(tmp_path, GUARDED)
    assert result.returncode == 0, result.stderr
    assert WARNING not in result.stderr
    # What stays outside the guard still runs in every worker (and in the forkserver): say so in the docs.
    assert result.stdout.count("top level") > 1
    assert result.stdout.endswith("done\n")


def test_fork_workers_re_run_nothing_and_are_not_warned_about(tmp_path):
    result = run_script(tmp_path, "main()", "fork")
    assert result.returncode == 0, result.stderr
    assert WARNING not in result.stderr
    assert result.stdout == "top level\ndone\n"


def test_the_warning_names_the_line_that_starts_the_pool(tmp_path):
    start = textwrap.dedent("""\
        import sys

        if len(sys.argv) > 5:
            pass
        main()
    """)
    result = run_script(tmp_path, start)
    source = SCRIPT.format(method="forkserver", start=start).splitlines()
    line = source.index("main()") + 1
    assert f"train.py:{line}: {WARNING}" in result.stderr
    assert f"(line {line})" in result.stderr
