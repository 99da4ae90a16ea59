"""AMAGO's ``ckpts/config.txt`` (gin's operative config) as amago component configs.

gin writes one ``Configurable.parameter = value`` line per parameter the run used, grouped under
``# Parameters for Configurable:`` headers; values are Python literals, ``@Name`` references or ``%MACROS``.
The text is read by the same gin reader as ``amago migrate-gin`` (:mod:`amago.from_amago.gin`), and every
parameter's amago key comes from the same mapping, so the two commands cannot disagree on what a binding means.
What is this module's own: which timestep encoder, trajectory encoder and agent the run used, AMAGO's defaults
for a trimmed config, and what an imported policy cannot carry. Bindings that only affect training data,
logging or the env (``Experiment``, datasets, explorations: the mapping's, AMAGO's example's ``TMazeExploration``
included) are left out; a binding that changes the networks and
has no amago counterpart stops the import with one line naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amago.from_amago.gin import (
    ALL_CONFIGURABLES,
    BY_NAME,
    CONVERSIONS,
    GinStatement,
    GinSyntaxError,
    Reference,
    read_gin,
    resolve_macros,
)

__all__ = ["AmagoConfigError", "AmagoRunConfig", "read_config", "sections", "translate"]


class AmagoConfigError(ValueError):
    """An AMAGO config that cannot be translated (the message is one line and says what to do)."""


@dataclass
class AmagoRunConfig:
    """What an AMAGO run's config says about its networks, as amago slot tables.

    Attributes:
        tstep_encoder: the ``tstep_encoder`` table (``kind`` ``ff`` or ``cnn``).
        traj_encoder: the ``traj_encoder`` table (``ff``, ``rnn``, ``transformer`` or ``mamba``).
        agent: the ``agent`` table (``agent`` or ``multitask``).
        multigammas: AMAGO's extra discounts for Discrete and for other action spaces (picked once the
            action space is known).
        notes: one-line remarks on what was left out.
        multibinary_policy: the run used AMAGO's Multibinary policy (so its action space is MultiBinary,
            which the weight shapes alone cannot tell from Discrete).
    """

    tstep_encoder: dict[str, Any]
    traj_encoder: dict[str, Any]
    agent: dict[str, Any]
    multigammas: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    multibinary_policy: bool = False

    def agent_for(self, discrete: bool) -> dict[str, Any]:
        """The agent table with the multigammas of the action space's kind."""
        table = dict(self.agent)
        gammas = self.multigammas.get("discrete" if discrete else "continuous")
        if gammas is not None:
            table["multigammas"] = list(gammas)
        return table


# gin heads each configurable it called with a comment, even one whose parameters were all left alone
# ("# None."): that still says which class the run used. The gin reader drops comments, so they are read here.
_HEADER = re.compile(r"^# Parameters for ([\w./]+):\s*$", flags=re.M)


def sections(statements: Iterable[GinStatement], text: str = "") -> dict[str, dict[str, Any]]:
    """``{Configurable: {parameter: value}}`` from the statements of gin's operative config, macros resolved.

    Module paths are dropped (``amago.nets.traj_encoders.TformerTrajEncoder`` → ``TformerTrajEncoder``); a scoped
    binding is kept under ``scope/Configurable``.

    Args:
        statements: what :func:`~amago.from_amago.gin.read_gin` read from the file.
        text: the file's text, whose ``# Parameters for X:`` headers list every configurable the run called.
    """
    statements = list(statements)
    bindings: dict[str, dict[str, Any]] = {}
    for header in _HEADER.findall(text):
        bindings.setdefault(header.rsplit(".", 1)[-1], {})
    macros = {statement.target: statement for statement in statements if statement.parameter is None}
    for statement in statements:
        if statement.parameter is None:
            continue
        target = statement.target.rpartition(".")[2]
        if statement.scope:
            target = f"{statement.scope}/{target}"
        try:
            value = resolve_macros(statement.value, macros)
        except ValueError:
            value = statement.value  # an undefined macro stops the import only where a network reads it
        bindings.setdefault(target, {})[statement.parameter] = value
    return bindings


def _short(reference: Reference) -> str:
    return reference.name.rpartition(".")[2]


