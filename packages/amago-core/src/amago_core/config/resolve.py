"""One answer to "what will run": every source, the env suite's preset (or the default job) under them, validated.

``amago run``, ``amago run --dry-run``, ``amago config show`` and the Python API's ``Experiment(...)`` all
resolve their config here, so the same settings give the same config whichever way they are given; a run
folder's recorded config is read back here too (:func:`plan_recorded`). Every function takes the
``registries`` the run will be built from, and validates against them (default: the process-wide registries).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from amago_core.config.components import RunComponents
from amago_core.config.episode import follow_episode, warn_if_memory_too_short
from amago_core.config.errors import describe_validation_error
from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig
from amago_core.config.presets import preset_for_env, suite_and_task
from amago_core.config.sizing import apply_sizing
from amago_core.config.slots import _or_installed
from amago_core.config.sources import SourceFile, load_config, merge_layers, merge_over_job, read_sources
from amago_core.plugins.component_config import ComponentConfig
from amago_core.plugins.errors import InvalidSpecError
from amago_core.plugins.registry import Registries
from amago_core.plugins.tables import deep_merge, slot_kind


class PresetError(InvalidSpecError):
    """An env suite's preset is not a valid config; the message names the suite, its distribution and the problem."""


def base_layer(
    env_choice: Any,
    default_job: Mapping[str, Any] | None,
    *,
    registries: Registries | None = None,
) -> dict[str, Any] | None:
    """What sits under every user source: the chosen env suite's preset, or ``default_job`` when no env is chosen.

    Raises:
        amago_core.plugins.PluginError: the env names no installed suite, or the suite's spec is broken.
        PresetError: the suite's preset for the task does not validate on its own.
    """
    if env_choice is None or (isinstance(env_choice, Mapping) and not {"id", "kind"} & set(env_choice)):
        # No env named (options alone, like `-o env.corridor_length=30`, refine the job's env).
        return dict(default_job) if default_job is not None else None
    preset = preset_for_env(env_choice, registries)
    if preset is None:
        return None
    suite, task = suite_and_task(env_choice, registries)
    try:  # on its own, with only the env's identity: a user's bad env option is not the preset's fault
        ExperimentConfig.validate_with(
            merge_over_job(preset, {"env": {"kind": suite, "task": task}}), registries
        )
    except ValidationError as exc:
        if any(tuple(error["loc"][:2]) == ("env", "task") for error in exc.errors()):
            raise  # the env id names a task the suite lacks: the user's error, reported at env.task
        records = _or_installed(registries).env_suites.records(suite)
        origins = ", ".join(r.origin for r in records) or "its distribution"
        problems = "; ".join(describe_validation_error(exc, source="preset"))
        msg = (
            f"env suite {suite!r} ships a broken preset for task {task or '(default)'!r} ({problems}). Report it "
            f"to {origins}; meanwhile set those settings yourself, or block the plugin with "
            "AMAGO_BLOCK_PLUGINS=<distribution>."
        )
        raise PresetError(msg) from exc
    return preset


