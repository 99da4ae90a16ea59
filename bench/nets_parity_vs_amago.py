"""Do amago-nets' rational activation, sliding-sink attention and CNN backbones compute what AMAGO v3.3.0's do?

For every case of ``tests/parity/nets_parity_cases.py`` (AMAGO's ``SlowAdaptiveRational`` on its initial and on
perturbed coefficients: values and gradients; its ``ClippedSlidingSinkAttention`` with and without a sink and a
clip: the training forward and a KV-cache rollout with staggered restarts; its ``NatureishCNN``, ``DrQCNN`` and
``GridworldCNN``: init, features and gradients) it writes the inputs as files, runs
the real AMAGO on them in its own venv (``bench/nets_amago_ref.py``, a separate program) and prints the largest
absolute and relative difference of each quantity. Exits 1 when one is above float32 tolerance.

    uv run python bench/nets_parity_vs_amago.py [--record] [--amago-venv .venv-amago-ref]

``--record`` writes the inputs and AMAGO's outputs to ``tests/parity/fixtures/nets_amago-3.3.0.npz``, which
``tests/nets/test_nets_against_amago.py`` checks amago against without AMAGO installed.
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
import nets_parity_cases as cases  # noqa: E402
from vs_amago import ensure_baseline  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--record", action="store_true", help="write the fixture under tests/parity/fixtures/"
    )
    parser.add_argument("--amago-venv", type=Path, default=ROOT / ".venv-amago-ref")
    args = parser.parse_args()

    python = ensure_baseline(args.amago_venv)
    with tempfile.TemporaryDirectory(prefix="amago-nets-parity-") as tmp:
        work = Path(tmp)
        (work / "inputs").mkdir()
        inputs = {case["name"]: cases.make_inputs(case) for case in cases.CASES}
        for name, case_inputs in inputs.items():
            np.savez(work / "inputs" / f"{name}.npz", **case_inputs)
        (work / "cases.json").write_text(json.dumps(cases.CASES, indent=1))
        env = {**os.environ, "TORCH_COMPILE_DISABLE": "1", "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
        subprocess.run(
            [str(python), str(ROOT / "bench" / "nets_amago_ref.py"), str(work)], env=env, check=True
        )
        references = {}
        for name in inputs:
            with np.load(work / "amago_ref" / f"{name}.npz") as data:
                references[name] = {key: data[key] for key in data.files}
    rows = [
        row
        for case in cases.CASES
        for row in cases.compare(case, inputs[case["name"]], references[case["name"]])
    ]
    width = max(len(row.case) for row in rows)
    qwidth = max(16, *(len(row.quantity) for row in rows))
    print(f"{'case':<{width}}  {'quantity':<{qwidth}}  {'max abs':>10}  {'max rel':>10}  ok")
    for row in rows:
        print(
            f"{row.case:<{width}}  {row.quantity:<{qwidth}}  {row.max_abs:>10.3g}  {row.max_rel:>10.3g}  "
            f"{'yes' if row.ok else 'NO'}{'  ' + row.note if row.note else ''}"
        )
    if args.record:
        cases.write_fixture(cases.FIXTURE, inputs, references)
        print(f"recorded {cases.FIXTURE.relative_to(ROOT)} ({cases.FIXTURE.stat().st_size / 1024:.0f} KiB)")
    failed = [row for row in rows if not row.ok]
    print(
        f"{len(rows) - len(failed)} of {len(rows)} quantities within |d| <= {cases.ATOL} + {cases.RTOL}·|AMAGO|"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
