"""AMAGO's ``amago.cli_utils``: its gin helpers and shared argparse CLI, as far as they carry over.

amago has no gin: options are fields of one config tree, set by ``amago run`` options (``--traj-encoder``,
``-o traj_encoder.n_layers=4``, ``-c run.toml``) or, in Python, by tables passed to ``Experiment``
(``traj_encoder_type={"kind": "transformer", "n_layers": 4}``). ``switch_async_mode`` keeps working; every other
helper raises a one-line ImportError that names its replacement (docs/migration-from-amago.md has the table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from amago._compat import shim_exports

if TYPE_CHECKING:
    from amago.from_amago.experiment import Experiment


def switch_async_mode(experiment: Experiment, mode: Literal["both", "collect", "learn"]) -> None:
    """Makes ``experiment`` collect data only, learn only, or do both (call it before ``experiment.start()``).

    AMAGO's helper of the same name; in amago it sets the ``run.mode`` setting (``--mode`` of ``amago run``),
    which decides at ``start()`` what the process does.

    Raises:
        pydantic.ValidationError: ``mode`` is not ``both``, ``collect`` or ``learn``.
    """
    experiment.apply_settings(mode=mode)


def _table_instead(keyword: str, flag: str, section: str, group: str) -> str:
    """The pointer for a ``switch_*`` helper: a table for the slot instead of gin bindings."""
    return (
        f"pass {keyword}={{'kind': NAME, **options}} to Experiment (or --{flag} NAME -o {section}.OPTION=VALUE "
        f"to amago run); the options are that component's config fields (`amago show {group} NAME`)"
    )


__getattr__, _dir_of_exports, _exports = shim_exports(
    __name__,
    {},
    no_counterpart={
        "use_config": "amago has no gin; give options as tables (Experiment(traj_encoder_type={'kind': "
        "'transformer', 'n_layers': 4})), as -o overrides (-o traj_encoder.n_layers=4) or through "
        "amago_core.config.resolve.resolve_config(files, overrides=[...]); .gin files become -c TOML/YAML/JSON files",
        "switch_tstep_encoder": _table_instead(
            "tstep_encoder_type", "tstep-encoder", "tstep_encoder", "tstep-encoders"
        ),
        "switch_traj_encoder": _table_instead(
            "traj_encoder_type", "traj-encoder", "traj_encoder", "traj-encoders"
        )
        + "; memory_size and layers are d_model (rnn: d_hidden and d_output) and n_layers",
        "switch_agent": _table_instead("agent_type", "agent", "agent", "agents"),
        "switch_exploration": _table_instead(
            "exploration_wrapper_type", "exploration", "exploration", "explorations"
        ),
        "add_common_cli": "the shared command line is `amago run` (see `amago run --help`; the flag-by-flag "
        "table is in the migration guide)",
        "create_experiment_from_cli": "run `amago run --env ID ...`, or build "
        "Experiment(resolve_config(files, overrides=[...]), make_train_env=..., make_val_env=...)",
        "make_experiment_learn_only": "use switch_async_mode(experiment, 'learn') or `amago run --mode learn`",
        "make_experiment_collect_only": "use switch_async_mode(experiment, 'collect') or `amago run --mode collect`",
    },
)
__all__ = ["switch_async_mode", *_exports]


def __dir__() -> list[str]:
    return sorted({*__all__, *_dir_of_exports()})
