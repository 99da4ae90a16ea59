"""Does amago compute what AMAGO v3.3.0 computes? One table of the differences, on the same weights and batches.

For every case of ``tests/parity/parity_cases.py`` (learning updates of Agent and MultiTaskAgent for Discrete,
TanhGaussian, GMM and MultiBinary actions over ff, GRU and Transformer trajectory encoders; PopArt over 500
updates; two-hot and HL-Gauss labels; egreedy and bilevel epsilon per step; GRU and Transformer rollouts with
staggered resets) it writes the inputs as files, runs the real AMAGO on them in its own venv
(``bench/parity_amago_ref.py``, a separate program), loads AMAGO's weights into amago's agent
(``amago.from_amago``, the importer users run) and prints the largest absolute and relative difference of each
quantity: n-step targets, critic, actor and total loss, every parameter's gradient, PopArt and input-norm
statistics, labels, epsilon, states, probabilities and values. Randomness is made deterministic on both sides
(``bench/parity_noise.py``). Exits 1 when a difference is above float32 tolerance.

    uv run python bench/parity_vs_amago.py [--record] [--amago-venv .venv-amago-ref]

``--record`` also writes the inputs, AMAGO's weights and AMAGO's outputs to ``tests/parity/fixtures/`` so the
test suite checks amago against AMAGO's numbers without AMAGO installed. Not part of CI (it needs the AMAGO
venv, built here by the baseline's ``setup.sh`` when missing, ~1 min).
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
import parity_cases  # noqa: E402
from vs_amago import ensure_baseline  # noqa: E402


def run_amago_side(python: Path, work: Path) -> None:
    """Runs AMAGO on every case's inputs (writes ``work/amago_ref/<case>.npz``)."""
    env = {**os.environ, "TORCH_COMPILE_DISABLE": "1", "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    subprocess.run([str(python), str(ROOT / "bench" / "parity_amago_ref.py"), str(work)], env=env, check=True)


def print_table(rows: list[parity_cases.Row]) -> None:
    """One line per compared quantity."""
    width = max(len(r.case) for r in rows)
    qwidth = min(max(len(r.quantity) for r in rows), 60)
    print(f"{'case':<{width}}  {'quantity':<{qwidth}}  {'max abs':>10}  {'max rel':>10}  ok")
    for r in rows:
        note = f"  {r.note}" if r.note else ""
        print(
            f"{r.case:<{width}}  {r.quantity[:qwidth]:<{qwidth}}  {r.max_abs:>10.3g}  {r.max_rel:>10.3g}  "
            f"{('documented' if r.documented else 'yes') if r.ok else 'NO'}{note}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--record", action="store_true", help="write the fixture under tests/parity/fixtures/"
    )
    parser.add_argument("--amago-venv", type=Path, default=ROOT / ".venv-amago-ref")
    parser.add_argument("--keep", type=Path, default=None, help="keep the exchanged files in this folder")
    args = parser.parse_args()

    python = ensure_baseline(args.amago_venv)
    with tempfile.TemporaryDirectory(prefix="amago-parity-") as tmp:
        work = args.keep or Path(tmp)
        (work / "inputs").mkdir(parents=True, exist_ok=True)
        inputs = {}
        for case in parity_cases.CASES:
            inputs[case["name"]] = parity_cases.make_inputs(case)
            np.savez(work / "inputs" / f"{case['name']}.npz", **inputs[case["name"]])
        (work / "cases.json").write_text(json.dumps(parity_cases.CASES, indent=1))
        run_amago_side(python, work)
        references = {}
        for case in parity_cases.CASES:
            with np.load(work / "amago_ref" / f"{case['name']}.npz") as data:
                references[case["name"]] = {k: data[k] for k in data.files}
        rows = []
        for case in parity_cases.CASES:
            rows += parity_cases.compare(case, inputs[case["name"]], references[case["name"]])
        print_table(rows)
        if args.record:
            parity_cases.write_fixture(parity_cases.FIXTURE, inputs, references)
            size = parity_cases.FIXTURE.stat().st_size / 1024
            print(f"recorded {parity_cases.FIXTURE.relative_to(ROOT)} ({size:.0f} KiB)")
    failed = [r for r in rows if not r.ok]
    print(
        f"{len(rows) - len(failed)} of {len(rows)} quantities within |d| <= {parity_cases.ATOL} + {parity_cases.RTOL}·|AMAGO|"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
