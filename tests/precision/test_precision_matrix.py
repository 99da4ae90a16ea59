"""Reduced precision, pinned, on every component: tiny runs with ``optim.mixed_precision`` forced to bf16 (and a few
to fp16), each case a few updates and a short rollout.

The axes are the agent, the action space (and its policy distribution), the trajectory and timestep encoders,
where the data comes from, and what happens after training (load_policy, export, resume). The full product is
thousands of runs; the cases below cover every value of every axis at least once, the other axes at cheap
defaults, and pair values that share code paths (e.g. a sliding window with a discrete head, a sink with a
mixture policy).

Every case checks that the training forward really ran under the pinned autocast, that every loss term is
finite, and that a rollout under the same autocast (what a GPU rollout runs, and a CPU one where ``auto`` timed a
bf16 policy step faster; see ``Experiment.caster``) only takes actions in the action space, and only allowed ones where the env masks them.
The precision is asked for explicitly, never ``auto``, and the CPU's flags are faked (see conftest.py): bf16 and
fp16 autocast run on any CPU, emulated where not native, so these cases hold on every machine.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
import torch

from amago import Experiment
from amago_core.rollout import AMAGOEnv, EnvCreator, make_pool
from amago_core.rollout.action_mask import ACTION_MASK_KEY

# Not `slow`: a case (build, 2 updates, rollouts, then load/export/resume) takes 0.1-1 s on 2 cores, and these are
# the checks every machine should run.
pytestmark = pytest.mark.filterwarnings(
    "ignore::FutureWarning"
)  # torch marks TorchScript (export) deprecated

Precision = Literal["bf16", "fp16"]
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}

ROLLOUT_STEPS = 6
"""Steps of the checked rollout per env (episodes here last 3 steps: the memory restarts along the way)."""


# ---- small numpy envs -----------------------------------------------------------------------------------------


class ToyEnv(gym.Env):
    """Three-step episodes with any action space; the env refuses an action outside its space.

    The reward is the negative distance of the action from a fixed target: enough for finite, non-trivial
    critic targets. Optional: image observations (8x8 RGB, for the CNN) and an action mask in ``info["legal"]``
    (Discrete and MultiDiscrete) that forbids a different action at each step.

    Args:
        action_space: the env's action space.
        image: observe uint8 (8, 8, 3) images instead of a 3-vector.
        masked: give ``info["legal"]`` (one entry per action; MultiDiscrete: its dimensions one after the other).
    """

    HORIZON = 3

    def __init__(self, action_space: gym.Space, *, image: bool = False, masked: bool = False) -> None:
        self.action_space = action_space
        self.image = image
        self.masked = masked
        self.observation_space = (
            gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
            if image
            else gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        )
        self.t = 0

    def legal(self) -> np.ndarray:
        """Every action but one (which moves with the step), per dimension."""
        sizes = (
            [int(self.action_space.n)]
            if isinstance(self.action_space, gym.spaces.Discrete)
            else [int(n) for n in self.action_space.nvec]
        )
        return np.concatenate([np.arange(n) != self.t % n for n in sizes])

    def _out(self) -> tuple[np.ndarray, dict[str, Any]]:
        phase = self.t / self.HORIZON
        if self.image:
            obs = np.full((8, 8, 3), int(255 * phase), np.uint8)
            obs[self.t % 8] = 255
        else:
            obs = np.array([phase, 1.0 - phase, 0.5], np.float32)
        return obs, ({"legal": self.legal()} if self.masked else {})

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._out()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        space = self.action_space
        arr = np.asarray(action, dtype=space.dtype)
        if not space.contains(arr.reshape(space.shape)):
            msg = f"ToyEnv: action {action!r} is outside {space}"
            raise ValueError(msg)
        reward = -float(np.abs(arr.astype(np.float64) - 0.5).mean())
        self.t += 1
        obs, info = self._out()
        return obs, reward, False, self.t >= self.HORIZON, info


def _toy(name: str, action_space: gym.Space, **options: Any) -> Callable[[], AMAGOEnv]:
    def make() -> AMAGOEnv:
        masked = options.get("masked", False)
        return AMAGOEnv(
            ToyEnv(action_space, **options),
            env_name=name,
            action_mask_key="legal" if masked else None,
            action_mask_from="info",
        )

    return make


@dataclass(frozen=True)
class EnvChoice:
    """One env of the matrix: an env-suite setting (recorded, so the CLI can resume it) or a Python maker."""

    config: Mapping[str, Any] | None = None
    maker: Callable[[], AMAGOEnv] | None = None
    explores: bool = True
    """egreedy exploration has no MultiBinary form: those envs run without exploration."""


ENVS: dict[str, EnvChoice] = {
    "tmaze": EnvChoice(config={"id": "tmaze-passive", "corridor_length": 2}),  # Discrete(4), 3-step episodes
    # MultiDiscrete([3, 3]).
    "lock": EnvChoice(config={"id": "combination-lock", "dials": 2, "symbols": 3, "horizon": 3}),
    "bandit-mask": EnvChoice(config={"id": "masked-bandit", "horizon": 3, "mask_from": "info"}),
    "bandit-mask-obs": EnvChoice(config={"id": "masked-bandit", "horizon": 3, "mask_from": "obs"}),
    "multidiscrete-mask": EnvChoice(maker=_toy("md-mask", gym.spaces.MultiDiscrete([2, 3]), masked=True)),
    "multibinary": EnvChoice(maker=_toy("mb", gym.spaces.MultiBinary(3)), explores=False),
    "box": EnvChoice(maker=_toy("box", gym.spaces.Box(-2.0, 3.0, (2,), np.float32))),
    "image-box": EnvChoice(maker=_toy("img-box", gym.spaces.Box(-1.0, 1.0, (2,), np.float32), image=True)),
    "image-discrete": EnvChoice(maker=_toy("img", gym.spaces.Discrete(3), image=True)),
}

# ---- tiny components ------------------------------------------------------------------------------------------

TRAJ: dict[str, dict[str, Any]] = {
    "ff": {"kind": "ff", "d_model": 16, "d_ff": 32, "n_layers": 1},
    "gru": {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 1},
    "transformer": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    # A window of 2 under a context of 4: training masks and the rollout cache both drop the oldest steps.
    "transformer-window": {
        "kind": "transformer",
        "d_model": 16,
        "n_heads": 2,
        "d_ff": 32,
        "n_layers": 1,
        "window_size": 2,
    },
    # AMAGO's ClippedSlidingSinkAttention in plain PyTorch: window, one sink step and logit clipping.
    "transformer-sink": {
        "kind": "transformer",
        "d_model": 16,
        "n_heads": 2,
        "d_ff": 32,
        "n_layers": 1,
        "attention": "sliding_sink",
        "window_size": 2,
        "sink_size": 1,
        "logit_clip": 5.0,
    },
    # The pure-PyTorch scans (mamba_ssm's kernels off, as on any CPU): sequential, and parallel in chunks of 2.
    "mamba": {
        "kind": "mamba",
        "d_model": 16,
        "d_state": 4,
        "n_layers": 1,
        "use_kernels": False,
        "scan": "sequential",
    },
    "mamba-parallel": {
        "kind": "mamba",
        "d_model": 16,
        "d_state": 4,
        "n_layers": 1,
        "use_kernels": False,
        "scan": "parallel",
        "chunk_size": 2,
    },
}

TSTEP: dict[str, dict[str, Any]] = {
    "ff": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16},
    # Two small convolutions over 8x8 images (3x3 stride 2, then 3x3 stride 1: a 1x1 map).
    "cnn": {
        "kind": "cnn",
        "cnn_type": "nature",
        "cnn_channels": [4, 8],
        "cnn_kernels": [3, 3],
        "cnn_strides": [2, 1],
        "img_features": 16,
        "rl2_features": 4,
        "d_output": 16,
    },
}

NO_CLIP = {"discrete_dist": {"clip_prob_low": 0.0, "clip_prob_high": 1.0}}
"""The categorical policy without AMAGO's probability clipping: log-probs of near-zero probabilities in bf16."""


