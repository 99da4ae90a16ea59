"""``run.compile``: where it compiles, that compiled code computes what eager code does, and that a compiler that
fails costs one line and nothing else (AMAGO#83's class of failure)."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from gymnasium import spaces

from amago_core.data.batch import Batch
from amago_core.experiment import fast_torch
from amago_core.experiment.fast_torch import CompiledOrEager, compile_wanted
from amago_core.experiment.learner import Learner
from amago_core.plugins import registries

ACTIONS, STEPS, BATCH = 3, 6, 4


def broken_compiler(function):
    """A compiler that accepts the function and fails on its first call, as a missing C++ compiler does."""

    def fails(*args, **kwargs):
        msg = (
            "InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx\nmore detail"
        )
        raise RuntimeError(msg)

    return fails


def dynamo_only(function):
    """torch.compile through AOTAutograd without inductor's C++ codegen (seconds, not minutes, on a CPU)."""
    return torch.compile(function, backend="aot_eager")


def small_agent(traj: dict, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    return registries().agents.build(
        "agent",
        obs_space=spaces.Dict({"observation": spaces.Box(0, 4, (4,))}),
        rl2_space=spaces.Box(-np.inf, np.inf, (1 + ACTIONS,)),
        action_space=spaces.Discrete(ACTIONS),
        max_seq_len=STEPS,
        tstep_encoder=registries().tstep_encoders.builder(
            {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16}
        ),
        traj_encoder=registries().traj_encoders.builder(traj),
    )


def batch(seed: int) -> Batch:
    rng = np.random.default_rng(seed)
    length = STEPS + 1
    actions = np.eye(ACTIONS, dtype=np.float32)[rng.integers(0, ACTIONS, (BATCH, STEPS))]
    rews = rng.random((BATCH, STEPS, 1)).astype(np.float32)
    rl2s = np.concatenate(
        [np.zeros((BATCH, 1, 1 + ACTIONS), np.float32), np.concatenate([rews, actions], -1)], 1
    )
    return Batch(
        obs={"observation": rng.integers(0, 5, (BATCH, length, 4)).astype(np.float32)},
        rl2s=rl2s,
        time_idxs=np.broadcast_to(np.arange(length)[None, :, None], (BATCH, length, 1)).copy(),
        rews=rews,
        dones=np.zeros((BATCH, STEPS, 1), bool),
        actions=actions,
        mask=np.ones((BATCH, length), bool),
    ).to_torch()


def train(compile: bool, updates: int = 3) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Losses of a few fixed-seed updates of a small ff agent through ``Learner``, and the weights after."""
    agent = small_agent({"kind": "ff", "d_model": 16, "n_layers": 1}).train()
    optimizer = torch.optim.AdamW(list(agent.trainable_parameters()), lr=1e-3)
    learner = Learner(Accelerator(cpu=True), agent, optimizer, warmup_steps=1, compile=compile)
    losses = []
    for step in range(updates):
        torch.manual_seed(100 + step)
        metrics, _ = learner.step(
            batch(step),
            False,
            1.0,
            compute_loss=lambda b, log: learner.prepared(b, log_step=log),
            caster=contextlib.nullcontext,
            grad_clip=1.0,
        )
        losses.append(metrics["Loss"])
    return losses, {k: v.detach().clone() for k, v in agent.state_dict().items()}


def test_auto_compiles_the_update_on_cuda_only_and_never_the_rollout():
    assert not compile_wanted("auto", torch.device("cpu"), "update")
    assert compile_wanted("auto", torch.device("cuda", 0), "update")
    assert not compile_wanted("auto", torch.device("cuda", 0), "rollout")
    assert compile_wanted("on", torch.device("cpu"), "rollout")
    assert compile_wanted("on", torch.device("cpu"), "update")
    assert not compile_wanted("off", torch.device("cuda"), "update")


def test_a_failing_compiler_falls_back_to_eager_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr(fast_torch, "compile_function", broken_compiler)
    calls = []

    def double(x):
        calls.append(x)
        return 2 * x

    step = CompiledOrEager(double, "rollout policy step")
    assert [step(1), step(2), step(3)] == [2, 4, 6]
    assert calls == [1, 2, 3]  # the failed call was redone eagerly, and compilation not tried again
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert "rollout policy step" in lines[0]
    assert "No working C++ compiler" in lines[0]
    assert "eagerly" in lines[0]
    assert "more detail" not in lines[0]


def test_an_error_eager_code_raises_too_is_not_blamed_on_the_compiler(monkeypatch, capsys):
    monkeypatch.setattr(fast_torch, "compile_function", broken_compiler)

    def bad(x):
        raise KeyError(x)

    with pytest.raises(KeyError):
        CompiledOrEager(bad, "update")(1)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_an_update_whose_compilation_fails_runs_eagerly_and_loses_no_step(monkeypatch, capsys):
    eager_losses, eager_weights = train(compile=False)
    monkeypatch.setattr(fast_torch, "compile_function", broken_compiler)
    losses, weights = train(compile=True)
    assert losses == eager_losses  # the same steps, bit for bit: the failed one was redone, not skipped
    for key, value in eager_weights.items():
        assert torch.equal(weights[key], value), key
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("run.compile: compiling the update failed")


@pytest.mark.slow
def test_a_compiled_update_computes_the_eager_losses(monkeypatch):
    eager_losses, eager_weights = train(compile=False)
    monkeypatch.setattr(fast_torch, "compile_function", dynamo_only)
    torch._dynamo.reset()
    losses, weights = train(compile=True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-6)
    for key, value in eager_weights.items():
        torch.testing.assert_close(weights[key], value, rtol=1e-4, atol=1e-5, msg=key)


@pytest.mark.slow
@pytest.mark.parametrize(
    "traj",
    [
        {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 1},
        {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    ],
    ids=["rnn", "transformer"],
)
def test_a_compiled_rollout_step_acts_and_remembers_as_eager(monkeypatch, traj):
    agent = small_agent(traj).eval()
    monkeypatch.setattr(fast_torch, "compile_function", dynamo_only)
    torch._dynamo.reset()
    compiled = CompiledOrEager(type(agent).get_actions, "rollout policy step")
    rng = np.random.default_rng(0)
    eager_state = agent.init_hidden_state(2, "cpu")
    state = agent.init_hidden_state(2, "cpu")
    for t in range(STEPS):
        obs = {"observation": torch.from_numpy(rng.integers(0, 5, (2, 1, 4)).astype(np.float32))}
        rl2 = torch.from_numpy(rng.random((2, 1, 1 + ACTIONS)).astype(np.float32))
        time_idx = torch.full((2, 1, 1), t, dtype=torch.int64)
        want, eager_state = agent.get_actions(obs, rl2, time_idx, eager_state, sample=False)
        got, state = compiled(agent, obs, rl2, time_idx, state, sample=False)
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=f"actions at step {t}")
    assert compiled.failure is None


@pytest.mark.slow
def test_a_run_whose_compiler_fails_trains_as_an_eager_run(monkeypatch, capsys, tiny_job, run_job):
    eager = run_job(tiny_job, epochs=2, compile="off")
    capsys.readouterr()
    monkeypatch.setattr(fast_torch, "compile_function", broken_compiler)
    tiny_job["run"] = {**tiny_job["run"], "name": "tiny-compiled"}
    compiled = run_job(tiny_job, epochs=2, compile="on")
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("run.compile:")]
    assert [line.split(" failed")[0] for line in said] == [
        "run.compile: compiling the rollout policy step",
        "run.compile: compiling the update",
    ]
    assert compiled.grad_update_counter == eager.grad_update_counter > 0
    want = eager.policy.state_dict()
    for key, value in compiled.policy.state_dict().items():
        assert torch.equal(value, want[key]), key


@pytest.mark.slow
def test_a_compiler_that_refuses_up_front_leaves_the_update_eager(monkeypatch, capsys):
    def refuses(function):
        msg = "torch.compile is not supported on this Python"
        raise RuntimeError(msg)

    monkeypatch.setattr(fast_torch, "compile_function", refuses)
    agent = small_agent({"kind": "ff", "d_model": 16, "n_layers": 1})
    optimizer = torch.optim.AdamW(list(agent.trainable_parameters()), lr=1e-3)
    learner = Learner(Accelerator(cpu=True), agent, optimizer, warmup_steps=1, compile=True)
    assert not learner.compile
    assert agent._compiled_call_impl is None
    assert capsys.readouterr().err.count("\n") == 1
