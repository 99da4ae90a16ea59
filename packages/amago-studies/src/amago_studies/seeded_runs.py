"""``amago run --seeds`` and ``--resume GROUP``: the run hooks that turn one ``amago run`` into a seed group.

The group itself (its folder, record, lock and child processes) is :mod:`amago_studies.seeds`. Whatever stops a
group from starting or resuming (another driver holds it, a seed folder is a link, a broken record) is one line
(``--debug``: the traceback).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from amago_core.cli.output import fail, print_json
from amago_core.hooks.specs import RunRequest

GROUP_FIXED_OPTIONS = (
    "env", "tstep_encoder", "traj_encoder", "agent", "exploration", "config", "mode", "seed", "seeds", "name",
    "budget", "steps", "smoke", "deterministic", "dry_run",
)  # fmt: skip
"""The options a seed group's resume refuses: it keeps the config and seeds it started with."""


def begin(request: RunRequest) -> int | None:
    """Checks the seed options against the rest; resumes a seed group given to ``--resume`` (its exit code)."""
    from amago_studies.seeds import is_group

    options = request.options
    seeds, parallel, resume = options.get("seeds"), options.get("parallel"), options.get("resume")
    if parallel is not None and parallel < 1:
        fail(f"--parallel must be at least 1 (got {parallel})")
    group_resume = resume is not None and is_group(resume)
    if parallel is not None and seeds is None and not group_resume:
        fail("--parallel runs seeds side by side: add --seeds (a count or a list), or drop --parallel")
    if seeds is not None and resume is not None and not group_resume:
        fail(
            f"--resume {resume} continues one run: drop --seeds (a seed group resumes from its group folder)"
        )
    if resume is not None and group_resume:
        return _resume_group(resume, options)
    if seeds is not None:
        _seeds(options)  # its one-line errors before the config is resolved
    return None


def run_seeds(request: RunRequest) -> int | None:
    """``--seeds``: the group folder ``{run.ckpt_base_dir}/{name}/`` and a process per seed (see
    :mod:`amago_studies.seeds`); with ``--dry-run`` only the plan (exit 0). None without ``--seeds``."""
    from amago_core.cli.run_cmd import traj_pickles_allowed
    from amago_core.config.sources import is_set
    from amago_core.experiment.naming import default_run_name
    from amago_studies.seeds import SeedGroup, start_group

    options, plan = request.options, request.plan
    if options.get("seeds") is None:
        return None
    seed_list = _seeds(options)
    parallel = options.get("parallel") or 1
    resolved = plan.config
    name = resolved.run.name or default_run_name(resolved)
    group = SeedGroup(resolved.run.ckpt_base_dir / name)
    config = resolved.model_dump(mode="json")
    config["run"]["name"] = None  # each seed's process names its own folder (seed_K)
    config["run"]["seed"] = None  # and passes its own --seed
    config["run"]["ckpt_base_dir"] = str(group.root)
    if not is_set(plan.own, "run", "torch_threads"):
        # Seeds side by side on a CPU: one torch thread each keeps them from fighting over the cores.
        config["run"]["torch_threads"] = 1
    if config["logging"]["log_to_wandb"] and not config["logging"]["wandb_group_name"]:
        config["logging"]["wandb_group_name"] = name  # every seed's wandb run in one group
    if options.get("dry_run"):
        runs = {str(seed): str(group.run_dir(seed)) for seed in seed_list}
        print_json(
            {"group": str(group.root), "parallel": parallel, "seeds": runs, "config": config},
            exact_floats=True,
        )
        return 0
    allow = traj_pickles_allowed(plan, bool(options.get("allow_traj_pickles")))
    command = ["amago", *request.argv]
    with _one_line(options):  # a folder in use or already used: one line
        return start_group(group, config, seed_list, parallel, command, allow_traj_pickles=allow)


def _resume_group(folder: Path, options: Any) -> int:
    """``--resume GROUP``: finishes the group's seeds that did not exit 0 (only --parallel may change), holding the
    group's lock; a refused group (in use, a linked or file ``seed_K``, a linked log, a broken record) is one
    line."""
    from amago_studies.child_runs import connect_overrides_only
    from amago_studies.seeds import SeedGroup, resume_group

    given = [
        "--" + key.replace("_", "-")
        for key in GROUP_FIXED_OPTIONS
        if options.get(key) not in (None, False, [])
    ]
    if given:
        fail(
            f"{folder} is a seed group: it resumes with the config and seeds it started with; drop "
            f"{', '.join(given)} (only --parallel may change)"
        )
    overrides = connect_overrides_only(folder, options.get("override") or [], "a seed group")
    with _one_line(options):  # another driver, a linked seed folder or log, a broken record: one line
        return resume_group(
            SeedGroup(folder),
            options.get("parallel"),
            overrides,
            allow_traj_pickles=bool(options.get("allow_traj_pickles")),
        )


def _one_line(options: Any) -> AbstractContextManager[None]:
    """Turns an error of the group's driver into one line and exit 2, as ``amago run`` does (``--debug``: the
    traceback); the seeds' own failures are lines of their own (see :func:`amago_studies.seeds.run_seeds`)."""
    from amago_core.cli.errors import debugging, one_line_errors

    return one_line_errors(debugging(bool(options.get("debug"))), usage=True)


def _seeds(options: Any) -> list[int]:
    """``--seeds``' seeds; a count starts at ``--seed`` (else 0), a list is the seeds themselves."""
    from amago_studies.seeds import parse_seeds

    text, seed = options["seeds"], options.get("seed")
    if options.get("smoke"):
        fail(
            "--smoke checks one run and keeps no folder: drop --smoke with --seeds (--steps sizes short seeded runs)"
        )
    if seed is not None and "," in text:
        fail(
            f"--seeds {text} lists the seeds itself: drop --seed (--seed B with a count runs seeds B, B+1, ...)"
        )
    try:
        return parse_seeds(text, base=seed or 0)
    except ValueError as exc:
        fail(str(exc))