def continuous(kind: str) -> dict[str, Any]:
    """Agent options of the ``kind`` continuous policy distribution."""
    return {"continuous_dist": {"type": kind}}


# ---- the cases ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One tiny run: its components, data source, what follows training, and the pinned precision."""

    env: str
    agent: Literal["agent", "multitask"] = "agent"
    options: Mapping[str, Any] = field(default_factory=dict)
    traj: str = "gru"
    tstep: str = "ff"
    data: Literal["online", "offline"] = "online"
    then: Literal["none", "load_policy", "export", "export_cli", "resume", "resume_cli"] = "none"
    precision: Precision = "bf16"


CASES: dict[str, Case] = {
    # Discrete, both probability clippings, every trajectory encoder, both agents.
    "agent-discrete-gru-load": Case("tmaze", then="load_policy"),
    "multitask-discrete-noclip-transformer-export": Case(
        "tmaze", "multitask", NO_CLIP, traj="transformer", then="export"
    ),
    "agent-discrete-noclip-ff-resume_cli": Case("tmaze", options=NO_CLIP, traj="ff", then="resume_cli"),
    "agent-discrete-mamba-export_cli": Case("tmaze", traj="mamba", then="export_cli"),
    # MultiDiscrete and MultiBinary.
    "agent-multidiscrete-window-resume": Case("lock", traj="transformer-window", then="resume"),
    "multitask-multidiscrete-gru-load": Case("lock", "multitask", then="load_policy"),
    "multitask-multibinary-mamba_parallel": Case("multibinary", "multitask", traj="mamba-parallel"),
    "agent-multibinary-transformer-export": Case(
        "multibinary", options={"online_coeff": 0.0}, traj="transformer", then="export"
    ),
    # Continuous: TanhGaussian, GMM, Beta (GMM has no reparameterised samples: no policy gradient).
    "agent-tanh-cnn-ff-load": Case(
        "image-box", options=continuous("tanh_gaussian"), traj="ff", tstep="cnn", then="load_policy"
    ),
    "multitask-tanh-transformer-resume": Case(
        "box", "multitask", continuous("tanh_gaussian"), traj="transformer", then="resume"
    ),
    "agent-gmm-sink-export": Case(
        "box", options={**continuous("gmm"), "online_coeff": 0.0}, traj="transformer-sink", then="export"
    ),
    "multitask-gmm-gru-export": Case("box", "multitask", continuous("gmm"), then="export"),
    "agent-beta-gru-load": Case("box", options=continuous("beta"), then="load_policy"),
    "multitask-beta-mamba": Case("box", "multitask", continuous("beta"), traj="mamba"),
    # Action masks: from info and from the observation, Discrete and MultiDiscrete.
    "agent-mask_info-transformer-load": Case("bandit-mask", traj="transformer", then="load_policy"),
    "multitask-mask_obs-sink-export": Case(
        "bandit-mask-obs", "multitask", traj="transformer-sink", then="export"
    ),
    "agent-multidiscrete_mask-mamba": Case("multidiscrete-mask", traj="mamba"),
    # CNN timestep encoder on a discrete head.
    "multitask-discrete-cnn-window-export": Case(
        "image-discrete", "multitask", traj="transformer-window", tstep="cnn", then="export"
    ),
    # Offline: learned from a random-policy dataset in the protected buffer, no collection.
    "multitask-discrete-offline-gru-load": Case("tmaze", "multitask", data="offline", then="load_policy"),
    "agent-tanh-offline-transformer-resume": Case(
        "box", options=continuous("tanh_gaussian"), traj="transformer", data="offline", then="resume"
    ),
    "agent-tanh-offline-cnn-mamba": Case(
        "image-box", "agent", continuous("tanh_gaussian"), traj="mamba", tstep="cnn", data="offline"
    ),
    # fp16 (CPU autocast takes float16 on this torch; see the guard below).
    "fp16-agent-discrete-gru": Case("tmaze", precision="fp16"),
    "fp16-multitask-tanh-transformer-export": Case(
        "box", "multitask", continuous("tanh_gaussian"), traj="transformer", then="export", precision="fp16"
    ),
    "fp16-agent-mask-mamba-resume": Case("bandit-mask", traj="mamba", then="resume", precision="fp16"),
}


