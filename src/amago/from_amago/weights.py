"""AMAGO v3.3.0 state-dict keys and shapes → amago's (``Agent`` / ``MultiTaskAgent``).

AMAGO and amago build the same networks under other module names, and a few tensors are laid out differently.
The rules, applied key by key:

* MLPs (timestep encoder, actor): AMAGO's ``base.in_layer`` / ``base.layers.{i}`` / ``base.out_layer`` are the
  Linear layers of amago's ``Sequential`` (four modules per hidden layer: Linear, norm, activation, dropout),
  so Linear ``k`` is ``net.{4k}`` and its hidden norm ``net.{4k + 1}``.
* AMAGO wraps every norm in a ``Normalization`` module (``X.norm.weight``); amago's is the norm itself
  (``X.weight``).
* Mamba blocks: ``traj_encoder.mambas.{i}.norm`` → ``traj_encoder.norms.{i}`` and ``traj_encoder.mambas.{i}.mamba``
  (mamba_ssm's ``Mamba``: ``in_proj``, ``conv1d``, ``x_proj``, ``dt_proj``, ``A_log``, ``D``, ``out_proj``) →
  ``traj_encoder.mixers.{i}``, same names and shapes.
* Critic ensembles: AMAGO's first layer reads ``cat(state, gamma feature, action)`` with one weight
  ``(C, state_dim + 1 + A, d)``; amago splits it into ``inp_state`` ``(C, state_dim, d)`` and a bias-free
  ``inp_extra`` ``(C, 1 + A, d)`` (absent when the input is the state only). EinMix biases ``(1, 1, C, d)``
  are ``(C, 1, d)``. ``core_layers`` → ``hidden``, ``output_layer`` → ``out``. amago's extra
  ``previous_critics`` (the one-update-stale copy) starts as the online critics; its ``gamma_features``
  buffers are amago's own and are kept.
* Counters: AMAGO's PopArt and InputNorm ``_t`` count from 1, amago's ``updates`` / ``steps`` count updates
  done, so the value is ``_t - 1``.
* σReparam gains are ``(1,)`` in AMAGO and scalars in amago.

Only tensors go in and out: callers load AMAGO's files with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch  # noqa: TID253 (this module is the weight converter: it is only imported when converting)

__all__ = ["AmagoCheckpointError", "amago_state_dict_to_amago"]

_CRITIC_HEADS = ("critics", "target_critics", "maximized_critics")

# (pattern, replacement) pairs tried in order on every key once the MLP layers have been renumbered; the
# first match wins. Norm wrappers are stripped afterwards.
_RENAMES: tuple[tuple[str, str], ...] = (
    # Timestep encoder.
    (r"^tstep_encoder\.in_norm\.(mu|nu)$", r"tstep_encoder.input_norm.\1"),
    # FF trajectory encoder.
    (r"^traj_encoder\.traj_emb\.", "traj_encoder.inp."),
    (r"^traj_encoder\.traj_blocks\.", "traj_encoder.blocks."),
    (r"^traj_encoder\.traj_last\.", "traj_encoder.out."),
    # Transformer trajectory encoder.
    (r"^traj_encoder\.tformer\.inp\.", "traj_encoder.inp."),
    (r"^traj_encoder\.tformer\.norm\.", "traj_encoder.out_norm."),
    (r"^traj_encoder\.tformer\.position_embedding\.embeddings\.", "traj_encoder.pos_emb.table."),
    (
        r"^traj_encoder\.tformer\.layers\.(\d+)\.attention_layer\.qkv_projection\.",
        r"traj_encoder.layers.\1.attention.qkv.",
    ),
    (
        r"^traj_encoder\.tformer\.layers\.(\d+)\.attention_layer\.out_projection\.",
        r"traj_encoder.layers.\1.attention.out.",
    ),
    (
        r"^traj_encoder\.tformer\.layers\.(\d+)\.attention_layer\.head_scaler$",
        r"traj_encoder.layers.\1.attention.head_scale",
    ),
    (
        r"^traj_encoder\.tformer\.layers\.(\d+)\.attention_layer\.",
        r"traj_encoder.layers.\1.attention.",
    ),
    (r"^traj_encoder\.tformer\.layers\.", "traj_encoder.layers."),
    # Mamba trajectory encoder: AMAGO's block i holds its pre-norm and mamba_ssm's Mamba; amago keeps the norms
    # and the mixers (the same parameters under the same names) in two lists.
    (r"^traj_encoder\.mambas\.(\d+)\.norm\.", r"traj_encoder.norms.\1."),
    (r"^traj_encoder\.mambas\.(\d+)\.mamba\.", r"traj_encoder.mixers.\1."),
    # Critic ensembles.
    (r"^(critics|target_critics|maximized_critics)\.net\.core_layers\.", r"\1.hidden."),
    (r"^(critics|target_critics|maximized_critics)\.net\.output_layer\.", r"\1.out."),
)

# AMAGO MLP parameters: (owner prefix in AMAGO, owner prefix in amago).
_MLPS: tuple[tuple[str, str], ...] = (
    ("tstep_encoder.base.", "tstep_encoder.mlp.net."),
    ("actor.base.", "actor.net.net."),
    ("target_actor.base.", "target_actor.net.net."),
)

_MLP_KEY = re.compile(r"^(in_layer|in_norm\.norm|out_layer|layers\.(\d+)|norms\.(\d+)\.norm)\.(.+)$")


class AmagoCheckpointError(ValueError):
    """An AMAGO checkpoint that cannot be mapped onto the amago agent (the message is one line)."""


def _mlp_hidden_layers(amago_sd: Mapping[str, torch.Tensor], prefix: str) -> int:
    """Number of hidden Linear layers (``in_layer`` plus ``layers.{i}``) of the AMAGO MLP under ``prefix``."""
    extra = {
        int(m.group(1))
        for key in amago_sd
        if key.startswith(prefix) and (m := re.match(r"layers\.(\d+)\.", key[len(prefix) :]))
    }
    return 1 + (max(extra) + 1 if extra else 0)


def _rename_mlp(key: str, amago_sd: Mapping[str, torch.Tensor]) -> str | None:
    """amago's name of an AMAGO MLP parameter, or None when ``key`` is not in one."""
    for old, new in _MLPS:
        if not key.startswith(old):
            continue
        match = _MLP_KEY.match(key[len(old) :])
        if match is None:
            return None
        part, layer, norm, leaf = match.groups()
        if part == "in_layer":
            index = 0
        elif part == "in_norm.norm":
            index = 1
        elif part == "out_layer":
            index = 4 * _mlp_hidden_layers(amago_sd, old)
        elif layer is not None:
            index = 4 * (int(layer) + 1)
        else:
            index = 4 * (int(norm) + 1) + 1
        return f"{new}{index}.{leaf}"
    return None


