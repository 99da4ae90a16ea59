"""``bench/update.py`` and ``bench/throughput.py`` measure any registered trajectory encoder.

The names and ``--traj-option`` values are read in-process (quick); each script's smallest run, for one of
amago-memories' encoders and one built-in, runs in a subprocess and its JSON rows are checked (slow). The FLOP
counter's complex audit is checked on ops whose FLOPs are known.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "bench"

# What bench/vs_amago.py reads from a throughput row: these keys must stay (new ones may be added).
VS_AMAGO_KEYS = {
    "collect_steps_per_s",
    "policy_ceiling_steps_per_s",
    "updates_per_s",
    "mean_update_s",
    "timed_batch_len_mean",
    "update_flops",
    "update_flops_batch_len",
    "policy_step_flops",
    "peak_gflops",
    "startup_s",
    "loadavg_at_start",
}


def load(name: str):
    # bench/ is scripts, not a package: load a script by path, as the benchmarks load each other.
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the module looks its module up there
    spec.loader.exec_module(module)
    return module


def run_script(*args: str, out: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    extra = ["--out", str(out)] if out else []
    return subprocess.run(
        [sys.executable, *args, *extra], capture_output=True, text=True, env=env, timeout=900, check=False
    )


def test_a_built_in_keeps_its_sized_table_and_an_alias_reaches_it() -> None:
    update = load("update")
    tables = update.traj_configs(["transformer", "gru"], [])
    assert tables["transformer"] == update.TRAJ["transformer"]
    assert tables["gru"] == update.TRAJ["rnn"]  # gru is rnn's alias: the same 3 x 128 GRU as every figure


def test_another_name_runs_at_its_defaults_and_options_size_it() -> None:
    update = load("update")
    assert update.traj_configs(["ffm"], []) == {"ffm": {"kind": "ffm"}}
    tables = update.traj_configs(["ffm", "gru"], ["n_layers=3", "ffm:d_model=64", "rnn:d_hidden=64"])
    assert tables["ffm"] == {"kind": "ffm", "n_layers": 3, "d_model": 64}
    assert tables["gru"] == {**update.TRAJ["rnn"], "n_layers": 3, "d_hidden": 64}
    assert update.resolved_config(tables["ffm"])["d_memory"] == 32  # the rest at the config's defaults


@pytest.mark.parametrize(
    ("names", "options", "expected"),
    [
        (["nope"], [], "unknown trajectory encoder 'nope'"),
        (["ffm"], ["d_modle=3"], "did you mean 'd_model'"),
        (["ffm"], ["d_model=wide"], "valid integer"),
        (["ffm", "gru"], ["d_model=64"], "--traj-option for gru: d_model: unknown field"),
        (["ffm"], ["lru:d_model=64"], "'lru' is not among the encoders measured"),
        (["ffm"], ["d_model"], "must look like KEY=VALUE"),
        (["ffm"], ["kind=lru"], "name the encoder"),
    ],
)
def test_a_bad_name_or_option_is_one_line(names: list[str], options: list[str], expected: str) -> None:
    update = load("update")
    with pytest.raises(update.UsageError) as caught:
        update.traj_configs(names, options)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unknown_name_lists_the_registered_ones() -> None:
    update = load("update")
    with pytest.raises(update.UsageError) as caught:
        update.traj_configs(["nope"], [])
    for name in ("ffm", "gtrxl", "transformer", "rnn"):
        assert name in str(caught.value)


def test_complex_matmuls_count_their_real_flops_and_complex_elementwise_work_is_reported() -> None:
    flops = load("flops")
    a, b = torch.randn(3, 4, dtype=torch.cfloat), torch.randn(4, 5, dtype=torch.cfloat)
    assert flops.count_flops(torch.mm, a, b)[0] == 2 * 3 * 4 * 5  # outside an audit: the counter's own figure
    with flops.auditing_complex() as audit:
        # A complex multiply-add is 4 real multiplies and 4 real adds.
        assert flops.count_flops(torch.mm, a, b)[0] == 8 * 3 * 4 * 5
        assert flops.count_flops(lambda: a * a + 1)[0] == 0  # element-wise: not in the total
        real = torch.randn(3, 4)
        assert flops.count_flops(torch.mm, real, real.T)[0] == 2 * 3 * 4 * 3  # real work: unchanged
    assert audit.matmul_ops == {"mm": 1}
    assert audit.matmul_flops == 8 * 3 * 4 * 5
    assert audit.elementwise_ops == 2
    assert audit.elementwise_flops == 6 * 12 + 2 * 12  # complex x complex multiply, add of a real
    assert "complex matmuls (mm)" in audit.note(1000)
    assert "complex element-wise ops are not counted" in audit.note(1000)
    assert flops.ComplexAudit(**audit.to_json()).note(1000) == audit.note(1000)


def test_real_work_leaves_the_audit_empty() -> None:
    flops = load("flops")
    layer = torch.nn.Linear(8, 16, bias=False)
    with flops.auditing_complex() as audit:
        counted, _ = flops.count_flops(lambda: layer(torch.randn(32, 8)).sum().backward())
    assert counted == 2 * 2 * 32 * 8 * 16  # forward and grad_W (the input needs no grad)
    assert audit.note(counted) is None
    assert audit.to_json() == {
        "matmul_ops": {},
        "matmul_flops": 0,
        "elementwise_ops": 0,
        "elementwise_flops": 0,
    }


@pytest.mark.slow  # ~3.5 s each: the scripts import torch and amago before reading their arguments
@pytest.mark.parametrize("script", ["update.py", "throughput.py"])
def test_the_scripts_refuse_an_unknown_name_in_one_line(script: str) -> None:
    flag = "--encoders" if script == "update.py" else "--encoder"
    done = run_script(str(BENCH / script), flag, "ffm", "nope")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "unknown trajectory encoder 'nope'" in lines[0]
    assert "linear_attention" in lines[0]  # the registered names are listed


@pytest.mark.slow
def test_update_measures_a_new_memory_and_a_built_in(tmp_path: Path) -> None:
    out = tmp_path / "update.json"
    done = run_script(
        str(BENCH / "update.py"), "--encoders", "lru", "gru", "--updates", "1", "--warmup", "1", out=out
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [row["encoder"] for row in rows] == ["lru", "gru"]
    lru, gru = rows
    assert lru["traj_encoder"]["kind"] == "lru"
    assert lru["traj_table"] == {"kind": "lru"}
    assert gru["traj_encoder"]["kind"] == "rnn"
    assert gru["traj_encoder"]["n_layers"] == 3
    for row in rows:
        assert row["updates_per_s"] > 0
        assert row["policy_steps_per_s"] > 0
        assert row["update_flops"] > 0
        assert row["policy_step_flops"] > 0
        assert row["update_mfu"] > 0
        assert row["policy_mfu"] > 0
    # LRU's recurrence is complex and element-wise: said so, and no complex matmul was counted wrong.
    assert lru["update_flops_audit"]["elementwise_ops"] > 0
    assert not lru["update_flops_audit"]["matmul_ops"]
    assert "complex element-wise ops are not counted" in lru["update_flops_note"]
    assert gru["update_flops_note"] is None
    assert gru["policy_flops_note"] is None
    assert "lru " in done.stdout
    assert "gru " in done.stdout


@pytest.mark.slow
def test_throughput_measures_a_new_memory_and_a_built_in_one_process_each(tmp_path: Path) -> None:
    out = tmp_path / "throughput.json"
    done = run_script(
        str(BENCH / "throughput.py"),
        *("--encoder", "ffm", "transformer", "--actors", "2"),
        *("--collect-calls", "1", "--updates", "2", "--warmup", "1", "--flop-batches", "1"),
        out=out,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert rows == json.loads(done.stdout)
    assert [(row["encoder"], row["actors"]) for row in rows] == [("ffm", 2), ("transformer", 2)]
    ffm, transformer = rows
    for row in rows:
        assert row.keys() >= VS_AMAGO_KEYS
        assert row["collect_steps_per_s"] > 0
        assert row["updates_per_s"] > 0
        assert row["update_flops"] > 0
        assert row["policy_step_flops"] > 0
        assert row["update_mfu"] > 0
        assert row["collect_mfu"] > 0
    assert transformer["traj_table"]["d_model"] == 128
    assert transformer["traj_table"]["n_layers"] == 3
    assert ffm["traj_encoder"]["kind"] == "ffm"
    assert "complex element-wise ops are not counted" in ffm["update_flops_note"]
    assert transformer["update_flops_note"] is None
    # Each row announced as its process starts, then the summary table with the rows' FLOP notes.
    assert "== ffm at 2 actors" in done.stderr
    assert "== transformer at 2 actors" in done.stderr
    assert "traj encoder" in done.stderr
    assert "ffm at 2 actors, update FLOPs" in done.stderr