def _cpu_takes_fp16_autocast() -> bool:
    """Whether this torch's CPU autocast runs float16 (a property of torch, not of the CPU)."""
    try:
        with torch.autocast("cpu", dtype=torch.float16):
            return (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16
    except Exception:  # any refusal means: not on this torch
        return False


def _params(cases: Mapping[str, Case]) -> list[Any]:
    params = []
    for name, case in cases.items():
        marks = []
        if case.precision == "fp16" and not _cpu_takes_fp16_autocast():
            # Older torch had no float16 CPU autocast: there fp16 runs only on a GPU.
            marks.append(pytest.mark.gpu)
            marks.append(
                pytest.mark.skipif(
                    not torch.cuda.is_available(), reason="no float16 CPU autocast in this torch"
                )
            )
        params.append(pytest.param(case, id=name, marks=marks))
    return params


# ---- building and running -------------------------------------------------------------------------------------


class ProbedExperiment(Experiment):
    """An experiment that records, at each training forward, the autocast it runs under and its loss terms."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.autocasts: list[tuple[bool, torch.dtype]] = []
        self.losses: list[dict[str, float]] = []

    def compute_loss(self, batch: Any, log_step: bool) -> tuple[torch.Tensor, dict[str, Any]]:
        device = self.DEVICE.type
        self.autocasts.append((torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)))
        loss, metrics = super().compute_loss(batch, log_step)
        terms = {key: float(value) for key, value in metrics.items() if key.endswith("Loss")}
        self.losses.append({"Loss": float(loss.detach()), **terms})
        return loss, metrics


def job(case: Case, base: Path, name: str) -> dict[str, Any]:
    """The case's config: 1 epoch of 2 actors x 4 steps, 2 updates on batches of 4, a checkpoint per epoch."""
    choice = ENVS[case.env]
    agent: dict[str, Any] = {"kind": case.agent, "actor": {"d_hidden": 16}, "critic": {"d_hidden": 16}}
    if case.agent == "multitask":
        agent.update(min_return=-20.0, max_return=20.0, output_bins=16)
    agent.update(case.options)
    config: dict[str, Any] = {
        "tstep_encoder": TSTEP[case.tstep],
        "traj_encoder": TRAJ[case.traj],
        "agent": agent,
        "exploration": {"kind": "egreedy", "steps_anneal": 50} if choice.explores else None,
        "run": {"max_seq_len": 4, "seed": 3, "ckpt_base_dir": str(base), "name": name, "torch_threads": 1},
        "replay": {"traj_save_len": 4},
        "rollout": {"parallel_actors": 2},
        "schedule": {
            "epochs": 1,
            "train_timesteps_per_epoch": 4,
            "train_batches_per_epoch": 2,
            "val_interval": None,
            "ckpt_interval": 1,
        },
        "optim": {"batch_size": 4, "lr_warmup_steps": 2, "mixed_precision": case.precision},
        "logging": {"verbose": False, "plot": False, "log_interval": 1},
    }
    if choice.config is not None:
        config["env"] = dict(choice.config)
    if case.data == "offline":
        config["schedule"]["start_collecting_at_epoch"] = 100  # never collects: the protected files only
    return config


def experiment(case: Case, base: Path, name: str, **settings: Any) -> ProbedExperiment:
    maker = ENVS[case.env].maker
    makers = {"make_train_env": maker} if maker is not None else {}
    return ProbedExperiment(job(case, base, name), **makers, **settings)


def train(run: ProbedExperiment, *, resume: bool = False) -> ProbedExperiment:
    run.start(resume=resume)
    try:
        run.learn()
    finally:
        run.close()
    return run


def env_maker(case: Case) -> Callable[[], AMAGOEnv]:
    """The AMAGOEnv maker of the case's env (a suite's env as its val split builds it)."""
    choice = ENVS[case.env]
    if choice.maker is not None:
        return choice.maker
    from amago_core.config.experiment import ExperimentConfig
    from amago_core.plugins import registries

    # The env setting as a run validates it (an env id becomes its suite's config).
    setting = ExperimentConfig.validate_with({"env": dict(choice.config or {})}, registries()).env
    suite = registries().env_suites.build(setting)
    return functools.partial(suite.make_env, "val")


def random_action(space: gym.Space, mask: np.ndarray | None, rng: np.random.Generator) -> Any:
    """A uniform random action of the policy-facing ``space`` (allowed by ``mask`` when there is one)."""
    if isinstance(space, gym.spaces.Discrete | gym.spaces.MultiDiscrete):
        sizes = [int(space.n)] if isinstance(space, gym.spaces.Discrete) else [int(n) for n in space.nvec]
        mask = np.ones(sum(sizes), bool) if mask is None else mask
        segments = np.split(mask, np.cumsum(sizes)[:-1])
        return np.array([[rng.choice(np.flatnonzero(segment)) for segment in segments]])
    if isinstance(space, gym.spaces.MultiBinary):
        return rng.integers(0, 2, (1, *space.shape))
    return rng.uniform(-1.0, 1.0, (1, *space.shape)).astype(np.float32)


def write_random_dataset(make_env: Callable[[], AMAGOEnv], folder: Path, episodes: int = 6) -> None:
    """``episodes`` random-policy episodes as trajectory files in ``folder`` (a run's protected buffer)."""
    from amago_core.data.writer import TrajectoryWriter
    from amago_core.rollout.sequence import SequenceEnv

    folder.mkdir(parents=True)
    env = SequenceEnv(make_env(), TrajectoryWriter(1, folder, seed=0))
    rng = np.random.default_rng(0)
    timestep, written = env.reset(seed=0), 0
    while written < episodes:
        mask = timestep.obs.get(ACTION_MASK_KEY)
        result = env.step(random_action(env.env.action_space, None if mask is None else mask[0], rng))
        timestep = result.timestep
        written += len(env.save_finished_trajs())
    env.close()


# ---- the checks -----------------------------------------------------------------------------------------------


def _allowed(space: gym.Space, action: np.ndarray, mask: np.ndarray) -> bool:
    """Whether ``action`` (env indices) is allowed by ``mask`` (MultiDiscrete: per dimension)."""
    if isinstance(space, gym.spaces.Discrete):
        return bool(mask[int(action.reshape(-1)[0]) - int(space.start)])
    offsets = np.concatenate(([0], np.cumsum(space.nvec)[:-1]))
    return bool(mask[offsets + action.reshape(-1) - space.start].all())


def check_action(space: gym.Space, action: np.ndarray, mask: np.ndarray | None) -> None:
    """One env's policy action is finite, in the policy-facing ``space``, and allowed by ``mask``."""
    action = np.asarray(action)
    if isinstance(space, gym.spaces.Discrete):
        assert action.size == 1, action
        assert np.issubdtype(action.dtype, np.integer), action.dtype
        assert 0 <= int(action.reshape(-1)[0]) < int(space.n), action
    elif isinstance(space, gym.spaces.Box):
        assert action.shape == space.shape, (action.shape, space.shape)
        assert np.isfinite(action).all(), action
        assert (action >= space.low).all(), action
        assert (action <= space.high).all(), action
    else:  # MultiDiscrete, MultiBinary: integer entries, each within its dimension
        assert np.issubdtype(action.dtype, np.integer), action.dtype
        assert space.contains(action.reshape(space.shape).astype(space.dtype)), (action, space)
    if mask is not None:
        assert _allowed(space, action, mask), (action.tolist(), mask.tolist())


class RecordingPool:
    """A pool that checks every action it is stepped with against the action space and the current mask."""

    def __init__(self, pool: Any, space: gym.Space) -> None:
        self.pool, self.space, self.steps = pool, space, 0
        self.num_envs = pool.num_envs
        self.timestep: Any = None

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        self.timestep = self.pool.reset(*args, **kwargs)
        return self.timestep

    def step(self, actions: np.ndarray) -> Any:
        masks = self.timestep.obs.get(ACTION_MASK_KEY)
        assert len(actions) == self.num_envs
        for row, action in enumerate(actions):
            check_action(self.space, action, None if masks is None else masks[row])
        result = self.pool.step(actions)
        self.timestep, self.steps = result.timestep, self.steps + 1
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)


