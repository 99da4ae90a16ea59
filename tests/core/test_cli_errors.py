"""CLI errors are one line: amago's own checks print their message; anything else says it was unexpected."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.cli.errors import error_lines

runner = CliRunner()


def test_a_check_amago_raises_with_a_builtin_type_prints_just_its_message(tmp_path):
    # plot_run raises FileNotFoundError itself, with a message that says what to do: no "unexpected" label.
    result = runner.invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"amago: error: {tmp_path} has no metrics.jsonl; is it an amago run folder (`{{ckpt_base_dir}}/{{run_name}}`)?\n"
    )


def test_an_error_raised_outside_amago_is_labelled_unexpected_with_the_way_to_see_more():
    with pytest.raises(ValueError, match="cannot reshape") as info:
        np.zeros(3).reshape(4)
    (line,) = error_lines(info.value)
    assert line.startswith("ValueError: cannot reshape array of size 3")
    assert line.endswith("(unexpected; rerun with --debug or AMAGO_DEBUG=1 for the traceback)")


def test_debug_shows_the_traceback_instead(tmp_path):
    result = runner.invoke(app, ["plot", str(tmp_path), "--debug"])
    assert isinstance(result.exception, FileNotFoundError)


def test_a_library_error_that_names_a_reduced_precision_dtype_points_to_fp32():
    # What torch says when a kernel has no bf16 version (the Beta policy's Dirichlet sampler did, issue 39).
    try:
        raise NotImplementedError("\"dirichlet\" not implemented for 'BFloat16'")
    except NotImplementedError as exc:
        (line,) = error_lines(exc)
    assert "-o optim.mixed_precision=no trains in fp32" in line
    assert line.endswith("rerun with --debug or AMAGO_DEBUG=1 for the traceback)")
