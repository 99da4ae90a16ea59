"""CLI start-up cost: `amago list traj-encoders` vs `python -c "import torch"`, medians over fresh processes.

Usage: uv run python bench/cli_startup.py [--repeats 7]
Target (issue 2): listing under 0.5 s here, and under a quarter of the torch import.

Children run with bytecode caching on (PYTHONDONTWRITEBYTECODE removed), and one warm-up run writes the
.pyc files: that is the state a user's install is in after its first command. With caching off, every
run recompiles pydantic, typer and rich from source, which alone costs about 0.3 s here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def median_seconds(command: list[str], repeats: int) -> float:
    subprocess.run(command, capture_output=True, check=True, env=CHILD_ENV)  # warm caches, write .pyc files
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env=CHILD_ENV)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    amago = shutil.which("amago", path=str(Path(sys.executable).parent)) or shutil.which("amago")
    if amago is None:
        sys.exit("the `amago` console script is not installed; run `uv sync --all-packages` first")
    listing = median_seconds([amago, "list", "traj-encoders"], args.repeats)
    listing_json = median_seconds([amago, "list", "--json"], args.repeats)
    bare_python = median_seconds([sys.executable, "-c", "pass"], args.repeats)
    torch_import = median_seconds([sys.executable, "-c", "import torch"], args.repeats)
    print(f"python -c pass                 median {bare_python * 1000:7.0f} ms")
    print(f"amago list traj-encoders       median {listing * 1000:7.0f} ms")
    print(f"amago list --json (all kinds)  median {listing_json * 1000:7.0f} ms")
    print(f'python -c "import torch"       median {torch_import * 1000:7.0f} ms')
    print(f"listing / torch import         {listing / torch_import:.2f}  (target < 0.25)")
    print(f"listing under 0.5 s            {'yes' if listing < 0.5 else 'NO'}")


if __name__ == "__main__":
    main()