def check_training(run: ProbedExperiment, precision: Precision, updates: int) -> None:
    """The run trained ``updates`` steps, each forward under ``precision``'s autocast, with finite losses."""
    assert run.accelerator is not None
    # accelerate keeps fp16's gradient scaler; bf16 autocasts come from the experiment's casters (per phase).
    assert run.accelerator.mixed_precision == ("fp16" if precision == "fp16" else "no")
    assert run.precision is not None
    assert run.precision.used == precision
    assert run.config.optim.mixed_precision == precision
    assert len(run.losses) == updates, run.losses
    assert set(run.autocasts) == {(True, AUTOCAST_DTYPES[precision])}
    for step, terms in enumerate(run.losses):
        assert {"Loss", "Actor Loss", "Critic Loss"} <= set(terms), terms
        bad = {key: value for key, value in terms.items() if not math.isfinite(value)}
        assert not bad, f"update {step}: {bad}"
    check_records(run.paths.root, precision)


def check_records(run_dir: Path, precision: Precision) -> None:
    """The run folder records the precision it used, and every logged loss is finite."""
    record = json.loads((run_dir / "config.resolved.json").read_text())
    assert record["optim"]["mixed_precision"] == precision
    losses = [
        (key, value)
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        for key, value in json.loads(line).items()
        if key.startswith("train/") and key.endswith("Loss")
    ]
    assert losses
    assert all(isinstance(value, int | float) and math.isfinite(value) for _, value in losses), losses