@dataclass(frozen=True)
class RunPlan:
    """What will run, decided once: the validated config, its resolved components, and what the user's own
    sources set.

    Built by :func:`plan_run`; sizing (``--steps``, ``--budget``, ``--smoke``) turns one plan into another
    (:meth:`sized`). Everything that starts a run (``amago run``, ``Experiment(plan)``,
    :func:`~amago_core.experiment.train.train`, the examples) starts from one, and builds from its
    :attr:`components` rather than resolving them again.

    Attributes:
        config: the validated config, every component slot resolved to its config.
        user: the user's own sources merged (files, flags, overrides, ``AMAGO_*``), without the preset or job
            under them: what sizing and episode following must keep. Read-only by convention.
        registries: the registries the plan was validated against, which validate it again when it is sized
            (None: the process-wide registries). Not part of the plan's value: two plans of the same config
            compare equal whichever registries validated them.
        files: the ``-c`` files as read (each once), in order: which are run records and what they hold as
            written.
        own: like ``user``, without the files that are run records: what the person running it chose (a
            record's settings are data, never instructions).
    """

    config: ExperimentConfig
    user: Mapping[str, Any] = field(default_factory=dict)
    registries: Registries | None = field(default=None, compare=False, repr=False)
    files: tuple[SourceFile, ...] = field(default=(), compare=False, repr=False)
    own: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @functools.cached_property
    def components(self) -> RunComponents:
        """Every component slot of :attr:`config` resolved once (spec, config, origin), from the plan's
        registries: what ``Experiment(plan)`` builds. Resolved when first asked for (listing and ``--dry-run``
        never need it); a sized plan is a new plan and resolves its own."""
        return RunComponents.resolve(self.config, _or_installed(self.registries), {})

    @property
    def records(self) -> dict[Path, Mapping[str, Any]]:
        """The files that are a run folder's record, each as written (provenance and folder-owned settings)."""
        return {file.path: file.raw for file in self.files if file.is_record}

    def sized(self, settings: Mapping[str, Any]) -> RunPlan:
        """This plan with ``settings`` (a config tree from :mod:`amago_core.config.sizing`) merged in."""
        return replace(self, config=apply_sizing(self.config, settings, registries=self.registries))


def plan_run(
    files: Iterable[str | os.PathLike[str]] = (),
    flags: Mapping[str, Any] | None = None,
    overrides: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    *,
    default_job: Mapping[str, Any] | None = None,
    registries: Registries | None = None,
) -> RunPlan:
    """Reads every source once, merges it over the base layer, validates, and resolves each component slot.

    The base layer's episode-counted settings follow the episode length of the user's env options
    (:mod:`amago_core.config.episode`), and a memory shorter than one episode of a memory task is warned about.

    Args:
        files: ``-c`` files, in order (later wins).
        flags: CLI flags or the Python API's settings, as a config tree (None values are unset).
        overrides: ``-o section.field=value`` items (highest precedence).
        environ: where ``AMAGO_*`` variables come from (default: ``os.environ``).
        default_job: the base layer when no source names an env (the CLI's embedded main job); None for none.
        registries: where every component and env is looked up: the registries the run will be built from
            (default: the process-wide registries). The plan keeps them for :meth:`RunPlan.sized`.

    Raises:
        amago_core.config.sources.ConfigSourceError: a source cannot be read.
        pydantic.ValidationError: the merged config is invalid (located at the bad field).
        amago_core.plugins.PluginError: a component or env is unknown, missing or broken (incl. PresetError).
    """
    sources = tuple(SourceFile.read(path) for path in files)
    layers = read_sources(sources, flags, overrides, environ)
    user = merge_layers(layers, registries=registries)
    own_files = [file for file in sources if not file.is_record]
    own_layers = read_sources(own_files, flags, overrides, environ)
    own = merge_layers(own_layers, registries=registries)
    base = base_layer(user.get("env"), default_job, registries=registries)
    config = _validated(merge_layers(layers, base, registries=registries), registries)
    if base is not None:
        followed = follow_episode(base, user, config, registries=registries)
        if followed is not None:  # the user's env options changed the episode the base layer was written for
            config = _validated(merge_layers(layers, followed, registries=registries), registries)
    warn_if_memory_too_short(config)
    warn_if_options_left_out(own, config)
    warn_if_kind_switch_drops_options(own_layers)
    return RunPlan(config, user, registries, sources, own)


class LeftOutOptionsWarning(UserWarning):
    """Options a person gave a component slot belong to another kind than the one the run chose."""


