"""Roll-over conformance (issue 43 item 2): every trajectory encoder, stepped as a rollout past three or more
wraps of its memory with rows resetting at different steps, equals its reference computation; and the check
fails on the cache bugs it exists for (a row that never resets, a memory a step too long, a reset that loses
which env holds which cache row: AMAGO #81's kind)."""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces

from amago_core.plugins.registry import registries
from amago_core.plugins.spec import ComponentSpec
from amago_core.testing import ComponentCheckError, check_component
from amago_core.testing.rollover import check_rollover, rollover_schedule
from amago_nets import row_groups, specs
from amago_nets.kv_cache import KVCache
from amago_nets.traj_transformer import TransformerTrajEncoder
from amago_tools.plugin_new import PluginRequest

TSTEP_DIM, MAX_SEQ_LEN = 6, 5
TINY = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
ATTENTION = {
    "sdpa": {},
    "sdpa-window-rope": {"window_size": 3, "pos_emb": "rope"},
    "sdpa-learnable": {"pos_emb": "learnable", "max_time_idx": 64},
    "flex": {"attention": "flex"},
    "flex-window": {"attention": "flex", "window_size": 3},
    "sink-clip": {"attention": "sliding_sink", "window_size": 3, "sink_size": 2, "logit_clip": 0.05},
    "sink": {"attention": "sliding_sink", "window_size": 3, "sink_size": 2},
    "sink-window1": {"attention": "sliding_sink", "window_size": 1, "sink_size": 3, "logit_clip": 0.5},
    "clip-only": {"attention": "sliding_sink", "logit_clip": 0.05},
}
"""Transformer attention variants, each with its own training mask and cache layout (``flash`` needs CUDA:
``test_gpu.py`` runs the same check there through ``check_traj_encoder``)."""


def _installed() -> list[ComponentSpec]:
    registry = registries().traj_encoders
    unique: dict[str, ComponentSpec] = {}
    for name in registry.names():  # an alias lists its spec twice
        spec = registry.spec(name)
        unique.setdefault(spec.name, spec)
    return list(unique.values())


def _build(spec: ComponentSpec, config: Any, encoder_class: type | None = None) -> Any:
    torch.manual_seed(0)
    if encoder_class is not None:
        return encoder_class(spec.make_config(config), tstep_dim=TSTEP_DIM, max_seq_len=MAX_SEQ_LEN)
    return spec.build(config, tstep_dim=TSTEP_DIM, max_seq_len=MAX_SEQ_LEN)


def _transformer(options: dict, encoder_class: type = TransformerTrajEncoder) -> TransformerTrajEncoder:
    return _build(specs.TRANSFORMER_TRAJ, {**TINY, **options}, encoder_class)


