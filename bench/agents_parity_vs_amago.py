"""amago's AdamWRel, two-hot ``critic_init_value`` and discrete-like-continuous updates against AMAGO v3.3.0.

The cases are ``tests/parity/agents_cases.py``; AMAGO runs them in its own venv (``bench/agents_amago_ref.py``,
a separate program), and the table shows the largest difference of each quantity: AdamWRel's parameters and
step counts after every update (also across a save/load of its state), the critics' initial output bias, bin
probabilities and values (and AMAGO's refusal and edge warning), and the loss, n-step targets and every gradient
of one learning update with discrete actions treated like continuous ones. Exits 1 when one is off.

    uv run python bench/agents_parity_vs_amago.py [--record] [--amago-venv .venv-amago-ref]

``--record`` writes ``tests/parity/fixtures/agents_amago-3.3.0.npz`` (inputs, AMAGO's weights and outputs), which
``tests/agents/test_against_amago_components.py`` and ``tests/experiment/test_adamw_rel.py`` read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "parity"))
sys.path.insert(0, str(ROOT / "bench"))
import agents_cases  # noqa: E402
from parity_vs_amago import print_table  # noqa: E402
from vs_amago import ensure_baseline  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--record", action="store_true", help="write the fixture under tests/parity/fixtures/"
    )
    parser.add_argument("--amago-venv", type=Path, default=ROOT / ".venv-amago-ref")
    parser.add_argument("--keep", type=Path, default=None, help="keep the exchanged files in this folder")
    args = parser.parse_args()

    python = ensure_baseline(args.amago_venv)
    with tempfile.TemporaryDirectory(prefix="amago-agents-parity-") as tmp:
        work = args.keep or Path(tmp)
        (work / "inputs").mkdir(parents=True, exist_ok=True)
        inputs = {}
        for case in agents_cases.CASES:
            inputs[case["name"]] = agents_cases.make_inputs(case)
            np.savez(work / "inputs" / f"{case['name']}.npz", **inputs[case["name"]])
        (work / "cases.json").write_text(json.dumps(agents_cases.CASES, indent=1))
        env = {**os.environ, "TORCH_COMPILE_DISABLE": "1", "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
        program = ROOT / "bench" / "agents_amago_ref.py"
        subprocess.run([str(python), str(program), str(work)], env=env, check=True)
        references = {}
        for case in agents_cases.CASES:
            with np.load(work / "amago_ref" / f"{case['name']}.npz") as data:
                references[case["name"]] = {k: data[k] for k in data.files}
        rows = []
        for case in agents_cases.CASES:
            rows += agents_cases.compare(case, inputs[case["name"]], references[case["name"]])
        print_table(rows)
        if args.record:
            agents_cases.write_fixture(agents_cases.FIXTURE, inputs, references)
            size = agents_cases.FIXTURE.stat().st_size / 1024
            print(f"recorded {agents_cases.FIXTURE.relative_to(ROOT)} ({size:.0f} KiB)")
    failed = [r for r in rows if not r.ok]
    print(f"{len(rows) - len(failed)} of {len(rows)} quantities within tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