_NATURE_CONV = re.compile(r"^tstep_encoder\.cnn\.conv(\d+)\.(.+)$")
_IMPALA_PART = re.compile(r"^tstep_encoder\.cnn\.blocks\.(\d+)\.(conv|residual1|residual2)\.(.+)$")


def _rename_cnn(key: str) -> str | None:
    """amago's name of an AMAGO CNN backbone parameter, or None when ``key`` is not one.

    amago's backbones are one ``Sequential``: Nature-ish, DrQ and gridworld ``conv{i}`` is module ``2 (i - 1)``
    (conv, activation, ...); IMPALA-ish block ``b`` is modules ``4b`` (conv), ``4b + 1`` (pool), ``4b + 2`` and ``4b + 3`` (the
    residual blocks, whose inner names, GroupNorm ``norm`` included, are the same).
    """
    nature = _NATURE_CONV.match(key)
    if nature is not None:
        return f"tstep_encoder.cnn.net.{2 * (int(nature.group(1)) - 1)}.{nature.group(2)}"
    impala = _IMPALA_PART.match(key)
    if impala is not None:
        block, part, rest = int(impala.group(1)), impala.group(2), impala.group(3)
        offset = {"conv": 0, "residual1": 2, "residual2": 3}[part]
        return f"tstep_encoder.cnn.net.{4 * block + offset}.{rest}"
    return None


