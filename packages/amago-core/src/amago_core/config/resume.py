"""What may change when a run is resumed, and how a change reads.

A resumed run continues a saved state: the model, the optimiser's moments, the schedule's step, the random
streams. Settings that only steer the loop around that state (how long, how often, where the buffer is, the
learning rate the scheduler applies) may change on resume and do apply; every other setting is the one the
state was trained with, and a change to it is refused before anything in the run folder is touched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from amago_core.config.experiment import SLOT_KEYS
from amago_core.plugins.tables import ENV_KEY

RESUMABLE_SETTINGS: tuple[str, ...] = (
    # Where the folder is: `--resume PATH` sets them, so a moved or renamed folder resumes.
    "run.name",
    "run.ckpt_base_dir",
    "run.mode",
    "run.torch_threads",
    "run.deterministic",
    "run.compile",  # how the same arithmetic is run (torch.compile or eager), not what was trained
    "schedule.*",
    "logging.*",
    "rollout.*",
    "distributed.*",
    "ray.*",
    "replay.dset_root",
    "replay.dset_name",
    "replay.dset_max_size",
    "replay.dset_min_size",
    "replay.traj_save_len",
    "replay.stagger_traj_file_lengths",
    "replay.save_trajs_as",
    "replay.padded_sampling",
    "replay.has_dset_edit_rights",
    # Optimiser settings the resumed optimiser and scheduler take over from the config (the state brings the
    # moments and the step count, see amago_core.experiment.resume).
    "optim.learning_rate",
    "optim.lr_warmup_steps",
    "optim.l2_coeff",
    "optim.grad_clip",
    "optim.batch_size",
    "optim.batches_per_update",
    "optim.length_group_batches",
)
"""Settings that may differ from the run's record on ``--resume`` (``section.*``: the whole section). Anything
else (the env, the components and their options, ``run.max_seq_len``, ``run.seed``, ``optim.mixed_precision``,
``replay.relabeler``) is what the saved state was trained with. ``optim.mixed_precision=auto`` is the one value
such a setting may be given on resume: a record that holds a precision keeps it (see :data:`KEEPS_RECORDED`), a
record that holds ``auto`` resolves it again."""

KEEPS_RECORDED: dict[str, Any] = {"optim.mixed_precision": "auto"}
"""Values that resolve at start to what the resumed run's record holds: asking for them on resume changes
nothing (``auto`` precision resumes in the precision the run used)."""

COMPONENT_SLOTS = SLOT_KEYS
"""The top-level settings that name a component: one changed to another kind is named as such."""


@dataclass(frozen=True)
class SettingChange:
    """One setting whose value differs between a run's record and the config a resume would run."""

    key: str
    """Dotted key, e.g. ``traj_encoder.kind``."""
    saved: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.key}: {_shown(self.saved)} → {_shown(self.new)}"


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return value.get("kind") or value.get("id") or "{...}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> Any:
    return value.get("kind", value.get("id")) if isinstance(value, Mapping) else value


def setting_changes(saved: Mapping[str, Any], new: Mapping[str, Any]) -> list[SettingChange]:
    """The settings whose values differ between two config trees (a run's record and a new config).

    A component slot whose kind changed is one change (``traj_encoder.kind: transformer → rnn``), not one per
    option. A key only one side has is not a change: a plugin that gained an option adds it at its default.
    """
    changes: list[SettingChange] = []
    for key in saved.keys() & new.keys():
        old_value, new_value = saved[key], new[key]
        if key in COMPONENT_SLOTS and _kind(old_value) != _kind(new_value):
            field = (
                "id" if key == ENV_KEY and isinstance(old_value, Mapping) and "id" in old_value else "kind"
            )
            changes.append(SettingChange(f"{key}.{field}", _kind(old_value), _kind(new_value)))
            continue
        changes.extend(_leaf_changes(key, old_value, new_value))
    return sorted(changes, key=lambda change: change.key)


def _leaf_changes(prefix: str, old: Any, new: Any) -> Iterable[SettingChange]:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in old.keys() & new.keys():
            yield from _leaf_changes(f"{prefix}.{key}", old[key], new[key])
    elif old != new:
        yield SettingChange(prefix, old, new)


def setting_matches(key: str, patterns: Iterable[str]) -> bool:
    """Whether the setting ``key`` (dotted) is one of ``patterns`` (``section.*``: any setting of the section)."""
    return any(
        key.startswith(pattern[:-1]) if pattern.endswith(".*") else key == pattern for pattern in patterns
    )


def may_change_on_resume(key: str) -> bool:
    """Whether the setting ``key`` (dotted) is one of :data:`RESUMABLE_SETTINGS`."""
    return setting_matches(key, RESUMABLE_SETTINGS)


def refused_changes(saved: Mapping[str, Any], new: Mapping[str, Any]) -> list[SettingChange]:
    """The changes a resume may not make (see :data:`RESUMABLE_SETTINGS` and :data:`KEEPS_RECORDED`)."""
    return [
        change
        for change in setting_changes(saved, new)
        if not may_change_on_resume(change.key)
        and not (change.key in KEEPS_RECORDED and change.new == KEEPS_RECORDED[change.key])
    ]


def describe_changes(changes: list[SettingChange], limit: int = 4) -> str:
    """``traj_encoder.kind: transformer → rnn, run.seed: 3 → 5`` (the first ``limit``, then a count)."""
    shown = ", ".join(str(change) for change in changes[:limit])
    more = len(changes) - limit
    return shown + (f" and {more} more" if more > 0 else "")
