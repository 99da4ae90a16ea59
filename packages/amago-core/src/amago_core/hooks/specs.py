"""pluggy hook specifications: the 1:N extension points where several plugins all take part.

A plugin implements hooks in a torch-free module and registers that module under the ``amago``
entry-point group::

    [project.entry-points.amago]
    my_logger = "my_pkg.amago_hooks"

    # my_pkg/amago_hooks.py
    from amago_core.hooks import hookimpl

    @hookimpl
    def amago_log_backends(run_dir, config):
        return MyBackend(run_dir)

Component registration (encoders, agents, envs...) does not go through pluggy: listing must not import
every plugin. Hook modules are imported when the CLI starts, so they must stay cheap (no torch at import).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pluggy

PROJECT_NAME = "amago"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@runtime_checkable
class LogBackend(Protocol):
    """Where metrics go. Every record carries its x-axes (``total_frames``, ``Epoch``, ``gradient_steps``)."""

    def log(self, metrics: dict[str, Any], *, step: int) -> None:
        """Records one flat dict of metrics (``"val/Average Total Return (Across All Env Names)"``: 1.0)."""

    def close(self) -> None:
        """Flushes and releases resources at the end of the run."""


@runtime_checkable
class RunView(Protocol):
    """What the experiment hooks (``amago_on_epoch_end``, ``amago_on_evaluation``, ``amago_on_checkpoint``) see of
    the running experiment: its settings, folder and progress, and one way to act on it."""

    @property
    def config(self) -> Any:
        """The run's validated ``amago_core.config.experiment.ExperimentConfig``."""

    @property
    def paths(self) -> Any:
        """The run folder's ``amago_core.experiment.run_dir.RunPaths`` (``root``, ``metrics``, checkpoints)."""

    @property
    def epoch(self) -> int:
        """The epoch running (or just finished)."""

    @property
    def total_frames(self) -> int:
        """Env steps collected so far, over every process."""

    @property
    def grad_update_counter(self) -> int:
        """Optimiser updates so far."""

    def request_stop(self) -> None:
        """Ends the run after the current epoch (a checkpoint is written, as after its last epoch)."""


@dataclass(frozen=True)
class RunOption:
    """One option a plugin adds to ``amago run`` (and to ``amago config show``, which takes the same options)
    through ``amago_run_options``, or to ``amago eval`` through ``amago_eval_options``.

    Attributes:
        name: the Python parameter name; its value reaches the run hooks as ``RunRequest.options[name]`` (the
            eval hooks: ``EvalRequest.options[name]``).
        annotation: the Typer declaration, e.g. ``Annotated[str | None, typer.Option("--seeds", help=...)]``.
        default: the value when the option is not given (None: "not given", which the run hooks can test).
    """

    name: str
    annotation: Any
    default: Any = None


@dataclass(frozen=True)
class RunRequest:
    """What ``amago run`` was asked, as the run hooks see it.

    Attributes:
        options: every option of the command by parameter name (amago's own and every plugin's), as given.
        argv: the command line after the program name (``sys.argv[1:]``), for a plugin that starts child runs.
        plan: the ``amago_core.config.resolve.RunPlan`` that will run: as resolved in ``amago_plan_run``,
            resolved and sized in ``amago_run_planned``; None in ``amago_run_begin``. Typed loosely because hooks
            sit below the config layer.
        resolved: the plan as resolved from the sources, before ``amago_plan_run`` or ``--smoke`` changed it
            (``amago_plan_run`` and ``amago_run_planned``; None in ``amago_run_begin``).
    """

    options: Mapping[str, Any]
    argv: Sequence[str] = field(default_factory=tuple)
    plan: Any = None
    resolved: Any = None


def _no_backends(kind: str, paths: Sequence[Path]) -> None:
    """``EvalRequest.log_files`` before the evaluation's backends are open: nothing takes files yet."""


