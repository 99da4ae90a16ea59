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
    uv run python bench/parity_vs_amago.py --precision bf16 [--draws 3]

``--record`` also writes the inputs, AMAGO's weights and AMAGO's outputs to ``tests/parity/fixtures/`` so the
test suite checks amago against AMAGO's numbers without AMAGO installed. Not part of CI (it needs the AMAGO
venv, built here by the baseline's ``setup.sh`` when missing, ~1 min).

``--precision bf16`` runs both libraries under bf16 autocast on the same weights and batches: AMAGO as its
``Experiment(mixed_precision="bf16")`` trains (``accelerate.Accelerator(mixed_precision="bf16").prepare`` wraps the
agent's whole forward, losses included, in ``torch.autocast("cpu", dtype=torch.bfloat16)``), amago as its
experiment loop does (``torch.autocast(device_type="cpu", dtype=torch.bfloat16)`` around the agent's loss, the
backward outside; inside, ``amago_nets.precision`` computes the networks in bf16 and distributions, PopArt,
targets, labels and losses in fp32). Rollouts and the standalone PopArt and label cases run in the same autocast on
both sides. Each quantity gets three normwise errors, ``max|x - y| / max|fp32|``:

- ``a16-A16``: amago's bf16 result against AMAGO's;
- ``a16-fp32``: amago's bf16 result against AMAGO's fp32 one (amago's own fp32 one where amago differs from AMAGO
  on purpose, as the fp32 table documents);
- ``A16-fp32``: AMAGO's bf16 result against its fp32 one: what bf16 costs AMAGO, the noise floor;

and the run exits 1 when an ``a16-fp32`` is above its tolerance (the row says ``NO``).

How it measures. A bf16 result is one draw of its roundings, so each error is the RMS over 1 + ``--draws`` draws:
the built weights and copies perturbed by 2^-12 relative (1/16 of bf16's unit roundoff: the same problem, other
roundings; the fp32 references are computed on the same perturbed weights). Discrete decisions (mode picks and the
binary advantage filter ``1[A > 0]``) are replayed from each library's own fp32 update
(``parity_cases.DecisionTape``): a value within bf16's error of a decision boundary flips with the rounding and
moves the loss by a whole term, which measures luck, not precision (multitask Discrete: advantages of ~1e-4
against bf16 errors of ~5e-3 flipped 20 of 112 filter weights); the share bf16 would have flipped is shown. A
gradient's scale is at least 2^-8 of the update's largest gradient element: a gradient that cancels to nearly
nothing (a bias ahead of a normalisation: 1e-7 in fp32, 0 in exact arithmetic) is below what a bf16 backward
resolves.

The tolerance: ``a16-fp32 <= max(32·2^-8, 2·A16-fp32)``.

- ``32·2^-8 = 0.125``, from bf16's precision and the depth of the computation: bf16 keeps 8 significand bits, so
  one rounding errs by at most u = 2^-8 relative, and to first order the errors of k roundings in a chain add up to
  k·u. The longest chains here are ~32 roundings: the transformer update rounds ~17 times forward (timestep
  encoder 2 layers, 2 blocks of qkv, QKᵀ, softmax·V, output and 2 feed-forward products, a head's 3 layers) and as
  often backward. Measured (2026-11-28, 4 draws): AMAGO's forward quantities (losses, n-step targets, PopArt and
  input statistics, labels, rollout states, probabilities, values) err by at most 0.068 (its clipped categorical
  in bf16), amago's by at most 0.030.
- ``2·A16-fp32``, from the measured noise floor, for what the depth bound does not cover: a gradient is a sum
  over the batch whose terms cancel, and its bf16 error is relative to the terms, not to the sum; per-tensor
  gradient errors reach 0.55 for AMAGO too (IMPALA CNN). There amago may be one bit (a factor 2) less accurate
  than AMAGO, no more. Measured: amago's worst gradient error is 0.65-1.05 times AMAGO's in every update case.

AMAGO's transformer rollout raises under CPU bf16 autocast (its key/value cache is fp32 and ``index_put`` refuses
bf16 keys); amago's rows there are judged against the depth bound alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "parity"))
sys.path.insert(0, str(ROOT / "bench"))
import parity_cases  # noqa: E402
from vs_amago import ensure_baseline  # noqa: E402