def _check(encoder: Any, **options: Any) -> tuple[int, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex warns that eager CPU mode is unfused
        return check_rollover(encoder, tstep_dim=TSTEP_DIM, max_seq_len=MAX_SEQ_LEN, **options)


# ---- the schedule really rolls over, with staggered resets ------------------------------------------------


@pytest.mark.parametrize("slots", [1, 4, 5, 8])
def test_the_schedule_wraps_the_memory_three_times_with_resets_at_different_steps(slots: int) -> None:
    steps, schedule = rollover_schedule(slots)
    episodes = {
        row: [b - a for a, b in zip([-1, *ends], [*ends, steps - 1], strict=True) if b > a]
        for row, ends in enumerate(schedule)
    }
    # A row that never resets wraps four times, and one that reset first wraps three times after.
    assert max(episodes[0]) >= 4 * slots + 1
    assert schedule[1]
    assert max(episodes[1]) >= 3 * slots + 1
    assert len(set(schedule)) == len(schedule), "two rows reset in lock step"
    assert all(end < steps for ends in schedule for end in ends)


# ---- every encoder equals its reference -----------------------------------------------------------------


@pytest.mark.parametrize("spec", _installed(), ids=lambda spec: spec.name)
def test_every_installed_encoder_rolls_over_like_its_training_forward(spec: ComponentSpec) -> None:
    """Built-in and plugin encoders alike (the registry's), at their ``--smoke`` sizes."""
    config = spec.make_config(spec.make_config().smoke_options())
    rollovers = _check(_build(spec, config), name=spec.name)
    assert max(rollovers) >= 4
    assert rollovers[1] >= 3


@pytest.mark.parametrize("rows", ["sorted", "split-at-every-length", "env-order"])
@pytest.mark.parametrize("n_layers", [1, 2])
@pytest.mark.parametrize("attention", list(ATTENTION), ids=str)
def test_transformer_rolls_over_like_its_training_forward(
    attention: str, n_layers: int, rows: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every attention variant; cache rows kept sorted by length (one run of rows, or a run per length), or in
    env order (what an exported policy steps)."""
    if rows == "split-at-every-length":
        monkeypatch.setattr(row_groups, "CPU_GROUP_OVERHEAD", 0)
    encoder = _transformer({**ATTENTION[attention], "n_layers": n_layers})
    if rows == "env-order":
        with encoder.exportable_memory():
            _check(encoder)
    else:
        _check(encoder)


@pytest.mark.parametrize("attention", list(ATTENTION), ids=str)
def test_one_attention_layer_sees_exactly_its_window_and_sink(attention: str) -> None:
    """The reference here is the forward over the last ``context`` steps (and the first ``sink_size``) alone,
    which does not lean on the encoder's own sliding-window mask."""
    encoder = _transformer({**ATTENTION[attention], "n_layers": 1})
    _check(encoder, window=encoder.context, sink=encoder.sink)


def test_a_deeper_transformer_remembers_past_its_window() -> None:
    """Why the default reference is the whole episode: layer 2's cached keys carry what their steps saw."""
    encoder = _transformer({})
    with pytest.raises(ComponentCheckError, match=r"row 0, step 5 \(episode step 5"):
        _check(encoder, window=encoder.context)


@pytest.mark.parametrize(
    "config",
    [
        {"d_model": 8, "d_state": 4, "n_layers": 2, "scan": "sequential"},
        {"d_model": 8, "d_state": 4, "n_layers": 2, "scan": "parallel"},
        {"d_model": 8, "d_state": 4, "n_layers": 2, "scan": "parallel", "chunk_size": 3, "d_conv": 2},
    ],
    ids=["sequential", "parallel", "parallel-chunk3-conv2"],
)
def test_mamba_rolls_over_like_its_training_forward(config: dict) -> None:
    """The pure-PyTorch path: a one-step scan and a ring of ``d_conv`` inputs in rollouts."""
    _check(_build(specs.MAMBA_TRAJ, config))


# ---- the check fails on the bugs it exists for -----------------------------------------------------------


class ForgetsOneRow(torch.nn.Module):
    """An encoder whose reset forgets row 1 (which resets on the step that fills its memory)."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner

    def init_hidden_state(self, batch_size: int, device: str) -> Any:
        return self.inner.init_hidden_state(batch_size, device)

    def reset_hidden_state(self, hidden_state: Any, dones: Any) -> Any:
        dones = np.array(torch.as_tensor(dones).cpu())
        dones[1] = False
        return self.inner.reset_hidden_state(hidden_state, dones)

    def forward(self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: Any = None) -> Any:
        return self.inner(seq, time_idxs, hidden_state)


class DropsOneOfTwoResets(ForgetsOneRow):
    """An encoder whose reset drops the last of the rows that end on the same step."""

    def reset_hidden_state(self, hidden_state: Any, dones: Any) -> Any:
        dones = np.array(torch.as_tensor(dones).cpu())
        if dones.sum() >= 2:
            dones[np.flatnonzero(dones)[-1]] = False
        return self.inner.reset_hidden_state(hidden_state, dones)


class OneStepTooManyCache(TransformerTrajEncoder):
    """Its cache keeps ``context + 1`` steps while training windows slide over ``context``."""

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> KVCache:
        self.context += 1
        try:
            return super().init_hidden_state(batch_size, device)
        finally:
            self.context -= 1


class LosesTheRowMap(TransformerTrajEncoder):
    """A reset moves the kept cache rows up, then reads them through the env -> row map from before."""

    def reset_hidden_state(self, hidden_state: KVCache | None, dones: Any) -> KVCache | None:
        assert hidden_state is not None
        return replace(hidden_state.reset(dones), envs=hidden_state.envs, rows=hidden_state.rows)


class OneStepTooManyEverywhere(TransformerTrajEncoder):
    """Remembers ``max_seq_len + 1`` steps in training and in rollouts alike (consistent, but one too many)."""

    def __init__(self, config: Any, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__(config, tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        self.context = max_seq_len + 1


GAP = r"differs from the full forward over .* by \d\.\d\de[-+]\d\d"


@pytest.mark.parametrize(
    ("spec", "config"),
    [
        (specs.RNN_TRAJ, {"d_hidden": 8, "d_output": 8}),
        (specs.TRANSFORMER_TRAJ, TINY),
        (specs.MAMBA_TRAJ, None),
    ],
    ids=lambda value: getattr(value, "name", ""),
)
def test_the_check_names_a_row_that_does_not_reset(spec: ComponentSpec, config: dict | None) -> None:
    with pytest.raises(ComponentCheckError, match=r"row 1, step 5 \(episode step 0, .*" + GAP):
        _check(ForgetsOneRow(_build(spec, config)))


@pytest.mark.parametrize("attention", ["sdpa", "sink-clip"])
def test_the_check_catches_a_reset_lost_among_simultaneous_ones(attention: str) -> None:
    with pytest.raises(ComponentCheckError, match=GAP):
        _check(DropsOneOfTwoResets(_transformer(ATTENTION[attention])))


def test_the_check_catches_a_cache_a_step_longer_than_the_training_window_at_its_first_wrap() -> None:
    with pytest.raises(
        ComponentCheckError, match=r"row 0, step 5 \(episode step 5, roll-overs so far: 1 .*" + GAP
    ):
        _check(_transformer({}, OneStepTooManyCache))


@pytest.mark.parametrize("attention", ["sdpa", "sink-clip"])
def test_the_check_catches_a_reset_that_loses_the_row_map(attention: str) -> None:
    with pytest.raises(ComponentCheckError, match=GAP):
        _check(_transformer(ATTENTION[attention], LosesTheRowMap))


def test_only_the_window_reference_catches_a_memory_one_step_too_long_everywhere() -> None:
    encoder = _transformer({"n_layers": 1}, OneStepTooManyEverywhere)
    _check(encoder)  # training and rollouts agree with each other ...
    with pytest.raises(ComponentCheckError, match=r"row 0, step 5 .*over steps \[1, 2, 3, 4, 5\]"):
        _check(encoder, window=MAX_SEQ_LEN)  # ... but not with a max_seq_len memory


# ---- a third-party encoder gets the check through check_component ----------------------------------------


SMALL_LSTM = {"d_hidden": 16, "n_layers": 2, "d_output": 8}


def _install_my_lstm(fake_distribution: Any, *, forget_row: bool) -> None:
    """The README's ``amago plugin new traj-encoders my_lstm``, installed as a distribution."""
    files = PluginRequest.parse("traj-encoders", "my_lstm").files()
    modules = {
        path.relative_to("src").as_posix(): text for path, text in files.items() if path.parts[0] == "src"
    }
    if forget_row:
        encoder = "amago_plugin_my_lstm/encoder.py"
        line = "        done = dones_as_mask(dones, h.shape[1], h.device).view(1, -1, 1)\n"
        assert line in modules[encoder]
        modules[encoder] = modules[encoder].replace(line, line + "        done[:, -1] = False\n")
    fake_distribution(
        "amago-plugin-my-lstm",
        entry_points={"amago.traj_encoders": {"my_lstm": "amago_plugin_my_lstm.specs:MY_LSTM"}},
        modules=modules,
    )


def test_the_readme_plugin_passes_check_component(fake_distribution: Any) -> None:
    _install_my_lstm(fake_distribution, forget_row=False)
    report = check_component("traj-encoders", "my_lstm", config=SMALL_LSTM)
    assert "trajectory encoder behaviour checks" in report.passed


def test_check_component_catches_a_plugin_that_does_not_reset_a_row(fake_distribution: Any) -> None:
    _install_my_lstm(fake_distribution, forget_row=True)
    with pytest.raises(ComponentCheckError, match=r"'my_lstm': row 5, step 1 .*" + GAP):
        check_component("traj-encoders", "my_lstm", config=SMALL_LSTM)


# ---- through an agent: the same actions and values ------------------------------------------------------


def test_an_agents_rollout_acts_and_values_as_its_training_forward() -> None:
    """``get_actions`` step by step (tstep encoder, Transformer, actor) past three wraps with staggered resets
    equals ``get_actions`` over each episode's window; the critics value both states alike."""
    torch.manual_seed(0)
    action_space = spaces.Box(-1.0, 1.0, (2,))
    agent = (
        registries()
        .agents.build(
            {"kind": "agent", "actor": {"d_hidden": 16}, "critic": {"d_hidden": 16}},
            obs_space=spaces.Dict({"observation": spaces.Box(-1.0, 1.0, (3,))}),
            rl2_space=spaces.Box(-np.inf, np.inf, (3,)),
            action_space=action_space,
            max_seq_len=MAX_SEQ_LEN,
            tstep_encoder=registries().tstep_encoders.builder({"kind": "ff", "d_hidden": 16, "d_output": 8}),
            traj_encoder=registries().traj_encoders.builder({"kind": "transformer", **TINY}),
        )
        .eval()
    )
    steps, schedule = rollover_schedule(MAX_SEQ_LEN)
    dones = np.array([[step in ends for step in range(steps)] for ends in schedule])
    times = np.zeros(dones.shape, dtype=np.int64)
    for step in range(1, steps):
        times[:, step] = np.where(dones[:, step - 1], 0, times[:, step - 1] + 1)
    rows, time_idxs = len(schedule), torch.as_tensor(times)
    obs = {"observation": torch.rand(rows, steps, 3) * 2 - 1}
    rl2s = torch.randn(rows, steps, 3)

    def at(index: Any, columns: Any) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        return (
            {"observation": obs["observation"][index, columns]},
            rl2s[index, columns],
            time_idxs[index, columns],
        )

    def values(states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        per_gamma = actions[None, :, :, None].expand(1, -1, -1, len(agent.gammas), -1)
        return agent.critics(states, per_gamma)[0]

    def rollout(step_fn: Any) -> torch.Tensor:
        """One rollout through ``step_fn(obs, rl2s, time_idxs, hidden)`` (each one writes the cache)."""
        hidden, outputs = agent.init_hidden_state(rows, "cpu"), []
        for step in range(steps):
            output, hidden = step_fn(*at(slice(None), slice(step, step + 1)), hidden)
            outputs.append(output)
            hidden = agent.reset_hidden_state(hidden, dones[:, step])
        return torch.cat(outputs, 1)

    with torch.no_grad():
        acted_all = rollout(lambda *inputs: agent.get_actions(*inputs, sample=False))
        states_all = rollout(agent.get_state_embedding)
        for row, ends in enumerate(schedule):
            starts = [0, *(end + 1 for end in ends if end + 1 < steps)]
            for start, stop in zip(starts, [*starts[1:], steps], strict=True):
                episode = at(slice(row, row + 1), slice(start, stop))
                actions, _ = agent.get_actions(*episode, None, sample=False)
                full_states, _ = agent.get_state_embedding(*episode, None)
                torch.testing.assert_close(acted_all[row, start:stop], actions[0], atol=1e-5, rtol=0)
                torch.testing.assert_close(
                    values(states_all[row : row + 1, start:stop], actions),
                    values(full_states, actions),
                    atol=1e-5,
                    rtol=0,
                )