@dataclass(frozen=True)
class EvalRequest:
    """What ``amago eval`` was asked, as the eval hooks see it.

    Attributes:
        options: every option of the command by parameter name (amago's own and every plugin's), as given.
        run_dir: the run folder evaluated.
        section: where the metrics are logged: ``test``, or ``test-<tasks>`` for ``--tasks`` other than test.
        epoch: the epoch of the evaluated weights (``--epoch``, or the newest training state's); None in
            ``amago_eval_begin``, and when no training state says it.
        log_files: ``log_files(kind, paths)`` sends files to the evaluation's backends that take files of that
            kind, as ``{section}/{kind}`` with the weights' x-axes (amago-wandb takes ``videos``); does nothing
            in ``amago_eval_begin``.
    """

    options: Mapping[str, Any]
    run_dir: Path
    section: str = "test"
    epoch: int | None = None
    log_files: Callable[[str, Sequence[Path]], None] = _no_backends


class AmagoHookSpecs:
    """The hooks amago calls. Implementations take any subset of the arguments, by name."""

    @hookspec
    def amago_log_backends(
        self, run_dir: Path, config: dict[str, Any]
    ) -> LogBackend | list[LogBackend] | None:
        """Returns the log backend(s) this plugin contributes to a run (or None to stay out).

        Args:
            run_dir: the run's folder, ``{ckpt_base_dir}/{run_name}``.
            config: the resolved experiment config as a JSON-safe dict.
        """

    @hookspec
    def amago_eval_log_backends(
        self, run_dir: Path, config: dict[str, Any], metrics: Path
    ) -> LogBackend | list[LogBackend] | None:
        """Backends ``amago eval`` adds for a finished run's test records, beside its file ``metrics``
        (amago-wandb: the training's own wandb run, resumed). ``config`` is the run's record as written. A plugin
        that cannot add its backend here says why in one line on stderr and returns None."""

    @hookspec
    def amago_on_start(self, experiment: RunView) -> None:
        """Called once ``start()`` has built a training run (main process; not ``amago eval``'s), before its first
        step: e.g. to say how long it will take (amago-tools), or to record where it runs."""

    @hookspec
    def amago_on_epoch_end(self, experiment: RunView, epoch: int, metrics: dict[str, Any]) -> None:
        """Called after every epoch (trained or not) with that epoch's metrics: ``val/``, ``train/`` (the last
        logged step), ``dataset/`` and the x-axes. ``experiment.request_stop()`` ends the run after it."""

    @hookspec
    def amago_on_evaluation(self, experiment: RunView, split: str, metrics: dict[str, Any]) -> None:
        """Called after an evaluation; ``split`` is ``val``, ``test``, or ``test-<tasks>`` for `amago eval --tasks`
        on other tasks than the run's test split (``test-unseen``, ``test-train``, ``test-val``)."""

    @hookspec
    def amago_on_checkpoint(self, experiment: RunView, epoch: int, path: Path) -> None:
        """Called after a checkpoint is written to ``path``."""

    @hookspec
    def amago_on_interact_step(self, experiment: RunView, obs: dict[str, Any], time_idx: Any) -> None:
        """Called before every action while the policy interacts (collection, validation, test; in every process
        that steps envs, Ray actors too) with the observations it acts on next, key -> ``(envs, *shape)`` array
        (read only), and ``time_idx``, ``(envs,)`` steps since each row's episode began (0: a new episode).

        It runs once per env step, so keep it cheap; a run where no plugin implements it (and no subclass
        overrides ``Experiment.on_interact_step``) never calls it and pays nothing."""

    @hookspec(firstresult=True)
    def amago_default_job(self) -> dict[str, Any] | None:
        """The config `amago run` uses when no env is given anywhere (the first plugin to answer wins).

        The ``amago`` meta-package answers with its embedded main job; amago-core names no component itself.
        """

    @hookspec
    def amago_cli_commands(self, app: Any) -> None:
        """Adds commands to the ``amago`` Typer app (``app.command()(my_function)``)."""

    @hookspec
    def amago_run_options(self) -> Sequence[RunOption] | None:
        """Options this plugin adds to ``amago run`` and ``amago config show`` (read when the CLI is built).

        A name amago's own options or another plugin already use is refused with one line naming both.
        """

    @hookspec(firstresult=True)
    def amago_run_begin(self, request: RunRequest) -> int | None:
        """Called by ``amago run`` before it resolves the config: check your options' values (exit with
        ``amago_core.cli.output.fail``), or run the command your own way and return its exit code (for example
        a ``--resume`` folder that holds several runs); None lets ``amago run`` go on."""

    @hookspec(firstresult=True)
    def amago_plan_run(self, request: RunRequest) -> Any:
        """Called by ``amago run`` once ``request.plan`` is resolved (a ``--resume`` folder checked), before
        ``--smoke`` sizes it and before ``amago_run_planned``: return the ``RunPlan`` to run instead (e.g.
        ``request.plan.sized(settings)``: amago-tools sizes it to ``--budget`` or ``--steps``), or None to keep
        it; the first answer wins. Check your options against the plan here (``amago_core.cli.output.fail``).

        amago-tools (a wrapper of this hook) checks the run's env processes against this machine's cores and
        memory before any implementation runs, unless ``--dry-run``, ``--smoke`` or ``--no-preflight`` was given;
        a hook that starts them on a dry run (``--budget`` measures a throw-away copy of the run) checks them
        first itself (``amago_tools.preflight.check_env_processes``)."""

    @hookspec(firstresult=True)
    def amago_run_planned(self, request: RunRequest) -> int | None:
        """Called by ``amago run`` once ``request.plan`` is resolved and sized, before anything is written: run
        the plan your own way and return the exit code (for example one child run per seed), or None to let
        ``amago run`` train it."""

    @hookspec
    def amago_eval_options(self) -> Sequence[RunOption] | None:
        """Options this plugin adds to ``amago eval`` (read when the CLI is built), after amago's own. A name
        amago's own options or another plugin already use is refused with one line naming both."""

    @hookspec
    def amago_eval_begin(self, request: EvalRequest) -> Sequence[str] | None:
        """Called by ``amago eval`` once the run folder and ``--tasks`` are checked, before the run is loaded:
        check your options' values here (exit with ``amago_core.cli.output.fail``). Return ``-o`` items to apply
        to the run's config: the settings your option stands for, checked by you (they may set what a user's
        ``-o`` may not, e.g. amago-tools' ``--context`` sets ``run.max_seq_len``)."""

    @hookspec
    def amago_eval_test_makers(
        self, request: EvalRequest
    ) -> Callable[[list[Callable[[], Any]]], Sequence[Callable[[], Any]]] | None:
        """Called by ``amago eval`` once the weights are loaded (``request.epoch`` is theirs), before the
        evaluation: a function taking the test env makers (one per actor) and returning those to evaluate in
        (amago-tools: env 0 recorded), or None. Several plugins' functions apply in install order."""

    @hookspec
    def amago_eval_end(self, request: EvalRequest, metrics: dict[str, Any]) -> Mapping[str, Any] | None:
        """Called by ``amago eval`` after the evaluation, before the run closes (``request.log_files`` reaches
        its backends): entries to add to the printed JSON (amago-tools: ``videos``), or None."""

    @hookspec
    def amago_after_run(self, run_dir: Path, config: dict[str, Any]) -> Sequence[Path] | None:
        """Called by ``amago run`` in the main process after a run ended (trained, tested and closed): write
        what you make from the finished run folder (figures, reports) and return the paths, which the run's
        summary lists under ``plots``. ``config`` is the resolved config as a JSON-safe dict."""

    @hookspec
    def amago_doctor_checks(self, report: Any) -> None:
        """Adds lines to ``amago doctor``'s report: ``report.notes``, ``report.warnings`` and ``report.errors``
        are lists of one-line strings (an error makes the doctor exit 1). Keep it quick; probe anything that
        might hang or import heavy libraries in a child process."""

    @hookspec(firstresult=True)
    def amago_doctor_run_dir(self, run_dir: Path, as_json: bool) -> bool | None:
        """``amago doctor RUN_DIR``: reports on a run folder (amago-tools: its disk use by part) and returns
        True; the first plugin to answer wins."""