def check_rollout(run: ProbedExperiment, case: Case) -> None:
    """A short rollout under the training autocast, sampled and greedy, takes only valid, allowed actions."""
    from amago_core.experiment.acting import run_policy

    for sample in (True, False):
        pool = RecordingPool(
            make_pool("sync", [EnvCreator(make_env=env_maker(case))] * 2, stack=False), run.action_space
        )
        try:
            run_policy(
                run.policy,
                pool,
                ROLLOUT_STEPS,
                device=run.DEVICE,
                caster=run.training_caster,
                timestep=pool.reset(seed=1),
                sample=sample,
            )
        finally:
            pool.close()
        assert pool.steps == ROLLOUT_STEPS


def check_loaded_policy(run: ProbedExperiment, case: Case) -> None:
    """``load_policy`` acts in the plain gymnasium env, in fp32 and under the run's autocast."""
    from amago_tools.policy import load_policy

    policy = load_policy(run.paths.root, sample=True)
    amago_env = env_maker(case)()
    env, masked = amago_env.env, amago_env.action_mask is not None
    for caster in (
        torch.autocast("cpu", enabled=False),
        torch.autocast("cpu", dtype=AUTOCAST_DTYPES[case.precision]),
    ):
        obs, info = env.reset(seed=0)
        policy.reset()
        reward = None
        with caster:
            for _ in range(ROLLOUT_STEPS):
                action = policy.act(obs, reward, info=info if masked else None)
                arr = np.asarray(action, dtype=env.action_space.dtype).reshape(env.action_space.shape)
                assert env.action_space.contains(arr), (action, env.action_space)
                if masked:
                    assert _allowed(env.action_space, arr, np.asarray(info["legal"], bool)), (action, info)
                obs, reward, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    obs, info = env.reset()
                    policy.reset()
                    reward = None
    env.close()


