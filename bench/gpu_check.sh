#!/usr/bin/env bash
# One command for a machine with a CUDA GPU: everything the project checks only there, in under 10 minutes.
#
#   bash bench/gpu_check.sh             (from the repository root)
#   bash bench/gpu_check.sh --dry-run   (prints the steps; runs nothing, needs no GPU)
#
# Steps, in this order (those left when the time budget is spent become "skipped" rows):
#   sync         uv sync --locked
#   extras       the flash-attn and mamba-ssm extras, if they install within their timeout (they build from
#                source where no wheel fits; the run goes on without them and says so)
#   test_gpu     tests/nets/test_gpu.py
#   pytest_gpu   every other test marked gpu (pytest -m gpu; test_gpu.py left out, the step above ran it)
#   kernels      the flash-attn and mamba-ssm paths against the pure-PyTorch ones: the kernel scan equals the
#                chunked scan; flash and the mamba kernels keep the rollout contract (a rollout with per-row
#                resets at staggered steps, through the KV cache / recurrent state, equals the training forward)
#   update_*     bench/update.py on the GPU, ff / GRU / Transformer / Mamba, fp32 and bf16 (FLOPs, GFLOP/s, MFU)
#   collect_*    bench/throughput.py (collection + updates + utilisation) per encoder, fp32 and bf16
#   run_main     a short `amago run` of the embedded main job
#   run_mw       amago run --env metaworld-ml1-reach-v3 --traj-encoder mamba --steps 50k (time-boxed)
#   amago_venv   AMAGO v3.3.0's venv (../shared/baselines/amago-3.3.0/setup.sh .venv-amago-ref), if missing
#   amago_tp     AMAGO v3.3.0's throughput on the same card (ff, transformer)
# Every step has its own timeout; a step that fails or times out is a row of the final table, not an abort.
# Logs: bench/out/gpu_check/<step>.log (GPU_CHECK_LOGS to move them). GPU_CHECK_PYTHON: use that environment's
# python (and its amago) instead of .venv's; GPU_CHECK_BUDGET_S: the whole check's seconds (default 570).
set -uo pipefail

DRY_RUN=0
for arg in "$@"; do
    case "$arg" in
        --dry-run) DRY_RUN=1 ;;
        -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "gpu_check.sh: unknown argument '$arg' (known: --dry-run, --help)" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 2
BASELINE="$ROOT/../shared/baselines/amago-3.3.0"
LOGS="${GPU_CHECK_LOGS:-$ROOT/bench/out/gpu_check}"
BUDGET_S="${GPU_CHECK_BUDGET_S:-570}"  # the whole check; 30 s of the 10 minutes kept for the table
PY="${GPU_CHECK_PYTHON:-$ROOT/.venv/bin/python}"  # another environment's python, if the sync cannot run
AMAGO="$(dirname "$PY")/amago"
START=$SECONDS
ROWS=()

# name | timeout seconds | command (run by bash -c in the repository root)
STEPS=(
    "sync|180|uv sync --locked"
    "extras|120|uv sync --locked --inexact --extra flash --extra mamba"
    "test_gpu|120|\$PY -m pytest -q -rs tests/nets/test_gpu.py"
    "pytest_gpu|90|\$PY -m pytest -q -rs -m gpu --ignore=tests/nets/test_gpu.py"
    "kernels|60|\$PY -m pytest -q -rs tests/nets/test_gpu.py -k 'flash or mamba_kernel or with_kernels'"
    "update_fp32|75|\$PY bench/update.py --device cuda --precision no --encoders ff rnn transformer mamba --updates 10 --warmup 3"
    "update_bf16|75|\$PY bench/update.py --device cuda --precision bf16 --encoders ff rnn transformer mamba --updates 10 --warmup 3"
)
for encoder in ff rnn transformer mamba; do
    for precision in no bf16; do
        STEPS+=("collect_${encoder}_${precision/no/fp32}|45|\$PY bench/throughput.py --encoder $encoder --precision $precision --collect-calls 2 --warmup 2 --updates 10 --flop-batches 1")
    done
