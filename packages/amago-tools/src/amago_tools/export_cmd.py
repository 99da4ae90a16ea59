"""`amago export`: a run's policy step, with its memory as explicit inputs and outputs, as TorchScript and ONNX.

torch is imported only inside the command body.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from amago_core.cli.errors import RUNTIME_ERROR, DebugFlag, debugging, one_line_errors
from amago_core.cli.eval_cmd import refuse_fixed_settings
from amago_core.cli.output import fail

FORMAT_CHOICES = {"torchscript": ["torchscript"], "onnx": ["onnx"], "both": ["torchscript", "onnx"]}
"""``--format`` values and the files each writes."""
EXPORT_SETTINGS = ("env.*",)
"""What ``amago export -o`` may set: options of the env the files are checked on (its kind stays the run's: the
exported step takes that env's observations). The policy itself is its weights'."""


def export_command(
    run_dir: Annotated[Path, typer.Argument(help="A run folder: {ckpt_base_dir}/{run_name}.")],
    epoch: Annotated[
        int | None, typer.Option("--epoch", help="Weights of this epoch (default: latest).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Where to write the files (default: RUN_DIR/export).")
    ] = None,
    file_format: Annotated[str, typer.Option("--format", help="torchscript | onnx | both.")] = "both",
    n_envs: Annotated[
        int, typer.Option("--n-envs", min=1, help="Envs the exported step takes at once (its batch size).")
    ] = 1,
    override: Annotated[
        list[str] | None,
        typer.Option(
            "-o",
            "--override",
            help="env.OPTION=VALUE, as for `amago run`; repeatable. Options of the env the files are checked on "
            "(e.g. a data path on this machine); the rest is what the policy was trained with.",
        ),
    ] = None,
    debug: DebugFlag = False,
) -> None:
    """Write the policy's step function (obs, rl2, time_idx, memory -> action, memory), checked against the
    eager agent on a recorded rollout, plus policy_step.json describing its inputs and outputs.

    Exits 0 when at least one format was written (a skipped one gets a warning line saying why) and 1 when none
    was.
    """
    from amago_tools.export import EXPORT_EXTRA, ONNX_MODULES, export_policy, onnx_available
    from amago_tools.policy.loader import PolicyLoadError

    env_options = list(override or [])
    refuse_fixed_settings(env_options, EXPORT_SETTINGS, "export")
    formats = FORMAT_CHOICES.get(file_format)
    if formats is None:
        fail(f"--format must be torchscript, onnx or both (got {file_format!r})")
    if formats == ["onnx"] and not onnx_available():
        fail(f"ONNX export needs {', '.join(ONNX_MODULES)}: {EXPORT_EXTRA}")
    debug = debugging(debug)
    with one_line_errors(debug):
        try:
            report = export_policy(
                run_dir, out, epoch=epoch, formats=formats, n_envs=n_envs, env_options=env_options
            )
        except PolicyLoadError as exc:
            if debug:
                raise
            fail(str(exc))
    for result in report.results:
        if result.path is not None:
            sys.stdout.write(
                f"wrote {result.path} ({result.format}; max abs diff {result.max_abs_diff:.1e} from the eager agent "
                f"over {result.steps_checked} recorded steps)\n"
            )
    if report.manifest is not None:
        sys.stdout.write(f"wrote {report.manifest} (inputs, outputs, memory and spaces of the step)\n")
    failed = [result for result in report.results if result.path is None]
    if len(failed) == len(report.results):
        # Nothing written: that is a failure, whatever the formats asked for.
        for result in failed[:-1]:
            sys.stderr.write(f"amago: error: {result.format}: {result.error}\n")
        fail(f"{failed[-1].format}: {failed[-1].error}", code=RUNTIME_ERROR)
    # Something was written: a script that checks the exit status gets 0 and can use those files.
    for result in failed:
        sys.stderr.write(f"amago: warning: skipped {result.format}: {' '.join(str(result.error).split())}\n")
