"""`amago migrate-gin`, `amago import-amago`, `amago plot` and `amago doctor RUN_DIR` held to `amago run`'s standard
(issue 42): a hostile input is one line, and nothing is written through a link or outside the folder named.

Written as an attacker would: gin files whose macros nest thousands deep or expand past any memory, an AMAGO run
folder whose ``config.txt`` does the same, an output folder that is a symlink or holds links to someone else's
files, a ``metrics.jsonl`` line nested past what Python parses, and a run folder linking to a big folder elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import amago, snapshot

from amago.from_amago.gin import GinSyntaxError, parse_gin, read_gin, resolve_macros
from amago.from_amago.gin.syntax import MAX_GIN_DEPTH, MAX_GIN_VALUE_ITEMS, MAX_INCLUDE_DEPTH

AMAGO_RUN = Path(__file__).parents[1] / "compat" / "fixtures" / "amago_checkpoints" / "ff"
"""A real AMAGO v3.3.0 run folder (ckpts/config.txt and its weights), made by AMAGO itself."""
BINDING = "TformerTrajEncoder.n_layers"
"""A binding migrate-gin translates, so that its value (and the macros in it) is read."""


def only_error_line(result) -> str:
    """The one line a refused command prints (nothing else: no traceback, no notes)."""
    lines = result.output.strip().splitlines()
    assert result.exit_code != 0, result.output
    assert len(lines) == 1, result.output
    assert lines[0].startswith("amago: error: "), result.output
    return lines[0]


def macro_chain(steps: int, wrap: str = "%{}") -> str:
    """A binding whose value is macro ``m0``, each ``m{i}`` defined by ``m{i+1}`` (in ``wrap``)."""
    lines = [f"{BINDING} = %m0"]
    lines += [f"m{i} = {wrap.format(f'm{i + 1}')}" for i in range(steps)]
    lines.append(f"m{steps} = 1")
    return "\n".join(lines) + "\n"


# ---- gin: every value nests at most MAX_GIN_DEPTH levels, macros followed ----------------------------------


@pytest.mark.parametrize(
    ("what", "text"),
    [
        ("macro chain", macro_chain(5000)),
        ("macros in lists", macro_chain(5000, "[%{}]")),
        ("macros in dicts", macro_chain(5000, "{{'a': %{}}}")),
        ("nested lists", f"{BINDING} = {'[' * 300}{']' * 300}\n"),
        (
            "lists just past the bound",
            f"{BINDING} = {'[' * (MAX_GIN_DEPTH + 1)}{']' * (MAX_GIN_DEPTH + 1)}\n",
        ),
        ("nested dicts", f"{BINDING} = {'{1: ' * 150}1{'}' * 150}\n"),
        ("unary chain", f"{BINDING} = {'- ' * 5000}1\n"),
        ("operator chain", f"{BINDING} = {'1 + ' * 5000}1\n"),
    ],
)
def test_migrate_gin_refuses_deep_nesting_in_one_line(tmp_path, what, text):
    gin_file = tmp_path / "deep.gin"
    gin_file.write_text(text)
    line = only_error_line(amago("migrate-gin", str(gin_file)))
    assert f"{gin_file}:1: " in line
    assert f"more than {MAX_GIN_DEPTH} levels deep" in line or "more deeply than Python can parse" in line


def test_the_bound_is_exact_and_counts_macros_followed(tmp_path):
    at_bound = tmp_path / "at.gin"
    at_bound.write_text(f"{BINDING} = {'[' * MAX_GIN_DEPTH}1{']' * MAX_GIN_DEPTH}\n")
    value = read_gin(at_bound)[0].value
    for _ in range(MAX_GIN_DEPTH):
        (value,) = value
    assert value == 1
    # A binding through MAX_GIN_DEPTH macros to a plain value reads; two more is refused.
    (tmp_path / "chain.gin").write_text(macro_chain(MAX_GIN_DEPTH - 1))
    assert len(read_gin(tmp_path / "chain.gin")) == MAX_GIN_DEPTH + 1
    (tmp_path / "past.gin").write_text(macro_chain(MAX_GIN_DEPTH + 1))
    with pytest.raises(
        GinSyntaxError, match=f"past.gin:1: {BINDING}: its value, %MACROS replaced, nests more"
    ):
        read_gin(tmp_path / "past.gin")


def test_macros_that_expand_past_any_memory_are_refused(tmp_path):
    # Each macro lists the next four times: 4**12 (16 million) values from 14 lines.
    gin_file = tmp_path / "expands.gin"
    gin_file.write_text(macro_chain(12, "[%{0}, %{0}, %{0}, %{0}]"))
    line = only_error_line(amago("migrate-gin", str(gin_file)))
    assert f"{gin_file}:1: {BINDING}: its value, %MACROS replaced, expands to more than" in line
    assert f"{MAX_GIN_VALUE_ITEMS:,} values" in line


def test_includes_nest_at_most_the_bound(tmp_path):
    for i in range(MAX_INCLUDE_DEPTH + 5):
        (tmp_path / f"f{i}.gin").write_text(f"include 'f{i + 1}.gin'\n")
    (tmp_path / f"f{MAX_INCLUDE_DEPTH + 5}.gin").write_text(f"{BINDING} = 2\n")
    line = only_error_line(amago("migrate-gin", str(tmp_path / "f0.gin")))
    assert f"includes nest more than {MAX_INCLUDE_DEPTH} files deep" in line


def test_resolve_macros_bounds_the_depth_of_what_it_is_given():
    # parse_gin reads text without the whole-file check read_gin makes: resolving is bounded on its own.
    statements = parse_gin(macro_chain(5000))
    macros = {s.target: s for s in statements if s.parameter is None}
    with pytest.raises(ValueError, match=f"more than {MAX_GIN_DEPTH} levels deep"):
        resolve_macros(statements[0].value, macros)


def test_a_deep_value_names_its_file_and_line():
    with pytest.raises(GinSyntaxError, match=r"^x\.gin:2: the value .* more than 64 levels deep"):
        parse_gin(f"A.b = 1\nA.c = {'(' * 100}1{')' * 100}\n", "x.gin")


# ---- import-amago: one line for a deep config.txt; writes only into a real folder of its own ---------------


def amago_run_copy(tmp_path: Path, config_text: str | None = None) -> Path:
    run = tmp_path / "amago-run"
    shutil.copytree(AMAGO_RUN, run)
    if config_text is not None:
        (run / "ckpts" / "config.txt").write_text(config_text)
    return run


def someone_elses_folder(tmp_path: Path) -> Path:
    foreign = tmp_path / "someone-else"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not yours")
    (foreign / "policy.safetensors").write_bytes(b"their weights")
    return foreign


def test_import_amago_refuses_a_deep_config_txt_in_one_line(tmp_path):
    text = (AMAGO_RUN / "ckpts" / "config.txt").read_text() + macro_chain(5000)
    run = amago_run_copy(tmp_path, text)
    line = only_error_line(amago("import-amago", str(run), str(tmp_path / "out")))
    assert f"more than {MAX_GIN_DEPTH} levels deep" in line
    assert not (tmp_path / "out").exists()


def test_import_amago_never_writes_through_a_symlinked_output(tmp_path):
    foreign = someone_elses_folder(tmp_path)
    before = snapshot(foreign)
    (tmp_path / "out").symlink_to(foreign, target_is_directory=True)
    line = only_error_line(amago("import-amago", str(AMAGO_RUN), str(tmp_path / "out")))
    assert "out is a symlink" in line
    assert snapshot(foreign) == before


def test_import_amago_refuses_the_default_output_planted_as_a_link(tmp_path):
    run = amago_run_copy(tmp_path)
    foreign = someone_elses_folder(tmp_path)
    before = snapshot(foreign)
    (tmp_path / "amago-run-amago").symlink_to(foreign, target_is_directory=True)
    line = only_error_line(amago("import-amago", str(run)))
    assert "amago-run-amago is a symlink" in line
    assert snapshot(foreign) == before


@pytest.mark.parametrize("planted", ["ckpts/policy_weights", "ckpts/latest", "plots", "config.resolved.json"])
def test_import_amago_overwrite_never_writes_through_a_planted_link(tmp_path, planted):
    out = tmp_path / "out"
    assert amago("import-amago", str(AMAGO_RUN), str(out)).exit_code == 0
    foreign = someone_elses_folder(tmp_path)
    link = out / planted
    shutil.rmtree(link) if link.is_dir() else link.unlink()
    link.symlink_to(foreign / "notes.txt" if planted.endswith(".json") else foreign)
    before_out, before_foreign = snapshot(out), snapshot(foreign)
    line = only_error_line(amago("import-amago", str(AMAGO_RUN), str(out), "--overwrite"))
    assert f"{planted} is a symlink" in line
    # Every path is checked before the first file is written: the refused import changed nothing at all.
    assert snapshot(out) == before_out
    assert snapshot(foreign) == before_foreign


def test_import_amago_overwrite_replaces_a_hard_linked_file_without_changing_its_other_name(tmp_path):
    out = tmp_path / "out"
    assert amago("import-amago", str(AMAGO_RUN), str(out)).exit_code == 0
    theirs = tmp_path / "theirs.json"
    theirs.write_text('{"mine": true}\n')
    (out / "spaces.json").unlink()
    os.link(theirs, out / "spaces.json")
    result = amago("import-amago", str(AMAGO_RUN), str(out), "--overwrite")
    assert result.exit_code == 0, result.output
    assert theirs.read_text() == '{"mine": true}\n'
    assert json.loads((out / "spaces.json").read_text())["agent"]["action_space"]["type"] == "Discrete"


@pytest.mark.parametrize("overwrite", [(), ("--overwrite",)])
def test_import_amago_never_writes_into_a_folder_of_other_files(tmp_path, overwrite):
    out = someone_elses_folder(tmp_path)
    before = snapshot(out)
    line = only_error_line(amago("import-amago", str(AMAGO_RUN), str(out), *overwrite))
    assert "holds files but no amago run" in line
    assert snapshot(out) == before


def test_import_amago_refuses_a_run_another_process_holds(tmp_path):
    from amago_core.experiment.run_lock import acquire

    out = tmp_path / "out"
    assert amago("import-amago", str(AMAGO_RUN), str(out)).exit_code == 0
    lock = acquire(out, "mode both")
    try:
        before = snapshot(out)
        line = only_error_line(amago("import-amago", str(AMAGO_RUN), str(out), "--overwrite"))
        assert "is in use by another amago process" in line
        assert snapshot(out) == before
    finally:
        if lock is not None:
            lock.release()


def test_import_amago_of_the_current_folder_writes_next_to_it(tmp_path, monkeypatch):
    run = amago_run_copy(tmp_path)
    monkeypatch.chdir(run)
    result = amago("import-amago", ".")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "amago-run-amago" / "config.resolved.json").is_file()


# ---- plot: figures only inside RUN/plots, all checked before the first is drawn ----------------------------


def metrics_run(tmp_path: Path, *extra_lines: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    records = [
        {"step": i, "total_frames": 10 * i, "val/Average Total Return (Across All Env Names)": i / 4}
        for i in range(4)
    ]
    records += [{"step": 4, "gradient_steps": 8, "train/Loss": 0.5}]
    lines = [json.dumps(record) for record in records]
    (run / "metrics.jsonl").write_text("\n".join([*lines[:2], *extra_lines, *lines[2:]]) + "\n")
    return run


def test_plot_skips_a_line_nested_past_what_python_parses_and_says_so(tmp_path):
    run = metrics_run(tmp_path, '{"val/x": ' + "[" * 5000 + "]" * 5000 + "}")
    result = amago("plot", str(run))
    assert result.exit_code == 0, result.output
    assert "amago: warning: skipped 1 line(s) of" in result.stderr
    assert "nested more deeply than Python parses" in result.stderr
    assert (run / "plots" / "returns.png").is_file()


def test_plot_refuses_a_file_where_its_plots_go_in_one_line(tmp_path):
    run = metrics_run(tmp_path)
    (run / "plots").write_text("mine")
    line = only_error_line(amago("plot", str(run)))
    assert "plots is a file where amago draws the run's plots" in line
    assert (run / "plots").read_text() == "mine"


def test_plot_writes_no_figure_when_a_later_one_is_a_link(tmp_path):
    run = metrics_run(tmp_path)
    foreign = someone_elses_folder(tmp_path)
    before = snapshot(foreign)
    (run / "plots").mkdir()
    (run / "plots" / "training.png").symlink_to(foreign / "notes.txt")
    line = only_error_line(amago("plot", str(run)))
    assert "training.png is a symlink" in line
    assert sorted(path.name for path in (run / "plots").iterdir()) == ["training.png"]
    assert snapshot(foreign) == before


def test_plot_replaces_a_hard_linked_figure_without_changing_its_other_name(tmp_path):
    # Written in place (open(path, "wb")), the figure would overwrite the photo that shares its file.
    run = metrics_run(tmp_path)
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"my holiday photo")
    (run / "plots").mkdir()
    os.link(photo, run / "plots" / "returns.png")
    result = amago("plot", str(run))
    assert result.exit_code == 0, result.output
    assert photo.read_bytes() == b"my holiday photo"
    assert (run / "plots" / "returns.png").read_bytes().startswith(b"\x89PNG")


# ---- doctor RUN_DIR: reads only, follows no link -----------------------------------------------------------


def big_folder(tmp_path: Path) -> Path:
    big = tmp_path / "big"
    big.mkdir()
    (big / "blob.bin").write_bytes(os.urandom(3_000_000))
    return big


def test_doctor_never_follows_a_link_to_a_big_folder_and_lists_it(tmp_path):
    run = metrics_run(tmp_path)
    big = big_folder(tmp_path)
    (run / "videos").symlink_to(big, target_is_directory=True)
    (run / "ckpts").mkdir()
    (run / "ckpts" / "latest").symlink_to(big, target_is_directory=True)
    before_run, before_big = snapshot(run), snapshot(big)
    result = amago("doctor", str(run), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["bytes"] < 1_000_000
    assert report["files"] == 1  # metrics.jsonl: the links are neither followed nor counted
    assert {entry["path"] for entry in report["symlinks_not_followed"]} == {
        str(run / "videos"),
        str(run / "ckpts" / "latest"),
    }
    text = amago("doctor", str(run))
    assert "not followed: 2 symlink(s), whose targets are not counted" in text.stdout
    assert snapshot(run) == before_run
    assert snapshot(big) == before_big


def test_doctor_follows_no_link_at_an_outside_buffer(tmp_path):
    run = metrics_run(tmp_path)
    big = big_folder(tmp_path)
    (tmp_path / "buffers" / "shared").mkdir(parents=True)
    (tmp_path / "buffers" / "shared" / "buffer").symlink_to(big, target_is_directory=True)
    record = {"replay": {"dset_root": str(tmp_path / "buffers"), "dset_name": "shared"}}
    (run / "config.resolved.json").write_text(json.dumps(record))
    result = amago("doctor", str(run), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["bytes"] < 1_000_000
    assert [entry["path"] for entry in report["symlinks_not_followed"]] == [
        str(tmp_path / "buffers" / "shared" / "buffer")
    ]


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ("[" * 5000 + "]" * 5000, "nests more deeply than Python parses"),
        ('{"schedule": [1], "replay": {"dset_root": 5, "dset_name": []}, "run": "x"}', None),
        ("[1]", "holds no JSON object"),
    ],
    ids=["deep", "odd tables", "no object"],
)
def test_doctor_reports_a_run_whose_record_is_hostile(tmp_path, record, said):
    run = metrics_run(tmp_path)
    (run / "config.resolved.json").write_text(record)
    result = amago("doctor", str(run), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    parts = {part["part"]: part for part in report["parts"]}
    assert parts["training states"]["bound"] == "newest ? (schedule.keep_states)"
    assert parts["buffer files"]["path"] == str(run / "buffer")
    if said is not None:
        assert any(said in note for note in report["notes"]), report["notes"]


def test_doctor_build_check_skips_output_nested_past_what_python_parses(monkeypatch):
    from amago_tools import doctor_build

    deep = "[" * 5000 + "]" * 5000
    rows = [deep, json.dumps({"label": "agents:ok", "ok": True})]

    def finished(*args, **kwargs):
        return subprocess.CompletedProcess(args, 0, stdout="\n".join(rows) + "\n", stderr="")

    monkeypatch.setattr(doctor_build.subprocess, "run", finished)
    failures, unchecked, _ = doctor_build.find_failing_builds(["agents:ok"])
    assert (failures, unchecked) == ({}, [])