def warn_if_options_left_out(own: Mapping[str, Any], config: ExperimentConfig) -> None:
    """One warning per slot whose own options the chosen kind lacks: a later source that names another kind drops
    them (a recipe's ``[traj_encoder]`` for the preset's Transformer, then ``--traj-encoder gru``), said aloud."""
    for slot in SLOT_KEYS:
        given, chosen = own.get(slot), getattr(config, slot, None)
        if not isinstance(given, Mapping) or not isinstance(chosen, ComponentConfig):
            continue
        if left := sorted(set(given) - {"kind", "id"} - set(type(chosen).model_fields)):
            warnings.warn(
                f"{slot}: {', '.join(left)} left out, given before a later source chose {chosen.kind}, which has no "
                f"such option; give its own (`amago show {slot.replace('_', '-')}s {chosen.kind}`).",
                LeftOutOptionsWarning,
                stacklevel=3,
            )


def warn_if_kind_switch_drops_options(layers: Iterable[Mapping[str, Any]]) -> None:
    """One warning per slot whose options a later source dropped by naming another kind (``[traj_encoder] kind =
    "transformer"`` and ``n_layers = 3`` in a ``-c`` file, then ``--traj-encoder gru``) and no later source gave
    again: even an option both kinds have does not carry over, which is easy to expect."""
    merged: dict[str, Any] = {}
    dropped: dict[str, tuple[str | None, set[str]]] = {}
    for layer in layers:
        for slot in (slot for slot in SLOT_KEYS if slot in layer):
            before = merged.get(slot)
            merged = deep_merge(merged, {slot: layer[slot]})
            after = merged[slot] if isinstance(merged[slot], Mapping) else {}
            if isinstance(before, Mapping) and (gone := set(before) - {"kind", "id"} - set(after)):
                kind, earlier = dropped.get(slot, (_named(before, slot), set()))
                dropped[slot] = (kind, earlier | gone)
    for slot, (kind, gone) in dropped.items():
        final = merged[slot] if isinstance(merged[slot], Mapping) else {}
        if left := sorted(gone - set(final)):
            chosen = _named(merged[slot], slot)
            where = "" if slot == "env" else f" (`amago show {slot.replace('_', '-')}s {chosen}`)"
            warnings.warn(
                f"{slot}: {', '.join(left)} given for {kind or 'the default'} left out: a later source chose "
                f"{chosen}, which starts from its own defaults{where}.",
                LeftOutOptionsWarning,
                stacklevel=3,
            )


def _named(value: Any, slot: str) -> str | None:
    """The component a slot's value names, as written (``gru``, ``tmaze-active``); None for options alone."""
    return value if isinstance(value, str) else slot_kind(value, slot) and value.get("id", value.get("kind"))


def _validated(merged: Mapping[str, Any], registries: Registries | None) -> ExperimentConfig:
    return ExperimentConfig.validate_with(merged, registries).resolved(registries)


def plan_recorded(record: str | os.PathLike[str], registries: Registries | None = None) -> RunPlan:
    """The plan of a run folder's recorded config (``config.resolved.json``), read on its own.

    The record is the whole config the run resolved, so no preset, job or ``AMAGO_*`` variable goes under or
    over it, and no episode following applies; the plan's ``user`` is empty. ``registries``: the ones the run's
    agent will be rebuilt from.

    Raises:
        amago_core.config.sources.ConfigSourceError: the file cannot be read.
        pydantic.ValidationError: the record is no valid config here (located at the bad field).
        amago_core.plugins.PluginError: a default component is not installed.
    """
    config = load_config([record], environ={}, registries=registries).resolved(registries)
    return RunPlan(config, {}, registries)


def resolve_config(
    files: Iterable[str | os.PathLike[str]] = (),
    flags: Mapping[str, Any] | None = None,
    overrides: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    *,
    default_job: Mapping[str, Any] | None = None,
    registries: Registries | None = None,
) -> ExperimentConfig:
    """The config of :func:`plan_run` (same arguments, same errors)."""
    return plan_run(files, flags, overrides, environ, default_job=default_job, registries=registries).config