def _rename(key: str, amago_sd: Mapping[str, torch.Tensor]) -> str:
    """amago's name for an AMAGO key (unchanged when no rule applies; the caller checks it exists)."""
    mlp = _rename_mlp(key, amago_sd)
    if mlp is not None:
        return mlp
    cnn = _rename_cnn(key)
    if cnn is not None:
        return cnn  # inside a backbone, `.norm` is a real module (GroupNorm), not AMAGO's norm wrapper
    for pattern, replacement in _RENAMES:
        new, hits = re.subn(pattern, replacement, key)
        if hits:
            key = new
            break
    # AMAGO's Normalization wrapper holds the norm as `.norm`; amago's norms are the modules themselves.
    return re.sub(r"\.norm\.(weight|bias|scale)$", r".\1", key)


def _fail(message: str) -> AmagoCheckpointError:
    return AmagoCheckpointError(message)


def _count(tensor: torch.Tensor) -> torch.Tensor:
    """AMAGO's ``_t`` (counts from 1, float) as amago's update counter (int64 scalar)."""
    return torch.tensor(max(round(float(tensor.reshape(-1)[0])) - 1, 0), dtype=torch.long)


def _split_critic_input(
    head: str, weight: torch.Tensor, target: Mapping[str, torch.Tensor], out: dict[str, torch.Tensor]
) -> None:
    """Splits AMAGO's ``(C, state + 1 + A, d)`` input weight into amago's ``inp_state`` / ``inp_extra``."""
    state_key, extra_key = f"{head}.inp_state.weight", f"{head}.inp_extra.weight"
    if state_key not in target:
        raise _fail(
            f"AMAGO key {head}.net.inp_layer.weight has no counterpart in the amago agent (no {state_key}); "
            "check that the agent kind matches the checkpoint."
        )
    state_dim = target[state_key].shape[1]
    extra_dim = target[extra_key].shape[1] if extra_key in target else 0
    if weight.ndim != 3 or weight.shape[1] != state_dim + extra_dim:
        raise _fail(
            f"AMAGO key {head}.net.inp_layer.weight has shape {tuple(weight.shape)}, but the amago agent's "
            f"critic reads {state_dim} state + {extra_dim} gamma/action inputs; check the action space and "
            "the traj encoder's size."
        )
    out[state_key] = weight[:, :state_dim]
    if extra_dim:
        out[extra_key] = weight[:, state_dim:]


