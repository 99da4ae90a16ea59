"""AMAGO's ``ckpts/config.txt`` (gin's operative config) as amago component configs.

gin writes one ``Configurable.parameter = value`` line per parameter the run used, grouped under
``# Parameters for Configurable:`` headers; values are Python literals, ``@Name`` references or ``%MACROS``.
This module reads that text without gin (and without AMAGO), decides which timestep encoder, trajectory
encoder and agent the run used, and translates their options into the tables amago's ``tstep_encoder``,
``traj_encoder`` and ``agent`` slots take. Bindings that only affect training data, logging or the env
(``Experiment``, datasets, exploration) are left out; a binding that changes the networks and has no
amago counterpart stops the import with one line naming it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["AmagoConfigError", "AmagoRunConfig", "parse_gin", "read_config", "translate"]


class AmagoConfigError(ValueError):
    """An AMAGO config that cannot be translated (the message is one line and says what to do)."""


@dataclass(frozen=True)
class Reference:
    """A gin ``@Name`` (or ``@Name()``) value: a class or function chosen by name."""

    name: str

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1].removesuffix("()")


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


_BINDING = re.compile(
    r"^(?:(?P<scope>[\w./]+)/)?(?P<target>[\w.]+)\.(?P<param>\w+)\s*=\s*(?P<value>.*)$", re.S
)


def _value(text: str) -> Any:
    text = text.strip()
    if text.startswith("@"):
        return Reference(text[1:])
    if text.startswith("%"):
        return Reference(text)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return Reference(text)


def parse_gin(text: str) -> dict[str, dict[str, Any]]:
    """``{Configurable: {parameter: value}}`` from gin's operative config text.

    Module paths and scopes are dropped (``amago.nets.traj_encoders.TformerTrajEncoder`` →
    ``TformerTrajEncoder``); a scoped binding is kept under ``scope/Configurable``.
    """
    statements: list[str] = []
    depth = 0
    for raw in text.splitlines():
        line = raw.split("#", 1)[0] if not raw.lstrip().startswith(("'", '"')) else raw
        if not line.strip():
            continue
        if depth > 0 or (statements and raw[:1].isspace()):
            statements[-1] += "\n" + line
        else:
            statements.append(line)
        depth += line.count("[") + line.count("(") + line.count("{")
        depth -= line.count("]") + line.count(")") + line.count("}")
        depth = max(depth, 0)
    bindings: dict[str, dict[str, Any]] = {}
    # gin heads each configurable it called with a comment, even one whose parameters were all left alone
    # ("# None."): that still says which class the run used.
    for header in re.findall(r"^# Parameters for ([\w./]+):\s*$", text, flags=re.M):
        bindings.setdefault(header.rsplit(".", 1)[-1], {})
    for statement in statements:
        if statement.lstrip().startswith(("import ", "include ")):
            continue
        match = _BINDING.match(statement.strip())
        if match is None:
            continue
        target = match["target"].rsplit(".", 1)[-1]
        if match["scope"]:
            target = f"{match['scope']}/{target}"
        bindings.setdefault(target, {})[match["param"]] = _value(match["value"])
    return bindings


# AMAGO's own configurables that only shape data, rollouts, logging or envs: nothing an imported policy needs.
_IGNORED = {
    "Experiment",
    "DiskTrajDataset",
    "RLDataset",
    "DoNothingDataset",
    "MixtureOfDatasets",
    "EpsilonGreedy",
    "BilevelEpsilonGreedy",
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

_NORMS = {None: "none", "none": "none", "layer": "layer", "rmsnorm": "rmsnorm", "unitball": "unitball"}
_NORMS |= {"hypersphere": "hypersphere", "simnorm": "simnorm"}


def _norm(value: Any, where: str) -> str:
    if value in _NORMS:
        return _NORMS[value]
    msg = f"config.txt sets {where} = {value!r}, a normalisation amago does not have; retrain with one of {sorted(k for k in _NORMS if k)}."
    raise AmagoConfigError(msg)


def _take(section: dict[str, Any], names: dict[str, str], out: dict[str, Any]) -> None:
    """Copies ``section[amago_name]`` into ``out[amago_name]`` for the mapped names that are set."""
    for amago_name, ours in names.items():
        if amago_name in section:
            out[ours] = section[amago_name]


def _tstep(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found = [name for name in ("FFTstepEncoder", "CNNTstepEncoder") if name in bindings]
    if len(found) > 1:
        msg = "config.txt configures both FFTstepEncoder and CNNTstepEncoder; import-amago needs the one the run used (pass a run's own ckpts/config.txt)."
        raise AmagoConfigError(msg)
    if found == ["CNNTstepEncoder"]:
        return _cnn_tstep(bindings)
    section = bindings.get("FFTstepEncoder", {})
    table: dict[str, Any] = {"kind": "ff"}
    _take(
        section,
        {
            "n_layers": "n_layers",
            "d_hidden": "d_hidden",
            "d_output": "d_output",
            "activation": "activation",
            "normalize_inputs": "normalize_inputs",
            "hide_rl2s": "hide_rl2s",
            "auto_scale": "auto_scale",
        },
        table,
    )
    # AMAGO's FFTstepEncoder defaults where the config omits them (gin lists every parameter a run used,
    # so these only matter for hand-written or trimmed configs).
    table.setdefault("n_layers", 2)
    table.setdefault("d_hidden", 512)
    table.setdefault("d_output", 256)
    table["norm"] = _norm(section.get("norm"), "FFTstepEncoder.norm")
    table["out_norm"] = _norm(section.get("out_norm", "layer"), "FFTstepEncoder.out_norm")
    keys = section.get("specify_obs_keys")
    if keys is not None:
        table["obs_keys"] = tuple(keys)
    return table


# CNNTstepEncoder parameters amago's ``cnn`` encoder takes under the same name (AMAGO's defaults are amago's).
_CNN_OPTIONS = (
    "obs_key",
    "channels_first",
    "img_features",
    "rl2_features",
    "d_output",
    "activation",
    "hide_rl2s",
    "drqv2_aug",
    "aug_pct_of_batch",
)
_CNN_BACKBONES = ("NatureishCNN", "IMPALAishCNN", "GridworldCNN", "DrQCNN")
# AMAGO's backbones with plain convolutions: amago's cnn_type, and AMAGO's defaults of the options it takes
# (amago's cnn_<option> fields; a value equal to AMAGO's default is left unset, as amago's default is the same).
_CONV_BACKBONES: dict[str, tuple[str, dict[str, tuple[int, ...]]]] = {
    "NatureishCNN": ("nature", {"channels": (32, 64, 64), "kernels": (8, 4, 3), "strides": (4, 2, 1)}),
    "GridworldCNN": ("gridworld", {"channels": (16, 32, 48), "kernels": (2, 2, 2), "strides": (1, 1, 1)}),
    "DrQCNN": ("drq", {}),
}


def _cnn_backbone(bindings: dict[str, dict[str, Any]]) -> str:
    """AMAGO's CNN class: ``CNNTstepEncoder.cnn_type``, else the backbone whose section gin recorded (a class
    passed from Python is not printed as a value), else AMAGO's default ``NatureishCNN``."""
    ref = bindings["CNNTstepEncoder"].get("cnn_type")
    if isinstance(ref, Reference):
        return ref.short
    return next((name for name in _CNN_BACKBONES if name in bindings), "NatureishCNN")