# The explorations of the gin mapping, AMAGO's and its examples' (TMazeExploration): rollouts only.
_EXPLORATIONS = {c.name for c in ALL_CONFIGURABLES if any(key == "exploration.kind" for key, _ in c.picks)}

# AMAGO's own configurables that only shape data, rollouts, logging or envs: nothing an imported policy needs.
_IGNORED = _EXPLORATIONS | {
    "Experiment",
    "DiskTrajDataset",
    "RLDataset",
    "DoNothingDataset",
    "MixtureOfDatasets",
    "ExplorationWrapper",
    "SequenceWrapper",
    "AMAGOEnv",
    "Relabeler",
    "InputNorm",  # beta / init_nu only steer training updates; the statistics are in the weights
    "SigmaReparam",  # bias / fast_init: the bias shows in the weights, fast_init is an initialisation
    "FlashAttention",
    "VanillaAttention",
    "SlidingWindowFlexAttention",
    "FixedPosEmb",
}

# AMAGO classes that have no amago counterpart in an imported policy.
_UNSUPPORTED = {
    "GridworldTstepEncoder": "AMAGO v3.3.0's package has no GridworldTstepEncoder (only its examples define gridworld "
    "encoders), so it is a custom class amago cannot rebuild (retrain with amago's babyai or xland encoder)",
    "ResidualActor": "import-amago maps AMAGO's plain Actor only",
    "Beta": "amago's beta policy is parameterised differently",
    "DiscreteLikeContinuous": "import-amago does not map a policy that picks it (amago trains discrete actions "
    "as continuous ones with -o agent.discrete_like_continuous=true: retrain with that)",
}

_NORMS = ("none", "layer", "rmsnorm", "unitball", "hypersphere", "simnorm")
"""The normalisations amago has, by the names AMAGO's ``norm`` options take (AMAGO's None is ``"none"``)."""


def _settings(bindings: dict[str, dict[str, Any]], name: str, slot: str) -> Iterable[tuple[str, str, Any]]:
    """``(parameter, key, value)`` for each binding of configurable ``name`` that the gin mapping makes a setting
    under ``slot`` (``key`` relative to it, ``value`` converted to amago's meaning)."""
    configurable = BY_NAME.get(name)
    for parameter, value in bindings.get(name, {}).items():
        row = configurable.parameter(parameter) if configurable is not None else None
        if row is None or row.kind != "setting" or row.key is None or not row.key.startswith(f"{slot}."):
            continue
        converted = value
        if row.convert is not None:
            try:
                converted = CONVERSIONS[row.convert].apply(value)
            except ValueError as exc:
                msg = f"config.txt sets {name}.{parameter} = {value!r}: {exc}; fix the binding (AMAGO could not have built this run)."
                raise AmagoConfigError(msg) from None
        if row.convert == "norm" and converted not in _NORMS:
            msg = f"config.txt sets {name}.{parameter} = {value!r}, a normalisation amago does not have; retrain with one of {sorted(_NORMS)}."
            raise AmagoConfigError(msg)
        yield parameter, row.key.removeprefix(f"{slot}."), converted


def _nested(flat: Iterable[tuple[str, Any]], into: dict[str, Any] | None = None) -> dict[str, Any]:
    """Dotted keys as nested tables (``popart.beta`` → ``{"popart": {"beta": ...}}``), merged into ``into``."""
    table = {} if into is None else into
    for key, value in flat:
        *parents, last = key.split(".")
        inner = table
        for part in parents:
            inner = inner.setdefault(part, {})
        inner[last] = value
    return table


def _options(
    bindings: dict[str, dict[str, Any]], name: str, slot: str, into: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The amago options that configurable ``name``'s bindings set under ``slot``, as a nested table (merged into
    ``into``)."""
    return _nested(((key, value) for _, key, value in _settings(bindings, name, slot)), into)


def _picks(name: str, slot: str) -> dict[str, Any]:
    """What picks configurable ``name`` under ``slot`` in amago (``Actor``: ``{"type": "plain"}``)."""
    configurable = BY_NAME[name]
    return _nested((k.removeprefix(f"{slot}."), v) for k, v in configurable.picks if k.startswith(f"{slot}."))


def _component(bindings: dict[str, dict[str, Any]], name: str, slot: str) -> dict[str, Any]:
    """Configurable ``name`` as the table of ``slot``: its picks, then its bindings' options."""
    return _options(bindings, name, slot, into=_picks(name, slot))