done
STEPS+=(
    "run_main|75|\$AMAGO run --budget 1m --quiet --no-preflight"
    "run_mw|120|\$AMAGO run --env metaworld-ml1-reach-v3 --traj-encoder mamba --steps 50k --quiet --no-preflight"
    "amago_venv|120|test -x .venv-amago-ref/bin/python || bash \"\$BASELINE/setup.sh\" .venv-amago-ref"
    "amago_tp|90|for e in ff transformer; do TORCH_COMPILE_DISABLE=1 .venv-amago-ref/bin/python \"\$BASELINE/amago_bench.py\" throughput --encoder \$e --collect_epochs 2 --warmup_updates 2 --updates 10 --out \"\$LOGS/amago_tp_\$e.json\" || exit 1; done"
)

if [[ $DRY_RUN == 1 ]]; then
    echo "gpu_check.sh --dry-run: would run, in $ROOT, within ${BUDGET_S} s in all (logs in $LOGS):"
    printf '%-25s %8s  %s\n' step timeout command
    total=0
    for step in "${STEPS[@]}"; do
        IFS='|' read -r name limit command <<<"$step"
        printf '%-25s %7ss  %s\n' "$name" "$limit" "$command"
        total=$((total + limit))
    done
    echo "(timeouts add up to ${total} s; steps left when ${BUDGET_S} s are spent become 'skipped' rows)"
    exit 0
fi

# A CUDA GPU must be visible, or nothing here can run: one line, and out.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "gpu_check.sh: no CUDA GPU visible (nvidia-smi lists none); run it on a machine with one (--dry-run lists the steps)." >&2
    exit 1
fi
mkdir -p "$LOGS"
export PY AMAGO ROOT BASELINE LOGS PYTHONUNBUFFERED=1
nvidia-smi -L

# The line a step's log ends on that says the most: pytest's summary, a bench's last table row, an error.
summary() {
    local log="$1"
    grep -E '(passed|failed|skipped|error|deselected|no tests ran)( |,|$).* in [0-9.]+s' "$log" | tail -1 \
        || grep -vE '^\s*$' "$log" | tail -1
}

for step in "${STEPS[@]}"; do
    IFS='|' read -r name limit command <<<"$step"
    left=$((BUDGET_S - (SECONDS - START)))
    if ((left < 15)); then
        ROWS+=("$name|skipped: the ${BUDGET_S} s budget is spent|0")
        continue
    fi
    ((limit > left)) && limit=$left
    if [[ $name != sync && $name != extras && $name != amago_venv && $name != amago_tp && ! -x $PY ]]; then
        ROWS+=("$name|skipped: no $PY (the sync step failed)|0")
        continue
    fi
    if [[ $name == amago_* && ! -d $BASELINE ]]; then
        ROWS+=("$name|skipped: $BASELINE not found|0")
        continue
    fi
    if [[ $name == amago_tp && ! -x .venv-amago-ref/bin/python ]]; then
        ROWS+=("$name|skipped: no AMAGO venv|0")
        continue
    fi
    log="$LOGS/$name.log"
    echo "== $name (timeout ${limit}s): $command"
    began=$SECONDS
    timeout --kill-after=10 "$limit" bash -c "$command" >"$log" 2>&1
    rc=$?
    took=$((SECONDS - began))
    last="$(summary "$log" | cut -c1-110)"
    if ((rc == 0)); then
        result="ok: $last"
    elif ((rc == 5)) && [[ $command == *pytest* ]]; then
        result="ok: no tests selected ($last)"
        rc=0
    elif ((rc == 124 || rc == 137)); then
        result="TIMED OUT after ${limit}s: $last"
    else
        result="FAILED (exit $rc): $last"
    fi
    if [[ $name == extras && $rc != 0 ]]; then
        result="not installed, going on without flash-attn/mamba-ssm (exit $rc): $last"
    fi
    echo "   $result (${took}s)"
    ROWS+=("$name|$result|$took")
done

echo
echo "gpu_check.sh: $(nvidia-smi -L | head -1), $((SECONDS - START)) s in all; logs in $LOGS"
printf '%-25s %-115s %7s\n' step result seconds
failed=0
for row in "${ROWS[@]}"; do
    IFS='|' read -r name result took <<<"$row"
    printf '%-25s %-115s %7s\n' "$name" "$result" "$took"
    [[ $result == FAILED* || $result == TIMED* ]] && failed=1
done
exit $failed
