"""The AMAGO side of the nets parity check: runs AMAGO v3.3.0's components on the cases' inputs.

Run only by ``bench/nets_parity_vs_amago.py``, with the interpreter of the AMAGO reference venv::

    TORCH_COMPILE_DISABLE=1 .venv-amago-ref/bin/python bench/nets_amago_ref.py WORK_DIR

``WORK_DIR/cases.json`` lists the cases (``tests/parity/nets_parity_cases.py``) and ``WORK_DIR/inputs/<case>.npz``
holds each one's inputs; this program writes ``WORK_DIR/amago_ref/<case>.npz`` with what AMAGO computed. It
calls AMAGO's own classes (``SlowAdaptiveRational``, ``ClippedSlidingSinkAttention``, ``Cache``,
``TformerHiddenState``, the ``amago.nets.cnn`` backbones) and copies no AMAGO code.

On CPU, torch's flex_attention compiles even its eager path, which fails here (torch.compile is off, as AMAGO's
``@torch.compile`` decorators crash on CPU); flex's debug switch runs its reference implementation instead,
which applies the same ``score_mod`` and ``mask_mod`` to the full score matrix: AMAGO's mask and clip, unfused.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")  # before torch is imported
import torch
import torch.nn.attention.flex_attention as flex

flex._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True
torch.set_num_threads(1)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "parity"))
import nets_parity_cases as cases  # noqa: E402  (numpy and torch only: no amago import)

from amago.nets import cnn, transformer  # noqa: E402
from amago.nets.utils import activation_switch  # noqa: E402


def rational(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """AMAGO's ``"adaptive"`` activation: its initial coefficients; values and gradients of ``sum(f(x) * upstream)``
    on coefficients moved by the case's offsets."""
    module = activation_switch("adaptive")
    init_numerator = module.numerator.detach().numpy().copy()
    init_denominator = module.denominator.detach().numpy().copy()
    with torch.no_grad():
        module.numerator.add_(torch.from_numpy(inputs["numerator_delta"]))
        module.denominator.mul_(torch.from_numpy(inputs["denominator_scale"]))
        module.denominator.add_(torch.from_numpy(inputs["denominator_delta"]))
    x = torch.from_numpy(inputs["x"]).requires_grad_(True)
    y = module(x)
    (y * torch.from_numpy(inputs["upstream"])).sum().backward()
    return {
        "init_numerator": init_numerator,
        "init_denominator": init_denominator,
        "y": y.detach().numpy(),
        "grad_x": x.grad.numpy(),
        "grad_numerator": module.numerator.grad.numpy(),
        "grad_denominator": module.denominator.grad.numpy(),
    }


def sliding_sink(case: dict, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """AMAGO's ``ClippedSlidingSinkAttention``: training forward, and a rollout through its KV cache."""
    attention = transformer.ClippedSlidingSinkAttention(
        causal=True,
        dropout=0.0,
        window_size=case["window"],
        logit_clip=case["logit_clip"] or 0.0,  # AMAGO's "no clip" is 0
        sink_size=case["sink"],
    )
    qkv = torch.from_numpy(inputs["qkv"])
    batch, length, _, heads, head_dim = qkv.shape
    attention.train()  # AMAGO's training path asserts train mode; flex has no CPU backward, so no grads
    with torch.no_grad():
        train = attention(qkv)
    attention.eval()
    # One layer's cache, long enough that it never rolls before the last step.
    caches = [transformer.Cache("cpu", torch.float32, 1, batch, length, heads, head_dim) for _ in range(2)]
    state = transformer.TformerHiddenState(*caches, seq_lens=torch.zeros(batch, dtype=torch.int32))
    steps = []
    with torch.no_grad():
        for t in range(length):
            key_cache, value_cache, seq_lens = state[0]
            steps.append(
                attention(
                    qkv[:, t : t + 1], key_cache=key_cache, val_cache=value_cache, cache_seqlens=seq_lens
                )
            )
            state.update()
            state.reset(torch.from_numpy(inputs["restarts"][:, t]))
    return {"train": train.numpy(), "rollout": torch.cat(steps, dim=1).numpy()}


_BACKBONES = {"nature": "NatureishCNN", "drq": "DrQCNN", "gridworld": "GridworldCNN"}


def backbone(case: dict, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """AMAGO's image backbone: its init (as flags), then features and gradients with the case's weights."""
    torch.manual_seed(0)
    model = getattr(cnn, _BACKBONES[case["cnn_type"]])(
        tuple(case["img_shape"]), case["channels_first"], case["activation"], **case["options"]
    )
    n_convs = len(cases.cnn_layers(case))
    init_flags = cases.cnn_init_flags(model.state_dict(), n_convs)
    weights = {
        key.removeprefix("param_"): torch.from_numpy(value.astype(np.float32))
        for key, value in inputs.items()
        if key.startswith("param_")
    }
    model.load_state_dict(weights, strict=True)
    features = model(torch.from_numpy(inputs["frames"]))
    (features * torch.from_numpy(inputs["upstream"])).sum().backward()
    params = dict(model.named_parameters())
    out = {"init_flags": init_flags, "features": features.detach().numpy()}
    out["grad_conv1.weight"] = params["conv1.weight"].grad.numpy()
    for i in range(1, n_convs + 1):
        out[f"grad_conv{i}.bias"] = params[f"conv{i}.bias"].grad.numpy()
    return out


def main() -> None:
    work = Path(sys.argv[1])
    cases = json.loads((work / "cases.json").read_text())
    (work / "amago_ref").mkdir(exist_ok=True)
    for case in cases:
        with np.load(work / "inputs" / f"{case['name']}.npz") as data:
            inputs = {key: data[key] for key in data.files}
        if case["kind"] == "rational":
            outputs = rational(inputs)
        elif case["kind"] == "cnn":
            outputs = backbone(case, inputs)
        else:
            outputs = sliding_sink(case, inputs)
        np.savez(work / "amago_ref" / f"{case['name']}.npz", **outputs)


if __name__ == "__main__":
    main()