def _tstep(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found = [name for name in ("FFTstepEncoder", "CNNTstepEncoder") if name in bindings]
    if len(found) > 1:
        msg = "config.txt configures both FFTstepEncoder and CNNTstepEncoder; import-amago needs the one the run used (pass a run's own ckpts/config.txt)."
        raise AmagoConfigError(msg)
    if found == ["CNNTstepEncoder"]:
        return _cnn_tstep(bindings)
    table = _component(bindings, "FFTstepEncoder", "tstep_encoder")
    # AMAGO's FFTstepEncoder defaults where the config omits them (gin lists every parameter a run used,
    # so these only matter for hand-written or trimmed configs).
    for key, value in {
        "n_layers": 2,
        "d_hidden": 512,
        "d_output": 256,
        "norm": "none",
        "out_norm": "layer",
    }.items():
        table.setdefault(key, value)
    return table


_CNN_TYPE = next(row for row in BY_NAME["CNNTstepEncoder"].parameters if row.parameter == "cnn_type")
"""The mapping's row of ``CNNTstepEncoder.cnn_type``: the backbones it takes and the ``cnn_type`` each is."""
# AMAGO's layers of its backbones with plain convolutions: a value equal to AMAGO's default is left unset, as
# amago's default is the same.
_AMAGO_CONV_LAYERS: dict[str, dict[str, tuple[int, ...]]] = {
    "NatureishCNN": {"channels": (32, 64, 64), "kernels": (8, 4, 3), "strides": (4, 2, 1)},
    "GridworldCNN": {"channels": (16, 32, 48), "kernels": (2, 2, 2), "strides": (1, 1, 1)},
}


def _backbones() -> tuple[str, ...]:
    """AMAGO's CNN classes a ``CNNTstepEncoder.cnn_type`` may name, gin configurables or not (``DrQCNN``)."""
    return _CNN_TYPE.choices + tuple(path.rpartition(".")[2] for path, _ in _CNN_TYPE.unregistered)


def _cnn_type(backbone: str) -> str | None:
    """amago's ``cnn_type`` of AMAGO's CNN class ``backbone``, or None for a class of the script's own."""
    if backbone in BY_NAME:
        return next((value for key, value in BY_NAME[backbone].picks if key == _CNN_TYPE.key), None)
    return next(
        (value for path, value in _CNN_TYPE.unregistered if path.rpartition(".")[2] == backbone), None
    )


def _cnn_backbone(bindings: dict[str, dict[str, Any]]) -> str:
    """AMAGO's CNN class: ``CNNTstepEncoder.cnn_type``, else the backbone whose section gin recorded (a class
    passed from Python is not printed as a value), else AMAGO's default ``NatureishCNN``."""
    ref = bindings["CNNTstepEncoder"].get("cnn_type")
    if isinstance(ref, Reference):
        return _short(ref)
    return next((name for name in _backbones() if name in bindings), "NatureishCNN")


def _cnn_tstep(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """AMAGO's ``CNNTstepEncoder`` as amago's ``cnn`` tstep encoder, its backbone as ``cnn_type`` and the
    backbone's options (both through the gin mapping)."""
    encoder = BY_NAME["CNNTstepEncoder"]
    for param in bindings["CNNTstepEncoder"]:
        row = encoder.parameter(param)
        if row is None or row.kind not in ("setting", "choice"):
            msg = f"config.txt sets CNNTstepEncoder.{param}, which amago's cnn timestep encoder does not have; import-amago cannot bring this run (remove the binding if it is not AMAGO v3.3.0's)."
            raise AmagoConfigError(msg)
    table = _component(bindings, "CNNTstepEncoder", "tstep_encoder")
    for key, value in {"img_features": 256, "rl2_features": 12, "d_output": 256, "out_norm": "layer"}.items():
        table.setdefault(key, value)
    if table.get("activation") == "adaptive":
        # AMAGO's CNN calls one SlowAdaptiveRational for every layer of its backbone; amago's IMPALA blocks
        # and the weight mapping keep one per block, so the coefficients cannot be placed.
        msg = "config.txt sets CNNTstepEncoder.activation = 'adaptive', whose learned coefficients import-amago does not map; retrain with a fixed activation (leaky_relu, relu, gelu, mish)."
        raise AmagoConfigError(msg)
    backbone = _cnn_backbone(bindings)
    cnn_type = _cnn_type(backbone)
    if cnn_type is None:
        msg = (
            f"config.txt sets CNNTstepEncoder.cnn_type = @{backbone}, a custom class AMAGO does not ship; amago cannot "
            "rebuild it (write it as an amago tstep encoder plugin and map its weights with "
            "amago.from_amago.amago_state_dict_to_amago)."
        )
        raise AmagoConfigError(msg)
    table["cnn_type"] = cnn_type
    configurable = BY_NAME.get(backbone)
    options = {param: key for param, key, _ in _settings(bindings, backbone, "tstep_encoder")}
    layers = _AMAGO_CONV_LAYERS.get(backbone)
    for param, value in bindings.get(backbone, {}).items():
        row = configurable.parameter(param) if configurable is not None else None
        if row is None or param not in options:
            msg = f"config.txt sets {backbone}.{param}, which amago's {cnn_type} CNN does not have; import-amago cannot bring this run."
            raise AmagoConfigError(msg)
        if layers is None:
            table[options[param]] = value
            continue
        if (
            not isinstance(value, list | tuple)
            or len(value) < 3
            or (backbone == "NatureishCNN" and len(value) != 3)
            or not all(isinstance(v, int) for v in value)
        ):
            msg = f"config.txt sets {backbone}.{param} = {value!r}, but AMAGO's {backbone} takes a list of 3 ints; fix the binding (AMAGO could not have built this run)."
            raise AmagoConfigError(msg)
        # AMAGO's backbones build three convolutions from the first three entries (NatureishCNN asserts
        # exactly three; GridworldCNN ignores the rest).
        three = tuple(int(v) for v in value[:3])
        if three != layers[param]:
            table[options[param]] = three
    return table


# The trajectory encoders import-amago brings, with AMAGO's defaults where a trimmed config omits them.
_TRAJ_DEFAULTS: dict[str, dict[str, Any]] = {
    "FFTrajEncoder": {"n_layers": 1, "d_model": 256, "norm": "none", "out_norm": "layer"},
    "GRUTrajEncoder": {"d_hidden": 256, "d_output": 256, "n_layers": 2, "norm": "layer"},
    "TformerTrajEncoder": {"d_model": 256, "n_heads": 8, "d_ff": 1024, "n_layers": 3, "norm": "layer"},
    # AMAGO's blocks are mamba_ssm's Mamba (v1) with its defaults; amago's pure-PyTorch mixer is the same
    # function with the same parameters (dt_rank ceil(d_model / 16), conv bias, no projection biases).
    "MambaTrajEncoder": {
        "d_model": 256,
        "d_state": 16,
        "d_conv": 4,
        "expand": 2,
        "n_layers": 3,
        "norm": "layer",
    },
}


def _traj(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found = [name for name in _TRAJ_DEFAULTS if name in bindings]
    if len(found) != 1:
        what = f"none of {', '.join(_TRAJ_DEFAULTS)}" if not found else " and ".join(found)
        msg = f"config.txt configures {what}; import-amago needs exactly one of them (pass a run's own ckpts/config.txt)."
        raise AmagoConfigError(msg)
    name = found[0]
    table = _component(bindings, name, "traj_encoder")
    for key, value in _TRAJ_DEFAULTS[name].items():
        table.setdefault(key, value)
    if name == "TformerTrajEncoder":
        # AMAGO's learnable position embedding sizes a weight; its other options stay with the attention classes.
        position = _options(bindings, "LearnablePosEmb", "traj_encoder")
        if position.get("max_time_idx") is not None:
            table["max_time_idx"] = int(position["max_time_idx"])
    return table


def _agent(bindings: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    kind_class = "MultiTaskAgent" if "MultiTaskAgent" in bindings else "Agent"
    kind = _picks(kind_class, "agent")["kind"]
    # A MultiTaskAgent header without bindings ("# None.") leaves the options to Agent's, as AMAGO's subclass does.
    name = "MultiTaskAgent" if bindings.get("MultiTaskAgent") else "Agent"
    section = bindings.get(name, {})
    table: dict[str, Any] = {"kind": kind}
    shipped = {"actor_type": ("Actor",), "critic_type": ("NCritics", "NCriticsTwoHot")}
    for param, known in shipped.items():
        ref = section.get(param)
        if not isinstance(ref, Reference) or _short(ref) in known:
            continue
        if _short(ref) in _UNSUPPORTED:
            msg = f"config.txt sets {kind_name(kind)}.{param} = @{_short(ref)}: {_UNSUPPORTED[_short(ref)]}; import-amago cannot bring this run."
        else:
            msg = (
                f"config.txt sets {kind_name(kind)}.{param} = @{_short(ref)}, a custom class AMAGO does not ship; amago "
                "cannot rebuild it (write it as an amago plugin and map its weights with "
                "amago.from_amago.amago_state_dict_to_amago)."
            )
        raise AmagoConfigError(msg)
    if section.get("pass_obs_keys_to_actor"):
        msg = "config.txt sets pass_obs_keys_to_actor, which amago's actor does not take; import-amago cannot bring this run."
        raise AmagoConfigError(msg)
    _options(bindings, name, "agent", into=table)
    table.setdefault("popart", {}).setdefault("enabled", True)
    _options(bindings, "PopArtLayer", "agent", into=table)
    table["actor"] = _component(bindings, "Actor", "agent.actor")
    table["critic"] = {}
    critic = "NCriticsTwoHot" if kind == "multitask" else "NCritics"
    _options(bindings, critic, "agent", into=table)
    table["discrete_dist"] = _component(bindings, "Discrete", "agent.discrete_dist")
    table["continuous_dist"] = _continuous(bindings)
    table["fbc_filter"] = _filter(section.get("fbc_filter_func"), bindings)
    # AMAGO keeps one list per kind of action space; which one applies is known once the spaces are.
    gammas = bindings.get("Multigammas", {})
    multigammas: dict[str, list[float]] = {
        k: [float(g) for g in gammas[k]] for k in ("discrete", "continuous") if k in gammas
    }
    return table, multigammas


def kind_name(kind: str) -> str:
    """AMAGO's class name of an amago agent kind."""
    return "MultiTaskAgent" if kind == "multitask" else "Agent"


_CONTINUOUS = ("GMM", "Multibinary", "Beta", "DiscreteLikeContinuous", "TanhGaussian")


def continuous_dist_name(bindings: dict[str, dict[str, Any]]) -> str:
    """AMAGO's continuous policy class: the Actor binding, else the one whose parameters gin recorded
    (a class bound from Python is not printed as a value, but the class's own section is)."""
    ref = bindings.get("Actor", {}).get("continuous_dist_type")
    if isinstance(ref, Reference):
        return _short(ref)
    return next((name for name in _CONTINUOUS if name in bindings), "TanhGaussian")


def _continuous(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    name = continuous_dist_name(bindings)
    if name in _UNSUPPORTED:
        msg = f"config.txt sets Actor.continuous_dist_type = @{name}: {_UNSUPPORTED[name]}; import-amago cannot bring this run."
        raise AmagoConfigError(msg)
    if name == "Multibinary":
        # unused: a MultiBinary action space always gets amago's Bernoulli policy
        return {"type": "tanh_gaussian"}
    if name in BY_NAME and "type" in _picks(name, "agent.continuous_dist"):
        return _component(bindings, name, "agent.continuous_dist")
    msg = f"config.txt sets Actor.continuous_dist_type = @{name}, a class AMAGO does not ship; amago cannot rebuild it (write it as an amago policy distribution and map the weights with amago.from_amago.amago_state_dict_to_amago)."
    raise AmagoConfigError(msg)


def _filter(ref: Any, bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    name = _short(ref) if isinstance(ref, Reference) else "binary_filter"
    if name in BY_NAME and "type" in _picks(name, "agent.fbc_filter"):
        return _component(bindings, name, "agent.fbc_filter")
    msg = f"config.txt sets fbc_filter_func = @{name}, a filter AMAGO does not ship; edit the imported run's agent.fbc_filter by hand (it only matters for further training)."
    raise AmagoConfigError(msg)


_KNOWN = _IGNORED | {
    "FFTstepEncoder",
    "FFTrajEncoder",
    "GRUTrajEncoder",
    "TformerTrajEncoder",
    "MambaTrajEncoder",
    "CNNTstepEncoder",
    "NatureishCNN",
    "IMPALAishCNN",
    "GridworldCNN",
    "DrQCNN",
    "LearnablePosEmb",
    "Agent",
    "MultiTaskAgent",
    "Actor",
    "NCritics",
    "NCriticsTwoHot",
    "PopArtLayer",
    "Multigammas",
    "Discrete",
    "TanhGaussian",
    "GMM",
    "Multibinary",
    "binary_filter",
    "exp_filter",
    "leaky_relu_filter",
}

# A configurable with one of these in its name builds part of the agent: an unknown one is a custom class.
_NETWORK_WORDS = ("TstepEncoder", "TrajEncoder", "Agent", "Actor", "Critic", "Attention", "PosEmb")


def translate(bindings: dict[str, dict[str, Any]]) -> AmagoRunConfig:
    """amago slot tables for a parsed AMAGO config (see :func:`sections`).

    Raises:
        AmagoConfigError: a custom or unsupported network class, or an option amago does not have.
    """
    for name in bindings:
        base = name.rsplit("/", 1)[-1]
        if base in _UNSUPPORTED:
            msg = f"config.txt configures {base}: {_UNSUPPORTED[base]}; import-amago cannot bring this run."
            raise AmagoConfigError(msg)
        if base not in _KNOWN and any(word in base for word in _NETWORK_WORDS):
            msg = (
                f"config.txt configures {base}, a custom class AMAGO does not ship; amago cannot rebuild it "
                "(write it as an amago plugin and map its weights with amago.from_amago.amago_state_dict_to_amago)."
            )
            raise AmagoConfigError(msg)
        if "/" in name and base in _KNOWN and base not in _IGNORED:
            msg = f"config.txt has the scoped binding {name}; import-amago reads unscoped bindings only (remove the scope or edit the imported config by hand)."
            raise AmagoConfigError(msg)
    agent, multigammas = _agent(bindings)
    notes = []
    dist = continuous_dist_name(bindings)
    if (
        dist in ("GMM", "Multibinary")
        and agent.get("online_coeff", 1.0 if agent["kind"] == "agent" else 0.0) > 0
    ):
        # amago refuses a policy gradient through samples that are not reparameterised; AMAGO let it pass.
        agent["online_coeff"] = 0.0
        notes.append(
            f"online_coeff set to 0: amago trains a {dist} policy by filtered imitation only (matters only for "
            "further training, not for acting)"
        )
    others = sorted({n for n in bindings if n.rsplit("/", 1)[-1] not in _KNOWN})
    if others:
        notes.append(f"left out config.txt sections that do not build the agent: {', '.join(others)}")
    return AmagoRunConfig(
        tstep_encoder=_tstep(bindings),
        traj_encoder=_traj(bindings),
        agent=agent,
        multigammas=multigammas,
        notes=notes,
        multibinary_policy=continuous_dist_name(bindings) == "Multibinary",
    )


def read_config(path: Path) -> AmagoRunConfig:
    """Reads (with the gin reader of ``amago migrate-gin``) and translates an AMAGO ``config.txt``.

    Raises:
        AmagoConfigError: unreadable, not a gin config, or not translatable (one line).
    """
    try:
        text = path.read_text(encoding="utf-8")
        statements = read_gin(path)
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read {path} ({exc}); pass an AMAGO run folder (it holds ckpts/config.txt)."
        raise AmagoConfigError(msg) from exc
    except GinSyntaxError as exc:
        msg = f"{exc}; pass an AMAGO run folder whose ckpts/config.txt is gin's operative config, as AMAGO wrote it."
        raise AmagoConfigError(msg) from exc
    bindings = sections(statements, text)
    if not bindings:
        msg = f"{path} holds no gin bindings; pass an AMAGO run folder (its ckpts/config.txt is gin's operative config)."
        raise AmagoConfigError(msg)
    return translate(bindings)