def amago_state_dict_to_amago(
    amago_sd: Mapping[str, torch.Tensor], agent: torch.nn.Module
) -> dict[str, torch.Tensor]:
    """An AMAGO v3.3.0 agent state dict as one that ``agent.load_state_dict(..., strict=True)`` accepts.

    Args:
        amago_sd: AMAGO's ``Agent`` / ``MultiTaskAgent`` ``state_dict()`` (e.g. ``ckpts/latest/policy.pt``
            loaded with ``torch.load(path, weights_only=True, map_location="cpu")``).
        agent: the amago agent built with the same sizes, action space and encoders (its own tensors supply
            the buffers AMAGO does not have: ``gamma_features``).

    Returns:
        A new state dict keyed like ``agent.state_dict()``, with the dtypes of ``agent``'s tensors.

    Raises:
        AmagoCheckpointError: a key AMAGO has and amago does not (or the reverse), or a shape that differs;
            the one-line message names the key.
    """
    target = agent.state_dict()
    out: dict[str, torch.Tensor] = {}
    for key, tensor in amago_sd.items():
        if not isinstance(tensor, torch.Tensor):
            raise _fail(f"AMAGO key {key} holds a {type(tensor).__name__}, not a tensor; pass a state dict.")
        if key == "tstep_encoder.in_norm._t":
            if "tstep_encoder.input_norm.steps" in target:
                out["tstep_encoder.input_norm.steps"] = _count(tensor)
            continue
        if key.startswith("tstep_encoder.in_norm.") and "tstep_encoder.input_norm.mu" not in target:
            # AMAGO always keeps the statistics; amago builds them only when normalize_inputs is on.
            continue
        if key == "popart._t":
            out["popart.updates"] = _count(tensor)
            continue
        head = key.split(".", 1)[0]
        if head in _CRITIC_HEADS and key == f"{head}.net.inp_layer.weight":
            _split_critic_input(head, tensor, target, out)
            continue
        if head in _CRITIC_HEADS and key == f"{head}.net.inp_layer.bias":
            out[f"{head}.inp_state.bias"] = tensor
            continue
        new_key = _rename(key, amago_sd)
        if _QKV.match(new_key):
            tensor = _heads_contiguous(new_key, tensor, target)
        out[new_key] = tensor

    # amago's stale critic copy starts equal to the online critics (what AMAGO's update would see).
    for key in target:
        if key.startswith("previous_critics.") and key not in out:
            source = "critics." + key[len("previous_critics.") :]
            if source in out:
                out[key] = out[source]
        if key.endswith("gamma_features") and key not in out:
            out[key] = target[key]

    result: dict[str, torch.Tensor] = {}
    for key, tensor in out.items():
        if key not in target:
            original = next((k for k in amago_sd if _rename(k, amago_sd) == key), key)
            raise _fail(
                f"AMAGO key {original} (as {key}) has no counterpart in the amago agent; the checkpoint uses a "
                "module or option amago's agent was not built with (check the agent, encoders and sizes)."
            )
        want = target[key]
        value = tensor.detach().to("cpu")
        if value.shape != want.shape:
            if value.numel() == want.numel() and _reshape_allowed(key, value.shape, want.shape):
                value = value.reshape(want.shape)
            else:
                raise _fail(
                    f"AMAGO tensor for {key} has shape {tuple(value.shape)}, amago expects {tuple(want.shape)}; "
                    "the checkpoint's sizes or action space differ from the agent's."
                )
        result[key] = value.to(want.dtype).clone()
    missing = [key for key in target if key not in result]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise _fail(
            f"the AMAGO checkpoint has nothing for amago's {missing[0]}{more}; the agent was built with a "
            "module the checkpoint lacks (check the agent kind, encoders and their options)."
        )
    return result


_QKV = re.compile(r"^traj_encoder\.layers\.(\d+)\.attention\.qkv\.(weight|u)$")


def _heads_contiguous(key: str, tensor: torch.Tensor, target: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """AMAGO packs the qkv projection's outputs as (q/k/v, head_dim, head), amago as (q/k/v, head, head_dim):
    the rows of the weight (and σReparam's ``u``, one entry per row) are permuted accordingly."""
    layer = key.split(".")[2]
    scale = target.get(f"traj_encoder.layers.{layer}.attention.head_scale")
    if scale is None:
        raise _fail(f"cannot find the head count of amago's {key} (no head_scale in its attention layer).")
    heads = int(scale.shape[2])
    head_dim = tensor.shape[0] // (3 * heads)
    rest = tuple(tensor.shape[1:])
    return tensor.reshape(3, head_dim, heads, *rest).transpose(1, 2).reshape(tensor.shape)


def _reshape_allowed(key: str, have: torch.Size, want: torch.Size) -> bool:
    """Layout-only differences: σReparam gains ``(1,)`` → ``()`` and EinMix biases ``(1, 1, C, d)`` → ``(C, 1, d)``."""
    if key.endswith(".gamma") and tuple(have) == (1,) and tuple(want) == ():
        return True
    return (
        key.endswith(".bias")
        and len(have) == 4
        and tuple(have[:2]) == (1, 1)
        and len(want) == 3
        and want[1] == 1
        and (want[0], want[2]) == (have[2], have[3])
    )
