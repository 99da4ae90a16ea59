"""AMAGO's own example scripts, the same file with the same flags, run by AMAGO v3.3.0's install and by amago's.

Issue 41 item 3 ("the same learning from the same command line"). For one task, the script
(``../shared/baselines/amago-3.3.0/examples/<script>``, never copied) runs once as
``.venv-amago-ref/bin/python SCRIPT FLAGS`` (AMAGO's wheel in its own venv; ``AMAGO_REF_SRC`` points at the
baseline folder as ``bench/vs_amago.py`` arranges) and once as ``.venv/bin/python SCRIPT FLAGS`` (amago), one
process at a time, alternating AMAGO seed 1, amago seed 1, AMAGO seed 2, amago seed 2, ... Each run is time-boxed:
past ``--minutes`` it gets SIGINT (a user's Ctrl-C), then SIGKILL ``--grace`` seconds later; what it logged so far
counts. A run already on disk with the same command and box is not run again (``--rerun`` forces it).

Tasks:
    ``tmaze30``: ``04_tmaze.py --horizon 30`` sized like ``run_learning.sh tmaze30`` (the recipe behind the README's
    earlier T-Maze H=30 rows: 12 actors, 155 env steps per actor and 155 updates per epoch, val every epoch,
    Transformer 128 x 3 layers), ``--env_mode sync --dloader_workers 0``: those earlier numbers came from
    ``amago_bench.py learn``, which hardcodes ``env_mode="sync"`` and defaults to 0 loader workers. AMAGO's CLI
    defaults (``async``: 12 env processes, 8 loader processes) would also put 20 more processes on a 2-core
    machine that the one-process-at-a-time rule is meant to keep quiet. Target: val return 1.0 (>= 0.999).
    ``frozenlake``: ``00_meta_frozen_lake.py --seq_model transformer --log``. The script fixes its own schedule
    (32 actors, 1,000 updates per epoch, val every 20 epochs, 10 loader workers, ``sync`` envs) and has no flag to
    change it. Its only val inside the box is epoch 0's, before any update (an epoch takes minutes on one
    thread): the table then says so and reports the last training-sequence mean reward per step instead, on both
    sides alike (``Mean Reward (in training sequences)``; AMAGO logs no train episode return). Measured here:
    AMAGO's side runs ~1.7 s per update on one thread, so 30 minutes hold about one epoch (8,000 env steps,
    exploration still at epsilon ~0.99 of a 1M-step anneal): the task shows that both sides run the script and
    how far each gets in the box (env steps, updates), not learning.

Seeds: neither script has a seed flag and AMAGO seeds nothing (torch, numpy and the envs draw fresh entropy), so no
seed is passed to either side (no flag, no environment variable): "seed 1, 2" are replicate labels. amago draws a
fresh seed per run and records it in the run's ``config.resolved.json`` (shown in the JSON).

Threads: neither script has a thread flag. Both sides get ``OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
TORCH_COMPILE_DISABLE=1`` (torch's own variables: AMAGO's torch takes one intra-op thread from them) and
``AMAGO_RUN__TORCH_THREADS=1`` (amago's config variable for ``run.torch_threads``: amago sets its torch threads
itself, half the cores by default, and does not read OMP_NUM_THREADS; AMAGO ignores the variable). Checked per run:
amago's ``config.resolved.json`` must say ``torch_threads: 1``, and the main process's CPU seconds / wall seconds
(from ``/proc``) is recorded for both sides.

CPU attention: AMAGO's Transformer defaults to ``FlashAttention``, which needs the flash-attn CUDA package: on CPU
AMAGO's scripts stop at "Missing flash attention 2 install". ``--cpu-attention launcher`` (default) runs AMAGO's
interpreter through a 6-line launcher that binds ``TformerTrajEncoder.attention_type = VanillaAttention`` in gin
(what ``amago_bench.py`` binds for AMAGO on CPU) and then runs the script file with its flags via ``runpy``; amago
runs the script directly (its default attention, ``sdpa``, is VanillaAttention's counterpart). The flags are the
same on both sides. ``--cpu-attention gin`` (``tmaze30`` only: 00 has no ``--configs``) instead passes the same
``--configs cpu_attention.gin`` (dynamic-registration gin) to both sides, the way an AMAGO user would; a preflight
checks amago accepts that file before anything runs.

Curves: both sides run with logging on (04: no ``--no_log``; 00: ``--log``), ``WANDB_MODE=offline`` and ``WANDB_DIR``
(and wandb's cache/config/data folders) inside the run's own folder. AMAGO logs only to wandb: its val returns
are read from its offline ``run-*.wandb`` file by ``bench/wandb_offline_history.py``, run by AMAGO's venv as a
separate program. amago's come from its run folder's ``metrics.jsonl``; its offline wandb run is read the same
way and must agree on every val return. Key: ``val/Average Total Return (Across All Env Names)`` (the same name on
both sides) against ``total_frames`` (env steps, all actors) and wall minutes from launch (wandb's ``_timestamp``
of the row, both sides).

Stopping: amago handles the SIGINT (it stops after the current step, saves, and its ``learn()`` returns, so the
script goes on to ``evaluate_test``, an empty test row, and exits 0); AMAGO raises KeyboardInterrupt mid-update
and exits -2. Both offline wandb files keep every row logged before the signal.

Outputs in ``bench/out/examples_vs_amago/`` (git-ignored): ``<task>.png`` (val return against env steps, one line
per seed and side), ``<task>.json``, ``<task>.md`` (table, commands, ``lscpu`` flags); the runs in
``<task>/<side>/seed<N>/`` (``run.json``, ``log.txt``, the script's ``buf/`` folder, minus its replay buffer).

Usage:
    .venv/bin/python bench/examples_vs_amago.py tmaze30 --dry-run
    .venv/bin/python bench/examples_vs_amago.py tmaze30                 # 2 seeds x 2 sides, 15 min each
    .venv/bin/python bench/examples_vs_amago.py frozenlake --side AMAGO --seeds 1
    .venv/bin/python bench/examples_vs_amago.py tmaze30 --report-only

A benchmark, not a test: ~1 hour per task on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from vs_amago import BASELINE, ONE_THREAD, ROOT, ensure_baseline

OUT = ROOT / "bench" / "out" / "examples_vs_amago"
EXAMPLES = BASELINE / "examples"
READER = ROOT / "bench" / "wandb_offline_history.py"
SIDES = ("AMAGO", "amago")
VAL_KEY = "val/Average Total Return (Across All Env Names)"
# The update metrics' panel: AMAGO logs them under "train-update/", amago under "train/".
TRAIN_KEYS = {
    "AMAGO": "train-update/Mean Reward (in training sequences)",
    "amago": "train/Mean Reward (in training sequences)",
}
ATTENTION_PARAM = "amago.nets.traj_encoders.TformerTrajEncoder.attention_type"
CPU_GIN = f"""# AMAGO's Transformer on CPU: plain PyTorch attention instead of FlashAttention (CUDA only).
from __gin__ import dynamic_registration
import amago.nets.transformer
import amago.nets.traj_encoders

