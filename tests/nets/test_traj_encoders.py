"""Trajectory encoders: every built-in passes the conformance check, and the check catches broken ones."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from amago_core.plugins.spec import ComponentSpec
from amago_core.testing.nets_checks import check_traj_encoder
from amago_nets import specs
from amago_nets.attention import attend_cached, attend_window
from amago_nets.traj_rnn import GRUTrajEncoder
from amago_nets.traj_transformer import TransformerTrajEncoder

TINY_TRANSFORMER = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
TINY_MAMBA = {"d_model": 8, "d_state": 4, "n_layers": 2}

BUILTIN_CASES = [
    (specs.IDENTITY_TRAJ, None),
    (specs.FF_TRAJ, {"d_model": 16, "n_layers": 2, "norm": "layer"}),
    (specs.RNN_TRAJ, {"d_hidden": 16, "d_output": 8, "n_layers": 2}),
    (specs.TRANSFORMER_TRAJ, TINY_TRANSFORMER),
    (specs.TRANSFORMER_TRAJ, {**TINY_TRANSFORMER, "pos_emb": "learnable", "max_time_idx": 64}),
    (specs.TRANSFORMER_TRAJ, {**TINY_TRANSFORMER, "pos_emb": "rope", "window_size": 3}),
    (
        specs.TRANSFORMER_TRAJ,
        {**TINY_TRANSFORMER, "sigma_reparam": False, "normformer_norms": False, "head_scaling": False},
    ),
    (specs.TRANSFORMER_TRAJ, {**TINY_TRANSFORMER, "norm": "rmsnorm", "activation": "gelu"}),
    (specs.MAMBA_TRAJ, TINY_MAMBA),
    (specs.MAMBA_TRAJ, {**TINY_MAMBA, "scan": "parallel"}),
    (specs.MAMBA_TRAJ, {**TINY_MAMBA, "scan": "parallel", "chunk_size": 3, "d_conv": 2}),
]


@pytest.mark.parametrize(("spec", "config"), BUILTIN_CASES, ids=lambda x: getattr(x, "name", None) or str(x))
def test_builtin_passes_the_check(spec: ComponentSpec, config: dict | None) -> None:
    check_traj_encoder(spec, config)


def test_builtins_pass_with_default_configs() -> None:
    for spec in (
        specs.IDENTITY_TRAJ,
        specs.FF_TRAJ,
        specs.RNN_TRAJ,
        specs.TRANSFORMER_TRAJ,
        specs.MAMBA_TRAJ,
    ):
        check_traj_encoder(spec, None)


def test_flash_request_falls_back_to_sdpa_with_a_warning_on_cpu() -> None:
    with pytest.warns(RuntimeWarning, match="using 'sdpa'"):
        check_traj_encoder(specs.TRANSFORMER_TRAJ, {**TINY_TRANSFORMER, "attention": "flash"})


def test_flex_attention_matches_sdpa_including_the_sliding_window() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 12, 2, 8) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex warns that eager CPU mode is unfused
        flex = attend_window(q, k, v, context=5, dropout_p=0.0, backend="flex")
    sdpa = attend_window(q, k, v, context=5, dropout_p=0.0, backend="sdpa")
    torch.testing.assert_close(flex, sdpa, atol=1e-5, rtol=1e-5)


def test_sliding_window_attention_sees_exactly_the_last_context_steps() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 10, 1, 4) for _ in range(3))
    out = attend_window(q, k, v, context=3, dropout_p=0.0, backend="sdpa")
    scores = (q[0, 9, 0] @ k[0, 7:10, 0].T) / 2.0
    expected = torch.softmax(scores, dim=-1) @ v[0, 7:10, 0]
    torch.testing.assert_close(out[0, 9, 0], expected)


def test_cached_attention_ignores_slots_past_each_rows_length() -> None:
    torch.manual_seed(0)
    q = torch.randn(2, 1, 1, 4)
    cache_k, cache_v = torch.randn(2, 6, 1, 4), torch.randn(2, 6, 1, 4)
    valid = torch.tensor([2, 5])
    out = attend_cached(q, cache_k, cache_v, valid, backend="sdpa")
    garbage_k, garbage_v = cache_k.clone(), cache_v.clone()
    garbage_k[0, 2:] = 1e3
    garbage_v[1, 5:] = -1e3
    torch.testing.assert_close(attend_cached(q, garbage_k, garbage_v, valid, backend="sdpa"), out)


def test_transformer_cache_refuses_multi_step_input() -> None:
    encoder = TransformerTrajEncoder(
        specs.TransformerTrajEncoderConfig(**TINY_TRANSFORMER), tstep_dim=4, max_seq_len=8
    )
    hidden = encoder.init_hidden_state(2, "cpu")
    with pytest.raises(ValueError, match="one step at a time"):
        encoder(torch.randn(2, 3, 4), torch.zeros(2, 3, dtype=torch.long), hidden)


def test_transformer_cache_wraps_per_row() -> None:
    encoder = TransformerTrajEncoder(
        specs.TransformerTrajEncoderConfig(**TINY_TRANSFORMER), tstep_dim=4, max_seq_len=3
    )
    encoder.eval()
    hidden = encoder.init_hidden_state(2, "cpu")
    for step in range(5):
        _, hidden = encoder(torch.randn(2, 1, 4), torch.full((2, 1), step), hidden)
        hidden = encoder.reset_hidden_state(hidden, np.array([step == 1, False]))
    assert hidden.lengths.tolist() == [3, 5]
    assert hidden.valid_after_write().tolist() == [3, 3]
    assert hidden.write_slots().tolist() == [0, 2]


def test_reset_rejects_a_done_vector_of_the_wrong_size() -> None:
    encoder = GRUTrajEncoder(specs.RNNTrajEncoderConfig(d_hidden=4, d_output=4), tstep_dim=3, max_seq_len=4)
    with pytest.raises(ValueError, match="one per env"):
        encoder.reset_hidden_state(encoder.init_hidden_state(3, "cpu"), np.array([True, False]))


def test_gru_reset_zeroes_only_done_rows() -> None:
    encoder = GRUTrajEncoder(specs.RNNTrajEncoderConfig(d_hidden=4, d_output=4), tstep_dim=3, max_seq_len=4)
    hidden = torch.ones(2, 3, 4)
    reset = encoder.reset_hidden_state(hidden, torch.tensor([False, True, False]))
    assert reset[:, 1].abs().sum() == 0
    assert (reset[:, [0, 2]] == 1).all()


def test_learnable_positions_clamp_times_past_the_table() -> None:
    config = specs.TransformerTrajEncoderConfig(**TINY_TRANSFORMER, pos_emb="learnable", max_time_idx=5)
    encoder = TransformerTrajEncoder(config, tstep_dim=4, max_seq_len=8).eval()
    seq = torch.randn(1, 1, 4)
    late, _ = encoder(seq, torch.tensor([[4]]))
    later, _ = encoder(seq, torch.tensor([[400]]))
    torch.testing.assert_close(late, later)


def test_sigma_reparam_updates_its_estimate_only_in_train_mode() -> None:
    encoder = TransformerTrajEncoder(
        specs.TransformerTrajEncoderConfig(**TINY_TRANSFORMER), tstep_dim=4, max_seq_len=8
    )
    layer = encoder.layers[0].ff1
    before = layer.u.clone()
    encoder.eval()
    encoder(torch.randn(2, 3, 4), torch.zeros(2, 3, dtype=torch.long))
    torch.testing.assert_close(layer.u, before)
    with torch.no_grad():
        layer.weight.add_(torch.randn_like(layer.weight))
    encoder.train()
    encoder(torch.randn(2, 3, 4), torch.zeros(2, 3, dtype=torch.long))
    assert not torch.allclose(layer.u, before)


# ---- the check must fail on the bugs it exists for ------------------------------------------------------


def _broken(spec: ComponentSpec, class_name: str) -> ComponentSpec:
    return ComponentSpec(
        name=spec.name,
        group=spec.group,
        summary="deliberately broken",
        config=spec.config,
        factory=f"nets_test_helpers:{class_name}",
    )


@pytest.mark.parametrize(
    ("spec", "config", "class_name"),
    [
        (specs.RNN_TRAJ, {"d_hidden": 8, "d_output": 8}, "LockstepResetGRU"),
        (specs.RNN_TRAJ, {"d_hidden": 8, "d_output": 8}, "NeverResetGRU"),
        (specs.TRANSFORMER_TRAJ, TINY_TRANSFORMER, "NeverResetTransformer"),
        (specs.TRANSFORMER_TRAJ, TINY_TRANSFORMER, "WindowIndexTransformer"),
        (specs.TRANSFORMER_TRAJ, TINY_TRANSFORMER, "NoSlidingTransformer"),
    ],
)
@pytest.mark.usefixtures("helpers_on_path")
def test_check_catches_rollout_bugs(spec: ComponentSpec, config: dict, class_name: str) -> None:
    with pytest.raises(AssertionError, match="differs from the full forward"):
        check_traj_encoder(_broken(spec, class_name), config)


def test_check_catches_a_non_causal_encoder() -> None:
    class Bidirectional(torch.nn.Module):
        emb_dim = 6

        def __init__(self) -> None:
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(()))

        def init_hidden_state(self, batch_size, device):
            return None

        def reset_hidden_state(self, hidden_state, dones):
            return hidden_state

        def forward(self, seq, time_idxs, hidden_state=None):
            return self.scale * (seq + seq.mean(dim=1, keepdim=True)), hidden_state

    spec = ComponentSpec(
        name="ff", group="amago.traj_encoders", summary="x", config=specs.FFTrajEncoderConfig, factory="x:y"
    )
    object.__setattr__(spec, "load_factory", lambda: lambda config, **context: Bidirectional())
    with pytest.raises(AssertionError, match="not causal"):
        check_traj_encoder(spec, None)