def check_export(run_dir: Path, out: Path, *, cli: bool) -> None:
    """The policy step exports to TorchScript and matches the eager agent on the recorded check steps."""
    from amago_tools import export as export_module

    if cli:
        from typer.testing import CliRunner

        from amago_core.cli.app import app

        result = CliRunner().invoke(
            app, ["export", str(run_dir), "--format", "torchscript", "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        manifest = json.loads((out / "policy_step.json").read_text())
        assert manifest["files"]["torchscript"]["steps_checked"] >= 1
        return
    report = export_module.export_policy(run_dir, out, formats=["torchscript"], check_steps=8)
    (result,) = report.results
    assert result.error is None, result.error
    assert result.max_abs_diff <= export_module.TOLERANCE


def resume_cli(run_dir: Path, precision: Precision) -> None:
    """``amago run --resume`` one more epoch, the precision asked for again (never ``auto``)."""
    from accelerate.state import AcceleratorState
    from typer.testing import CliRunner

    from amago_core.cli.app import app

    AcceleratorState._reset_state(reset_partial_state=True)  # a resume is a new process
    args = ["run", "--resume", str(run_dir), "--quiet"]
    args += ["-o", "schedule.epochs=2", "-o", f"optim.mixed_precision={precision}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    check_records(run_dir, precision)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["Epoch"] for r in records if "train/Loss" in r] == [0, 0, 1, 1]  # 2 updates before, 2 after


# ---- the matrix -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _params(CASES))
def test_a_tiny_run_trains_and_acts_in_the_pinned_precision(case: Case, tmp_path: Path) -> None:
    base = tmp_path / "runs"
    if case.data == "offline":
        write_random_dataset(env_maker(case), base / "run" / "buffer" / "protected")
    run = train(experiment(case, base, "run"))
    check_training(run, case.precision, updates=2)
    if case.data == "offline":
        assert run.total_frames == 0  # learned from the protected files alone
    check_rollout(run, case)

    if case.then == "load_policy":
        check_loaded_policy(run, case)
    elif case.then in ("export", "export_cli"):
        check_export(run.paths.root, tmp_path / "export", cli=case.then == "export_cli")
    elif case.then == "resume":
        from accelerate.state import AcceleratorState

        AcceleratorState._reset_state(reset_partial_state=True)  # a resume is a new process
        resumed = train(experiment(case, base, "run", epochs=2), resume=True)
        assert resumed.grad_update_counter == 4  # 2 before the checkpoint, 2 after
        check_training(resumed, case.precision, updates=2)
        check_rollout(resumed, case)
    elif case.then == "resume_cli":
        resume_cli(run.paths.root, case.precision)