{ATTENTION_PARAM} = @amago.nets.transformer.VanillaAttention
"""
# AMAGO's interpreter runs the unchanged script through this: bind the CPU attention, then run the file with its
# own flags as ``python SCRIPT FLAGS`` would (``__main__``, the script's folder first on sys.path).
LAUNCHER = (
    "import os, runpy, sys; import gin, amago.nets.transformer as t; "
    f"gin.bind_parameter({ATTENTION_PARAM!r}, t.VanillaAttention); "
    "sys.argv = sys.argv[1:]; sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0])); "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


@dataclass(frozen=True)
class Task:
    """One example script and its flags, the same on both sides.

    Attributes:
        name: The outputs' name (``<name>.png``).
        title: Plot and table title.
        script: The file in AMAGO's ``examples/``.
        flags: The script's flags (``--buffer_dir buf``: the run's own folder is the working directory).
        target: The val return that counts as reached (None: no target).
        minutes: The default time box of one run.
        takes_configs: The script has AMAGO's ``--configs`` flag (``add_common_cli``).
    """

    name: str
    title: str
    script: str
    flags: tuple[str, ...]
    target: float | None
    minutes: float
    takes_configs: bool


TASKS = {
    task.name: task
    for task in (
        Task(
            "tmaze30", "T-Maze passive H=30 (04_tmaze.py)", "04_tmaze.py",
            ("--horizon", "30", "--run_name", "vs", "--buffer_dir", "buf", "--parallel_actors", "12",
             "--timesteps_per_epoch", "155", "--batches_per_epoch", "155", "--val_interval", "1",
             "--memory_size", "128", "--memory_layers", "3", "--env_mode", "sync", "--dloader_workers", "0"),
            target=0.999, minutes=15.0, takes_configs=True,
        ),
        Task(
            "frozenlake", "Meta-Frozen-Lake 5x5 k=10, transformer (00_meta_frozen_lake.py)",
            "00_meta_frozen_lake.py",
            ("--seq_model", "transformer", "--run_name", "vs", "--buffer_dir", "buf", "--log"),
            target=None, minutes=30.0, takes_configs=False,
        ),
    )
}  # fmt: skip


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_dir(task: Task, side: str, seed: int) -> Path:
    return OUT / task.name / side / f"seed{seed}"


def gin_file() -> Path:
    return OUT / "cpu_attention.gin"


def python_of(side: str, venv: Path) -> Path:
    return venv / "bin" / "python" if side == "AMAGO" else ROOT / ".venv" / "bin" / "python"


def command(task: Task, side: str, venv: Path, attention: str) -> list[str]:
    """The command line of one side (the working directory is the run's folder)."""
    script = str(EXAMPLES / task.script)
    flags = list(task.flags)
    if attention == "gin":
        flags += ["--configs", str(gin_file())]
    python = str(python_of(side, venv))
    if side == "AMAGO" and attention == "launcher":
        return [python, "-c", LAUNCHER, script, *flags]
    return [python, script, *flags]


def environment(folder: Path) -> dict[str, str]:
    """The environment of a run, the same on both sides: one thread, offline wandb inside the run's folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env = {k: v for k, v in env.items() if not k.startswith(("WANDB_", "AMAGO_"))}
    wandb = folder / "wandb"
    return (
        env
        | shared_environment()
        | {
            "WANDB_DIR": str(wandb),
            "WANDB_CACHE_DIR": str(wandb / "cache"),
            "WANDB_CONFIG_DIR": str(wandb / "config"),
            "WANDB_DATA_DIR": str(wandb / "data"),
        }
    )


def shared_environment() -> dict[str, str]:
    """The variables this harness sets (shown in the commands), without the per-run wandb folders."""
    return {
        **ONE_THREAD,
        "AMAGO_RUN__TORCH_THREADS": "1",
        "AMAGO_REF_SRC": str(BASELINE),
        "WANDB_MODE": "offline",
        "PYTHONUNBUFFERED": "1",
    }


def shown(cmd: list[str], folder: Path | None = None) -> str:
    """One shell line: the variables this harness sets, then the command, paths shortened to the repository."""
    variables = " ".join(f"{k}={shlex.quote(v)}" for k, v in shared_environment().items())
    wandb = " WANDB_DIR=wandb (and its cache/config/data under it)" if folder else ""
    cd = f"cd {folder} && " if folder else ""
    return f"{cd}{variables}{wandb} {shlex.join(cmd)}".replace(str(ROOT) + "/", "")


def cpu_seconds(pid: int) -> float | None:
    """The user + system CPU seconds of process ``pid`` alone (its threads, not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kill_group(pgid: int, sig: int) -> None:
    """``sig`` to the process group this harness started (the run's own session), if any of it is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def run_one(task: Task, side: str, seed: int, cmd: list[str], minutes: float, grace: float) -> dict:
    """Runs one side's script for one seed in a fresh folder, time-boxed; writes ``run.json``."""
    folder = run_dir(task, side, seed)
    if folder.exists():
        shutil.rmtree(folder)  # the same --run_name would resume or share the old replay buffer
    (folder / "wandb").mkdir(parents=True)
    meta = {
        "side": side,
        "seed": seed,
        "cmd": cmd,
        "shown": shown(cmd, folder),
        "minutes": minutes,
        "load_start": loadavg(),
        "started": time.time(),
    }
    print(f"[{side} {task.name} seed {seed}] {meta['shown']}", file=sys.stderr, flush=True)
    stopped, cpu = "exited", None
    with (folder / "log.txt").open("w") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=folder,
            env=environment(folder),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        interrupted_at = None
        while proc.poll() is None:
            time.sleep(1.0)
            cpu = cpu_seconds(proc.pid) or cpu
            now = time.time() - meta["started"]
            if interrupted_at is None and now > 60 * minutes:
                proc.send_signal(signal.SIGINT)  # the script's process only, as the first Ctrl-C a user gives
                interrupted_at, stopped = now, "time_box_sigint"
            elif interrupted_at is not None and now - interrupted_at > grace:
                kill_group(proc.pid, signal.SIGKILL)
                stopped = "time_box_sigkill"
                proc.wait()
        wall = time.time() - meta["started"]
        time.sleep(2.0)  # loader workers / wandb's service finishing after the script
        kill_group(proc.pid, signal.SIGKILL)
    meta |= {
        "rc": proc.returncode,
        "stopped_by": stopped,
        "wall_s": wall,
        "load_end": loadavg(),
        "main_cpu_s": cpu,
        "main_cpu_per_wall": cpu / wall if cpu else None,
    }
    for buffer in folder.glob("buf/*/buffer"):
        shutil.rmtree(buffer, ignore_errors=True)  # replay buffers: read by nothing here
    (folder / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps({k: v for k, v in meta.items() if k != "cmd"}), file=sys.stderr, flush=True)
    return meta


# ---------------------------------------------------------------------------------------------------------------
# reading the curves
# ---------------------------------------------------------------------------------------------------------------


def wandb_rows(folder: Path, venv: Path) -> tuple[list[dict], str | None]:
    """The history rows of the run's offline wandb file (read by AMAGO's venv, a separate program), and its path."""
    files = sorted(folder.rglob("run-*.wandb"), key=lambda p: p.stat().st_mtime)
    if not files:
        return [], None
    result = subprocess.run(
        [str(python_of("AMAGO", venv)), str(READER), str(files[-1])],
        capture_output=True,
        text=True,
        env=environment(folder),
        check=False,
    )
    if result.returncode != 0:
        msg = (
            f"reading {files[-1]} failed: {result.stderr[-1500:]}; run {READER.name} on it by hand to see why"
        )
        raise RuntimeError(msg)
    rows = [json.loads(line)["row"] for line in result.stdout.splitlines() if line.strip()]
    return rows, str(files[-1].relative_to(folder))


def metrics_rows(folder: Path) -> list[dict]:
    """amago's ``metrics.jsonl`` records (a last line cut by the time box is skipped)."""
    rows = []
    for path in folder.glob("buf/*/metrics.jsonl"):
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def points(rows: list[dict], key: str, started: float | None) -> dict[str, list]:
    """Env steps, values, wall seconds from launch (None without a wandb timestamp) and updates of ``key``."""
    picked = [r for r in rows if r.get(key) is not None]
    return {
        "steps": [int(r.get("total_frames", 0)) for r in picked],
        "values": [float(r[key]) for r in picked],
        "wall_s": [r["_timestamp"] - started if started and "_timestamp" in r else None for r in picked],
        "updates": [int(r.get("gradient_steps", 0)) for r in picked],
    }


def curve(task: Task, side: str, seed: int, venv: Path) -> dict | None:
    """One run's val curve, training-reward curve and figures; None when it has not run."""
    folder = run_dir(task, side, seed)
    meta_path = folder / "run.json"
    if not meta_path.exists():
        return None
    meta = json.loads(meta_path.read_text())
    wb, wandb_file = wandb_rows(folder, venv)
    started = meta.get("started")
    extra: dict = {"wandb_file": wandb_file}
    rows = wb if side == "AMAGO" else metrics_rows(folder)
    val = points(rows, VAL_KEY, started)
    train = points(rows, TRAIN_KEYS[side], started)
    if side == "amago":
        logged = points(wb, VAL_KEY, started)
        pairs = list(zip(val["values"], logged["values"], val["steps"], logged["steps"], strict=False))
        agree = sum(abs(a - b) < 1e-6 and s == t for a, b, s, t in pairs)
        extra["wandb_agrees"] = f"{agree}/{len(val['values'])} val rows (wandb has {len(logged['values'])})"
        # amago's wall clock from its wandb rows (the same clock as AMAGO's), val row by val row.
        val["wall_s"] = [
            logged["wall_s"][i] if i < len(logged["steps"]) and logged["steps"][i] == step else None
            for i, step in enumerate(val["steps"])
        ]
        resolved = next(folder.glob("buf/*/config.resolved.json"), None)
        if resolved is not None:
            run = json.loads(resolved.read_text()).get("run", {})
            extra |= {"torch_threads": run.get("torch_threads"), "drawn_seed": run.get("seed")}
    return {
        "val": val,
        "train": train,
        "final_steps": max((int(r.get("total_frames", 0)) for r in rows), default=0),
        "updates": max((int(r.get("gradient_steps", 0)) for r in rows), default=0),
        "val_after_updates": sum(u > 0 for u in val["updates"]),
        "rc": meta.get("rc"),
        "stopped_by": meta.get("stopped_by"),
        "wall_s": meta.get("wall_s"),
        "minutes_box": meta.get("minutes"),
        "load_start": meta.get("load_start"),
        "load_end": meta.get("load_end"),
        "main_cpu_per_wall": meta.get("main_cpu_per_wall"),
        "shown": meta.get("shown"),
        **extra,
    }


def to_target(c: dict, target: float | None) -> tuple[int | None, float | None]:
    """Env steps and wall minutes at the first val return >= ``target``."""
    if target is None:
        return None, None
    val = c["val"]
    for step, value, wall in zip(val["steps"], val["values"], val["wall_s"], strict=True):
        if value >= target:
            return step, (wall / 60 if wall is not None else None)
    return None, None


def fmt(value: float | None, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def lscpu_flags() -> str:
    result = subprocess.run(["lscpu"], capture_output=True, text=True, check=False)
    return next(
        (line.strip() for line in result.stdout.splitlines() if line.startswith("Flags:")), "Flags: ?"
    )


def report(task: Task, seeds: list[int], venv: Path, attention: str) -> dict:
    """The PNG, markdown and JSON of one task from what is on disk; prints the table."""
    curves = {(side, seed): curve(task, side, seed, venv) for side in SIDES for seed in seeds}
    present = {key: c for key, c in curves.items() if c is not None}
    if not present:
        print(f"{task.name}: nothing run yet", file=sys.stderr)
        return {}
    val_in_box = any(c["val_after_updates"] for c in present.values())
    rows = []
    for (side, seed), c in sorted(present.items(), key=lambda kv: (kv[0][1], SIDES.index(kv[0][0]))):
        steps_t, min_t = to_target(c, task.target)
        box = c["minutes_box"]
        rows.append(
            {
                "side": side,
                "seed": seed,
                "env_steps_to_target": steps_t,
                "minutes_to_target": min_t,
                "to_target": (
                    "no target"
                    if task.target is None
                    else f"{steps_t:,} / {min_t:.1f} min"
                    if steps_t is not None
                    else f"not reached in {box:g} min"
                ),
                "final_val_return": c["val"]["values"][-1] if c["val"]["values"] else None,
                "val_points": len(c["val"]["values"]),
                "val_points_after_updates": c["val_after_updates"],
                "last_train_mean_reward": c["train"]["values"][-1] if c["train"]["values"] else None,
                "env_steps": c["final_steps"],
                "updates": c["updates"],
                "wall_minutes": c["wall_s"] / 60 if c["wall_s"] is not None else None,
                "stopped_by": c["stopped_by"],
                "rc": c["rc"],
                "load_start": c["load_start"],
                "load_end": c["load_end"],
                "main_cpu_per_wall": c["main_cpu_per_wall"],
                "torch_threads": c.get("torch_threads"),
                "drawn_seed": c.get("drawn_seed"),
                "wandb_agrees": c.get("wandb_agrees"),
            }
        )
    target = "none" if task.target is None else f"val return {task.target}"
    lines = [
        f"### {task.title}: AMAGO v3.3.0 vs amago, the same script and flags (target: {target})",
        "",
        "| side | seed | env steps / min to target | final val return | val points (after updates) "
        "| last train mean reward | env steps reached | updates | wall min | stopped by | main-proc CPU/wall "
        "| load start → end |",
        "|" + "---|" * 12,
    ]
    for r in rows:
        load = f"{fmt(r['load_start'] and r['load_start'][0], '.2f')} → {fmt(r['load_end'] and r['load_end'][0], '.2f')}"
        lines.append(
            f"| {r['side']} | {r['seed']} | {r['to_target']} | {fmt(r['final_val_return'])} "
            f"| {r['val_points']} ({r['val_points_after_updates']}) | {fmt(r['last_train_mean_reward'], '.4f')} "
            f"| {r['env_steps']:,} | {r['updates']:,} | {fmt(r['wall_minutes'], '.1f')} | {r['stopped_by']} "
            f"| {fmt(r['main_cpu_per_wall'], '.2f')} | {load} |"
        )
    if not val_in_box:
        lines += [
            "",
            "No val point after training started was reached in the box on any run (the only val is the untrained "
            "policy's, before the first update): read the last train mean reward (per step, in the sampled "
            f"training sequences: AMAGO `{TRAIN_KEYS['AMAGO']}`, amago `{TRAIN_KEYS['amago']}`) instead.",
        ]
    checks = [
        f"- amago seed {r['seed']}: torch_threads {r['torch_threads']}, drawn seed {r['drawn_seed']}, offline "
        f"wandb agrees with metrics.jsonl on {r['wandb_agrees']}"
        for r in rows
        if r["side"] == "amago"
    ]
    attention_note = (
        "AMAGO's interpreter binds `TformerTrajEncoder.attention_type = VanillaAttention` (gin) through a launcher, "
        "then runs the script file (FlashAttention needs CUDA); amago's default `sdpa` is its counterpart."
        if attention == "launcher"
        else "Both sides get `--configs cpu_attention.gin` (VanillaAttention instead of CUDA-only FlashAttention)."
    )
    lines += [
        "",
        f"CPU attention: {attention_note}",
        "",
        "Checks:",
        "",
        *checks,
        "",
        "Commands (run in each run's folder):",
        "",
        *[f"- {side} seed {seed}: `{c['shown']}`" for (side, seed), c in sorted(present.items())],
        "",
        f"`lscpu` {lscpu_flags()}",
    ]
    table = "\n".join(lines)
    print(table)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{task.name}.md").write_text(table + "\n")
    payload = {
        "task": task.name,
        "script": task.script,
        "flags": list(task.flags),
        "target": task.target,
        "cpu_attention": attention,
        "val_in_box": val_in_box,
        "rows": rows,
        "curves": {f"{side}-{seed}": c for (side, seed), c in present.items()},
        "lscpu_flags": lscpu_flags(),
    }
    (OUT / f"{task.name}.json").write_text(json.dumps(payload, indent=1) + "\n")
    plot(task, present, val_in_box)
    return payload


def plot(task: Task, curves: dict, val_in_box: bool) -> None:
    """Val return against env steps, one line per side and seed; a second panel with the training-sequence mean
    reward when no val point after training started lies inside the box."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 1 if val_in_box else 2
    fig, axes = plt.subplots(1, panels, figsize=(8 * panels, 4.8), squeeze=False)
    colours = {"AMAGO": "tab:blue", "amago": "tab:orange"}
    styles = ["-", "--", ":", "-."]
    for (side, seed), c in sorted(curves.items()):
        label = f"{'AMAGO v3.3.0' if side == 'AMAGO' else 'amago'}, seed {seed}"
        style = dict(ls=styles[(seed - 1) % 4], marker="o", ms=3, color=colours[side], label=label)
        axes[0][0].plot(c["val"]["steps"], c["val"]["values"], **style)
        if panels == 2:
            axes[0][1].plot(c["train"]["steps"], c["train"]["values"], **style)
    if task.target is not None:
        axes[0][0].axhline(task.target, color="grey", lw=0.8, ls=":", label=f"target {task.target}")
    axes[0][0].set_xlabel("env steps (total_frames, all actors)")
    axes[0][0].set_ylabel("val return (Average Total Return)")
    box = max(c["minutes_box"] for c in curves.values())
    axes[0][0].set_title(f"{task.title}\nthe same script and flags, time box {box:g} min")
    axes[0][0].legend(fontsize=7)
    if panels == 2:
        axes[0][1].set_xlabel("env steps (total_frames, all actors)")
        axes[0][1].set_ylabel("mean reward per step in sampled training sequences")
        axes[0][1].set_title("no val after training inside the box: training reward instead")
        axes[0][1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / f"{task.name}.png", dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------------


def preflight_gin(venv: Path) -> None:
    """Both sides must accept ``cpu_attention.gin`` before an hour of runs starts."""
    code = "import sys; from amago import cli_utils; cli_utils.use_config({}, [sys.argv[1]], finalize=False)"
    for side in SIDES:
        result = subprocess.run(
            [str(python_of(side, venv)), "-c", code, str(gin_file())],
            capture_output=True,
            text=True,
            env=environment(OUT),
            check=False,
        )
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["?"])[-1]
            msg = (
                f"{side} refuses {gin_file()} (the CPU attention gin file): {last}\n"
                "Use --cpu-attention launcher (the default), or fix the gin mapping and run again."
            )
            raise SystemExit(msg)


def main() -> None:
    global OUT  # one switch for every path helper: smoke runs write elsewhere
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", choices=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--side", choices=["both", *SIDES], default="both")
    parser.add_argument(
        "--minutes", type=float, help="time box of one run (default: 15 tmaze30, 30 frozenlake)"
    )
    parser.add_argument("--grace", type=float, default=60.0, help="seconds from SIGINT to SIGKILL")
    parser.add_argument(
        "--cpu-attention",
        choices=["launcher", "gin"],
        default="launcher",
        help="how AMAGO's Transformer avoids CUDA-only FlashAttention (see the module docstring)",
    )
    parser.add_argument("--rerun", action="store_true", help="run again what is already on disk")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-amago-ref", help="AMAGO's venv (setup.sh)")
    parser.add_argument("--out-dir", type=Path, default=OUT, help="where runs and tables go")
    args = parser.parse_args()
    OUT = args.out_dir.resolve()
    task = TASKS[args.task]
    minutes = args.minutes or task.minutes
    if args.cpu_attention == "gin" and not task.takes_configs:
        raise SystemExit(f"{task.script} has no --configs flag: use --cpu-attention launcher")
    sides = SIDES if args.side == "both" else (args.side,)
    if not args.dry_run and not args.report_only and "AMAGO" in sides:
        ensure_baseline(args.venv)
    if args.cpu_attention == "gin":
        OUT.mkdir(parents=True, exist_ok=True)
        gin_file().write_text(CPU_GIN)
        if not args.dry_run and not args.report_only:
            preflight_gin(args.venv)
    for seed in [] if args.report_only else args.seeds:
        for side in sides:
            cmd = command(task, side, args.venv, args.cpu_attention)
            meta_path = run_dir(task, side, seed) / "run.json"
            meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
            done = meta.get("cmd") == cmd and meta.get("minutes") == minutes
            if args.dry_run:
                state = " (done)" if done else " (on disk, other command or box: runs again)" if meta else ""
                print(f"{side} seed {seed}{state}: {shown(cmd, run_dir(task, side, seed))}")
            elif not done or args.rerun:
                run_one(task, side, seed, cmd, minutes, args.grace)
    if not args.dry_run:
        report(task, args.seeds, args.venv, args.cpu_attention)


if __name__ == "__main__":
    main()