def _cnn_tstep(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """AMAGO's ``CNNTstepEncoder`` as amago's ``cnn`` tstep encoder (NatureishCNN → nature, IMPALAishCNN → impala,
    GridworldCNN → gridworld, DrQCNN → drq; channels, kernels and strides → cnn_channels, cnn_kernels, cnn_strides)."""
    section = bindings["CNNTstepEncoder"]
    for param in section:
        if param not in (*_CNN_OPTIONS, "out_norm", "cnn_type"):
            msg = f"config.txt sets CNNTstepEncoder.{param}, which amago's cnn timestep encoder does not have; import-amago cannot bring this run (remove the binding if it is not AMAGO v3.3.0's)."
            raise AmagoConfigError(msg)
    table: dict[str, Any] = {"kind": "cnn"}
    _take(section, {name: name for name in _CNN_OPTIONS}, table)
    table.setdefault("img_features", 256)
    table.setdefault("rl2_features", 12)
    table.setdefault("d_output", 256)
    table["out_norm"] = _norm(section.get("out_norm", "layer"), "CNNTstepEncoder.out_norm")
    if table.get("activation") == "adaptive":
        # AMAGO's CNN calls one SlowAdaptiveRational for every layer of its backbone; amago's IMPALA blocks
        # and the weight mapping keep one per block, so the coefficients cannot be placed.
        msg = "config.txt sets CNNTstepEncoder.activation = 'adaptive', whose learned coefficients import-amago does not map; retrain with a fixed activation (leaky_relu, relu, gelu, mish)."
        raise AmagoConfigError(msg)
    backbone = _cnn_backbone(bindings)
    options = bindings.get(backbone, {})
    if backbone in _CONV_BACKBONES:
        cnn_type, defaults = _CONV_BACKBONES[backbone]
        table["cnn_type"] = cnn_type
        for param, value in options.items():
            if param not in defaults:
                msg = f"config.txt sets {backbone}.{param}, which amago's {cnn_type} CNN does not have; import-amago cannot bring this run."
                raise AmagoConfigError(msg)
            if (
                not isinstance(value, (list, tuple))
                or len(value) < 3
                or (backbone == "NatureishCNN" and len(value) != 3)
                or not all(isinstance(v, int) for v in value)
            ):
                msg = f"config.txt sets {backbone}.{param} = {value!r}, but AMAGO's {backbone} takes a list of 3 ints; fix the binding (AMAGO could not have built this run)."
                raise AmagoConfigError(msg)
            # AMAGO's backbones build three convolutions from the first three entries (NatureishCNN asserts
            # exactly three; GridworldCNN ignores the rest).
            layers = tuple(int(v) for v in value[:3])
            if layers != defaults[param]:
                table[f"cnn_{param}"] = layers
        return table
    if backbone == "IMPALAishCNN":
        table["cnn_type"] = "impala"
        for param in options:
            if param not in ("cnn_block_depths", "post_group_norm"):
                msg = f"config.txt sets IMPALAishCNN.{param}, which amago's impala CNN does not have; import-amago cannot bring this run."
                raise AmagoConfigError(msg)
        if "cnn_block_depths" in options:
            table["impala_block_depths"] = tuple(int(d) for d in options["cnn_block_depths"])
        if "post_group_norm" in options:
            table["impala_post_group_norm"] = bool(options["post_group_norm"])
        return table
    msg = (
        f"config.txt sets CNNTstepEncoder.cnn_type = @{backbone}, a custom class AMAGO does not ship; amago cannot "
        "rebuild it (write it as an amago tstep encoder plugin and map its weights with "
        "amago.from_amago.amago_state_dict_to_amago)."
    )
    raise AmagoConfigError(msg)


def _traj(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    classes = ("FFTrajEncoder", "GRUTrajEncoder", "TformerTrajEncoder", "MambaTrajEncoder")
    found = [name for name in classes if name in bindings]
    if len(found) != 1:
        what = f"none of {', '.join(classes)}" if not found else " and ".join(found)
        msg = f"config.txt configures {what}; import-amago needs exactly one of them (pass a run's own ckpts/config.txt)."
        raise AmagoConfigError(msg)
    section = bindings[found[0]]
    if found[0] == "FFTrajEncoder":
        table: dict[str, Any] = {"kind": "ff", "n_layers": 1, "d_model": 256}
        _take(
            section,
            {
                "d_model": "d_model",
                "d_ff": "d_ff",
                "n_layers": "n_layers",
                "dropout": "dropout",
                "activation": "activation",
            },
            table,
        )
        table["norm"] = _norm(section.get("norm"), "FFTrajEncoder.norm")
        table["out_norm"] = _norm(section.get("out_norm", "layer"), "FFTrajEncoder.out_norm")
        return table
    if found[0] == "MambaTrajEncoder":
        # AMAGO's blocks are mamba_ssm's Mamba (v1) with its defaults; amago's pure-PyTorch mixer is the same
        # function with the same parameters (dt_rank ceil(d_model / 16), conv bias, no projection biases).
        table = {"kind": "mamba", "d_model": 256, "d_state": 16, "d_conv": 4, "expand": 2, "n_layers": 3}
        _take(section, {n: n for n in ("d_model", "d_state", "d_conv", "expand", "n_layers")}, table)
        table["norm"] = _norm(section.get("norm", "layer"), "MambaTrajEncoder.norm")
        return table
    if found[0] == "GRUTrajEncoder":
        table = {"kind": "rnn", "d_hidden": 256, "d_output": 256, "n_layers": 2}
        _take(section, {"d_hidden": "d_hidden", "d_output": "d_output", "n_layers": "n_layers"}, table)
        table["norm"] = _norm(section.get("norm", "layer"), "GRUTrajEncoder.norm")
        return table
    table = {"kind": "transformer", "d_model": 256, "n_heads": 8, "d_ff": 1024, "n_layers": 3}
    names = [
        "d_model",
        "n_heads",
        "d_ff",
        "n_layers",
        "dropout_ff",
        "dropout_emb",
        "dropout_attn",
        "dropout_qkv",
        "activation",
        "pos_emb",
        "sigma_reparam",
        "normformer_norms",
        "head_scaling",
    ]
    _take(section, {n: n for n in names}, table)
    table["norm"] = _norm(section.get("norm", "layer"), "TformerTrajEncoder.norm")
    max_time = bindings.get("LearnablePosEmb", {}).get("max_time_idx")
    if max_time is not None:
        table["max_time_idx"] = int(max_time)
    return table


_AGENT_OPTIONS = {
    "num_critics": "num_critics",
    "num_critics_td": "num_critics_td",
    "online_coeff": "online_coeff",
    "offline_coeff": "offline_coeff",
    "critic_loss_weight": "critic_loss_weight",
    "gamma": "gamma",
    "use_multigamma": "use_multigamma",
    "reward_multiplier": "reward_multiplier",
    "tau": "tau",
    "fake_filter": "fake_filter",
    "num_actions_for_value_in_critic_loss": "num_actions_for_value_in_critic_loss",
    "num_actions_for_value_in_actor_loss": "num_actions_for_value_in_actor_loss",
    "n_step": "n_step",
    "use_target_actor": "use_target_actor",
}


def _agent(bindings: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    kind = "multitask" if "MultiTaskAgent" in bindings else "agent"
    section = bindings.get("MultiTaskAgent") or bindings.get("Agent", {})
    table: dict[str, Any] = {"kind": kind}
    _take(section, _AGENT_OPTIONS, table)
    shipped = {"actor_type": ("Actor",), "critic_type": ("NCritics", "NCriticsTwoHot")}
    for param, known in shipped.items():
        ref = section.get(param)
        if not isinstance(ref, Reference) or ref.short in known:
            continue
        if ref.short in _UNSUPPORTED:
            msg = f"config.txt sets {kind_name(kind)}.{param} = @{ref.short}: {_UNSUPPORTED[ref.short]}; import-amago cannot bring this run."
        else:
            msg = (
                f"config.txt sets {kind_name(kind)}.{param} = @{ref.short}, a custom class AMAGO does not ship; amago "
                "cannot rebuild it (write it as an amago plugin and map its weights with "
                "amago.from_amago.amago_state_dict_to_amago)."
            )
        raise AmagoConfigError(msg)
    if section.get("pass_obs_keys_to_actor"):
        msg = "config.txt sets pass_obs_keys_to_actor, which amago's actor does not take; import-amago cannot bring this run."
        raise AmagoConfigError(msg)
    popart = bindings.get("PopArtLayer", {})
    table["popart"] = {"enabled": bool(section.get("popart", True))}
    _take(popart, {"beta": "beta", "init_nu": "init_nu"}, table["popart"])
    actor = bindings.get("Actor", {})
    table["actor"] = {"type": "plain"}
    _take(
        actor,
        {"n_layers": "n_layers", "d_hidden": "d_hidden", "activation": "activation", "dropout_p": "dropout"},
        table["actor"],
    )
    critic_section = "NCriticsTwoHot" if kind == "multitask" else "NCritics"
    critic = bindings.get(critic_section, {})
    table["critic"] = {}
    _take(
        critic,
        {"n_layers": "n_layers", "d_hidden": "d_hidden", "activation": "activation", "dropout_p": "dropout"},
        table["critic"],
    )
    if kind == "multitask":
        names = {"min_return": "min_return", "max_return": "max_return", "output_bins": "output_bins"}
        names |= {"use_symlog": "use_symlog", "label_type": "label_type", "sigma": "hlgauss_sigma"}
        _take(critic, names, table)
    discrete = bindings.get("Discrete", {})
    table["discrete_dist"] = {"type": "discrete"}
    _take(
        discrete,
        {"clip_prob_low": "clip_prob_low", "clip_prob_high": "clip_prob_high"},
        table["discrete_dist"],
    )
    table["continuous_dist"] = _continuous(bindings)
    filter_ref = section.get("fbc_filter_func")
    table["fbc_filter"] = _filter(bindings, filter_ref)
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
        return ref.short
    return next((name for name in _CONTINUOUS if name in bindings), "TanhGaussian")


def _continuous(bindings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    name = continuous_dist_name(bindings)
    if name in _UNSUPPORTED:
        msg = f"config.txt sets Actor.continuous_dist_type = @{name}: {_UNSUPPORTED[name]}; import-amago cannot bring this run."
        raise AmagoConfigError(msg)
    section = bindings.get(name, {})
    if name == "TanhGaussian":
        table: dict[str, Any] = {"type": "tanh_gaussian"}
        _take(section, {"std_low": "std_low", "std_high": "std_high"}, table)
        return table
    if name == "GMM":
        table = {"type": "gmm"}
        _take(section, {"gmm_modes": "modes", "std_low": "std_low"}, table)
        return table
    if name == "Multibinary":
        return {
            "type": "tanh_gaussian"
        }  # unused: a MultiBinary action space always gets amago's Bernoulli policy
    msg = f"config.txt sets Actor.continuous_dist_type = @{name}, a class AMAGO does not ship; amago cannot rebuild it (write it as an amago policy distribution and map the weights with amago.from_amago.amago_state_dict_to_amago)."
    raise AmagoConfigError(msg)


def _filter(bindings: dict[str, dict[str, Any]], ref: Any) -> dict[str, Any]:
    name = ref.short if isinstance(ref, Reference) else "binary_filter"
    section = bindings.get(name, {})
    if name == "binary_filter":
        table: dict[str, Any] = {"type": "binary"}
        _take(section, {"threshold": "threshold"}, table)
        return table
    if name == "exp_filter":
        table = {"type": "exp"}
        names = ["beta", "adv_clip_low", "adv_clip_high", "weight_clip_low", "weight_clip_high"]
        _take(section, {n: n for n in names}, table)
        return table
    if name == "leaky_relu_filter":
        table = {"type": "leaky_relu"}
        names = ["beta", "tau", "negative_slope", "target_f0", "clip_low", "clip_high", "add_binary"]
        _take(section, {n: n for n in names}, table)
        return table
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
    """amago slot tables for a parsed AMAGO config (see :func:`parse_gin`).

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
    """Parses and translates an AMAGO ``config.txt``.

    Raises:
        AmagoConfigError: unreadable, not a gin config, or not translatable (one line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read {path} ({exc}); pass an AMAGO run folder (it holds ckpts/config.txt)."
        raise AmagoConfigError(msg) from exc
    bindings = parse_gin(text)
    if not bindings:
        msg = f"{path} holds no gin bindings; pass an AMAGO run folder (its ckpts/config.txt is gin's operative config)."
        raise AmagoConfigError(msg)
    return translate(bindings)