def run_amago_side(python: Path, work: Path, precision: str = "no", draw: int = 0) -> Path:
    """Runs AMAGO on every case's inputs; returns the folder of its outputs (``work/amago_ref`` for fp32 on the
    built weights, ``work/amago_ref_<precision>_d<draw>`` otherwise)."""
    env = {**os.environ, "TORCH_COMPILE_DISABLE": "1", "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    cmd = [str(python), str(ROOT / "bench" / "parity_amago_ref.py"), str(work)]
    if precision == "no" and draw == 0:
        out = "amago_ref"  # the fp32 harness's own run, as it always was
    else:
        out = f"amago_ref_{precision}_d{draw}"
        cmd += ["--precision", precision, "--draw", str(draw), "--out", out]
    subprocess.run(cmd, env=env, check=True)
    return work / out


def read_references(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    """AMAGO's outputs of every case, as the AMAGO side wrote them into ``folder``."""
    references = {}
    for case in parity_cases.CASES:
        with np.load(folder / f"{case['name']}.npz") as data:
            references[case["name"]] = {k: data[k] for k in data.files}
    return references


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


# ------------------------------------------------------------------------------------------------------
# --precision bf16
# ------------------------------------------------------------------------------------------------------

BF16_UNIT = 2.0**-8
"""bf16's unit roundoff: 8 significand bits (7 stored), so one round-to-nearest errs by at most 2^-8 relative."""

DEPTH_BOUND = 32 * BF16_UNIT
"""The fixed part of the tolerance: first-order error of ~32 bf16 roundings in a row (module docstring)."""

FLOOR_FACTOR = 2.0
"""amago may lose one bit more than AMAGO's measured bf16 error (its noise floor) on a quantity."""

DRAWS = 3
"""Perturbed rounding draws beside the plain one (``parity_amago_ref.perturb_parameters``)."""


@dataclass(frozen=True)
class Sides:
    """One quantity in one draw: amago's bf16 result, AMAGO's (None where AMAGO raised), and their fp32 truths."""

    ours: np.ndarray
    ours_truth: np.ndarray
    theirs: np.ndarray | None
    theirs_truth: np.ndarray
    note: str = ""


@dataclass(frozen=True)
class Bf16Row:
    """One quantity under bf16, each error normwise (``max|x - y| / max|fp32|``), its RMS over the draws."""

    case: str
    quantity: str
    scale: float
    """``max|fp32|`` of the quantity (AMAGO's, draw 0)."""
    between: float
    """amago bf16 against AMAGO bf16."""
    ours: float
    """amago bf16 against fp32 (AMAGO's; amago's own where amago differs from AMAGO on purpose)."""
    theirs: float
    """AMAGO bf16 against AMAGO fp32: what bf16 costs AMAGO, the noise floor amago is set against."""
    tolerance: float
    ok: bool
    note: str = ""


def normwise(x: np.ndarray, truth: np.ndarray, floor: float = 0.0, other: np.ndarray | None = None) -> float:
    """``max|x - truth| / max(max|truth|, floor)``: mixed-precision error scales with the operands' size, so an
    element near zero is judged against its tensor's largest one, not against itself (0 where both are all zero).

    With ``other``, the distance of ``x`` from ``other`` instead, on the same scale (two bf16 results apart).
    """
    if x.size == 0:
        return 0.0
    diff = float(np.max(np.abs(x - (truth if other is None else other))))
    scale = max(float(np.max(np.abs(truth))), floor)
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


def _rms(values: list[float]) -> float:
    """Root mean square over the draws (nan without any): the scale of a rounding error that varies by draw."""
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else math.nan


def gradient_floor(draw: dict[str, Sides], truth: str) -> float:
    """2^-8 of the update's largest fp32 gradient element (``truth``: ``ours_truth`` or ``theirs_truth``).

    A gradient that cancels to nearly nothing (a bias ahead of a normalisation: 1e-7 in fp32, zero in exact
    arithmetic) is below what a bf16 backward resolves; judged against its own size, its error would be 1e4.
    """
    grads = [getattr(s, truth) for q, s in draw.items() if q.startswith("grad ") and getattr(s, truth).size]
    return BF16_UNIT * max((float(np.max(np.abs(g))) for g in grads), default=0.0)


def case_draw(
    case: dict,
    inputs: dict[str, np.ndarray],
    fp32_ref: dict[str, np.ndarray],
    bf16_ref: dict[str, np.ndarray],
) -> dict[str, Sides] | str:
    """One case in one draw: every quantity's four arrays, or why there are none (amago raised)."""
    name = case["name"]
    if "error" in fp32_ref:
        return f"AMAGO fp32 raised, no truth to judge by: {fp32_ref['error']}"
    if "error" not in bf16_ref:
        weights = [k for k in fp32_ref if k.startswith("weight/")]
        if any(not np.array_equal(fp32_ref[k], bf16_ref[k]) for k in weights):
            msg = f"{name}: AMAGO's fp32 and bf16 runs built different weights; the comparison needs the same ones."
            raise RuntimeError(msg)
    with parity_cases.recording() as own_fp32:
        fp32_rows = parity_cases.compare(case, inputs, fp32_ref)
    with parity_cases.recording() as against_fp32:
        bf16_rows = parity_cases.compare(case, inputs, fp32_ref, precision="bf16")
    for row in fp32_rows + bf16_rows:
        if row.quantity == "amago raised":
            return f"amago raised: {row.note}"
    against_bf16: list[parity_cases.Pair] = []
    if "error" not in bf16_ref:
        with parity_cases.recording() as against_bf16:
            parity_cases.compare(case, inputs, bf16_ref, precision="bf16")
    # Initial-weight checks compare fresh draws, not computations: precision does not reach them.
    own = {p.quantity: p for p in own_fp32 if not p.quantity.startswith("initial ")}
    theirs16 = {p.quantity: p for p in against_bf16}
    documented = {r.quantity for r in fp32_rows if r.documented}
    fp32_off = {r.quantity for r in fp32_rows if not r.ok and not r.quantity.startswith("initial")}
    out = {}
    for pair in against_fp32:
        quantity = pair.quantity
        if quantity.startswith("initial "):
            continue
        ours_truth, note = pair.theirs, ""
        if quantity in documented:
            ours_truth = own[quantity].ours  # amago's fp32 result is what its bf16 approximates here
            note = "differs from AMAGO on purpose (fp32 table): amago's error is against amago's fp32"
        elif quantity in fp32_off:
            note = "fp32 parity fails here: the error includes the fp32 difference"
        theirs = theirs16[quantity].theirs if quantity in theirs16 else None
        out[quantity] = Sides(pair.ours, ours_truth, theirs, pair.theirs, note)
    return out


def _worst(values: list[float]) -> float:
    return max(values) if values else math.nan


def _share(counts: np.ndarray) -> float:
    """``flipped / total`` of a ``(flipped, total)`` count (0 where there was nothing to decide)."""
    return float(counts[0] / counts[1]) if counts[1] > 0 else 0.0


def _informational_row(name: str, quantity: str, sides: list[Sides]) -> Bf16Row:
    """Shares of discrete outcomes that differ, shown beside the errors and not judged: the update's decisions
    bf16 would have flipped (replayed from fp32), or rollout steps whose argmax action differs (a flip needs a
    probability error, and the probabilities are judged on their own row)."""
    with_theirs = [s for s in sides if s.theirs is not None]
    if quantity == "decisions bf16 flipped":
        ours = max(_share(s.ours) for s in sides)
        theirs = _worst([_share(s.theirs) for s in with_theirs])
        between, scale = math.nan, math.nan
        note = (
            f"share of the update's {sides[0].ours[1]:.0f} discrete decisions bf16 flips; replayed from fp32, "
            "largest over the draws (informational)"
        )
    else:
        ours = max(float(np.mean(s.ours != s.ours_truth)) for s in sides)
        theirs = _worst([float(np.mean(s.theirs != s.theirs_truth)) for s in with_theirs])
        between = _worst([float(np.mean(s.ours != s.theirs)) for s in with_theirs])
        scale, note = math.nan, "share of steps whose argmax differs, largest over the draws (informational)"
    return Bf16Row(name, quantity, scale, between, ours, theirs, math.nan, True, note)


INFORMATIONAL = ("decisions bf16 flipped", "argmax actions per step")
"""Quantities that count discrete outcomes rather than measure errors."""


def case_rows(name: str, draws: list[dict[str, Sides] | str], amago_bf16_error: str | None) -> list[Bf16Row]:
    """A case's rows: every quantity's errors, their RMS over the draws, judged against its tolerance."""
    failed = [d for d in draws if isinstance(d, str)]
    if failed:
        ok = failed[0].startswith("AMAGO fp32 raised")
        return [Bf16Row(name, failed[0].split(":")[0], *[math.nan] * 5, ok, failed[0])]
    results = [d for d in draws if not isinstance(d, str)]
    rows = []
    if amago_bf16_error:
        note = f"{amago_bf16_error}; amago judged against the depth bound only"
        rows.append(Bf16Row(name, "AMAGO bf16 raised", *[math.nan] * 5, True, note))
    for quantity, first in results[0].items():
        sides = [r[quantity] for r in results if quantity in r]
        if quantity in INFORMATIONAL:
            rows.append(_informational_row(name, quantity, sides))
            continue
        grad = quantity.startswith("grad ")
        ours_errors, theirs_errors, between_errors = [], [], []
        for result in results:
            if quantity not in result:
                continue
            one = result[quantity]
            ours_floor = gradient_floor(result, "ours_truth") if grad else 0.0
            theirs_floor = gradient_floor(result, "theirs_truth") if grad else 0.0
            ours_errors.append(normwise(one.ours, one.ours_truth, ours_floor))
            if one.theirs is not None:
                theirs_errors.append(normwise(one.theirs, one.theirs_truth, theirs_floor))
                between_errors.append(normwise(one.ours, one.theirs_truth, theirs_floor, other=one.theirs))
        ours, theirs, between = _rms(ours_errors), _rms(theirs_errors), _rms(between_errors)
        scale = float(np.max(np.abs(first.theirs_truth))) if first.theirs_truth.size else 0.0
        tolerance = DEPTH_BOUND if math.isnan(theirs) else max(DEPTH_BOUND, FLOOR_FACTOR * theirs)
        rows.append(
            Bf16Row(name, quantity, scale, between, ours, theirs, tolerance, ours <= tolerance, first.note)
        )
    return _fold_gradients(rows)


def _fold_gradients(rows: list[Bf16Row]) -> list[Bf16Row]:
    """Every parameter's gradient as one row of per-column maxima over the tensors, then each gradient out of
    tolerance."""
    grads = [r for r in rows if r.quantity.startswith("grad ")]
    if not grads:
        return rows
    worst_ours = max(grads, key=lambda r: r.ours)
    worst_theirs = max(grads, key=lambda r: -1.0 if math.isnan(r.theirs) else r.theirs)
    folded = Bf16Row(
        grads[0].case,
        f"every gradient ({len(grads)} tensors)",
        max(r.scale for r in grads),
        max(r.between for r in grads),
        worst_ours.ours,
        worst_theirs.theirs,
        worst_ours.tolerance,
        all(r.ok for r in grads),
        f"worst amago: {worst_ours.quantity[5:]}; worst AMAGO: {worst_theirs.quantity[5:]}",
    )
    others = [r for r in rows if not r.quantity.startswith("grad ")]
    return [*others, folded, *[r for r in grads if not r.ok]]


def print_bf16_table(rows: list[Bf16Row]) -> None:
    """One line per quantity: the three normwise errors, amago's over AMAGO's, the tolerance and the verdict."""
    width = max(len(r.case) for r in rows)
    qwidth = min(max(len(r.quantity) for r in rows), 44)
    print(
        f"{'case':<{width}}  {'quantity':<{qwidth}}  {'max|fp32|':>9}  {'a16-A16':>8}  {'a16-fp32':>8}  "
        f"{'A16-fp32':>8}  {'a/A':>6}  {'tol':>6}  ok"
    )
    for r in rows:
        ratio = r.ours / r.theirs if r.theirs > 0 else (1.0 if r.ours == 0 else math.inf)
        note = f"  {r.note}" if r.note else ""
        print(
            f"{r.case:<{width}}  {r.quantity[:qwidth]:<{qwidth}}  {r.scale:>9.3g}  {r.between:>8.2g}  "
            f"{r.ours:>8.2g}  {r.theirs:>8.2g}  {ratio:>6.2f}  {r.tolerance:>6.3f}  "
            f"{'yes' if r.ok else 'NO'}{note}"
        )


def bf16_report(
    inputs: dict[str, dict[str, np.ndarray]],
    fp32_refs: list[dict[str, dict[str, np.ndarray]]],
    bf16_refs: list[dict[str, dict[str, np.ndarray]]],
) -> int:
    """Prints the bf16 table (one entry per draw in the reference lists); 1 when an amago error is out of
    tolerance."""
    rows: list[Bf16Row] = []
    for case in parity_cases.CASES:
        name = case["name"]
        draws = [
            case_draw(case, inputs[name], f[name], b[name]) for f, b in zip(fp32_refs, bf16_refs, strict=True)
        ]
        error = bf16_refs[0][name].get("error")
        rows += case_rows(name, draws, None if error is None else str(error))
    print_bf16_table(rows)
    judged = [r for r in rows if not math.isnan(r.tolerance)]
    failed = [r for r in rows if not r.ok]
    compared = [r for r in judged if not math.isnan(r.theirs)]
    closer = sum(1 for r in compared if r.ours <= r.theirs)
    print(
        f"errors normwise (max|x - y| / max|fp32|; gradients: at least 2^-8 of the update's largest), RMS over "
        f"{len(fp32_refs)} rounding draws (the built weights and {len(fp32_refs) - 1} perturbed by 2^-12); "
        f"tolerance max({DEPTH_BOUND:.3g} = {DEPTH_BOUND / BF16_UNIT:.0f}·2^-8, {FLOOR_FACTOR:g} x AMAGO's error)"
    )
    print(
        f"{len(rows) - len(failed)} of {len(rows)} quantities within tolerance; amago's bf16 as close to fp32 as "
        f"AMAGO's or closer on {closer} of {len(compared)}"
    )
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--record", action="store_true", help="write the fixture under tests/parity/fixtures/"
    )
    parser.add_argument("--amago-venv", type=Path, default=ROOT / ".venv-amago-ref")
    parser.add_argument("--keep", type=Path, default=None, help="keep the exchanged files in this folder")
    parser.add_argument(
        "--precision",
        choices=("no", "bf16"),
        default="no",
        help="no: fp32 parity (default); bf16: both under bf16 autocast, errors against fp32",
    )
    parser.add_argument(
        "--draws",
        type=int,
        default=DRAWS,
        help=f"bf16: perturbed rounding draws besides the plain one ({DRAWS})",
    )
    args = parser.parse_args()
    if args.record and args.precision != "no":
        parser.error("--record writes the fp32 fixture; run it without --precision")

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
        references = read_references(work / "amago_ref")
        if args.precision == "bf16":
            fp32_refs, bf16_refs = [references], []
            for draw in range(args.draws + 1):
                if draw:
                    fp32_refs.append(read_references(run_amago_side(python, work, "no", draw)))
                bf16_refs.append(read_references(run_amago_side(python, work, "bf16", draw)))
            return bf16_report(inputs, fp32_refs, bf16_refs)
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
