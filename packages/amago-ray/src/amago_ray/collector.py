"""Train collection on Ray actors (config section ``ray``, the ``amago-ray`` plugin: ``pip install amago-ray``).

Each actor is a collect-only copy of the run (``run.mode = "collect"``) in a temp folder of its node, with its
own seed and ``ray.envs_per_actor`` envs. Per epoch the learner sends it the weights reference of the newest
broadcast; the actor loads them if they are new to it, steps its pool ``train_timesteps_per_epoch`` times, and
returns the trajectory files its writer finished (names, bytes and digests), deleting them on its side. The
learner writes each file atomically into its buffer once it arrived whole: no shared filesystem is needed, and
no file is written twice or half. An actor that dies loses its share of that epoch (and its unfinished
episodes); Ray restarts it (``ray.max_restarts``) and the run goes on with the others.

What a round costs: one ``ray.put`` of the weights (safetensors bytes) per broadcast, fetched once by each
actor; per epoch, one call per actor and the bytes of the files it finished (``bench/ray_collect.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

# Actors run the interpreter Ray starts them with: every node has amago installed (docs/tutorial/10-scale-out.md).
# Under `uv run`, Ray's uv hook would instead copy the working folder to each worker and sync a fresh virtual
# environment there (torch included): minutes per actor start and restart on a loaded machine. Read by Ray when
# it is imported, so set before that; a user who wants the hook sets RAY_ENABLE_UV_RUN_RUNTIME_ENV=1.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
import ray
import torch
from ray.exceptions import ActorUnavailableError, RayActorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from tqdm.auto import tqdm

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resolve import RunPlan
from amago_core.data.files import atomic_write, is_traj_file
from amago_core.experiment.collectors import CollectedData
from amago_core.experiment.env_runner import EnvRunner
from amago_core.experiment.pools import actor_share

if TYPE_CHECKING:
    from amago_core.experiment.experiment import Experiment


@dataclass(frozen=True)
class ActorJob:
    """What every actor is built from (pickled by Ray once per actor start).

    Attributes:
        config: the learner's resolved config.
        make_train_env: the run's train env maker(s) (a suite's picklable makers, or the Python API's).
        make_val_env: the run's val env maker(s), for ``ray.evaluate`` (None: the actors do not evaluate).
        classes: Python component classes by slot (``traj_encoder``...), as the Python API was given them.
        start_frames: env steps the run took before (non-zero on resume: exploration schedules continue).
    """

    config: ExperimentConfig
    make_train_env: Any
    classes: dict[str, Any]
    start_frames: int = 0
    make_val_env: Any = None


@dataclass(frozen=True)
class WeightsOffer:
    """The newest broadcast: its version and its object reference (inside a list, so Ray passes the reference
    and the actor fetches the bytes only when the version is new to it)."""

    version: int
    ref: list[Any]


@dataclass(frozen=True)
class ShippedFile:
    """A finished trajectory file: its name, bytes and their blake2b digest (checked on arrival)."""

    name: str
    data: bytes
    digest: str


@dataclass(frozen=True)
class ActorInfo:
    """An actor's process, node and whether Ray restarted it."""

    pid: int
    node_id: str
    reconstructed: bool


@dataclass
class Shipment:
    """One actor's answer to one collect call."""

    actor: int
    pid: int
    reconstructed: bool
    frames_by_env_name: dict[str, int]
    files: list[ShippedFile]
    collect_s: float
    weights_load_s: float
    loaded_weights: bool


@dataclass
class CollectStats:
    """Running totals of what crossed the wire (``bench/ray_collect.py`` turns them into costs per item)."""

    snippets: int = 0
    snippet_bytes: int = 0
    snippet_write_s: float = 0.0
    broadcasts: int = 0
    broadcast_bytes: int = 0
    broadcast_s: float = 0.0
    actor_weight_loads: int = 0
    actor_weight_load_s: float = 0.0
    frames_by_actor: dict[int, int] = field(default_factory=dict)
    pids_by_actor: dict[int, set[int]] = field(default_factory=dict)
    failures: int = 0
    rejected_files: int = 0
    repeated_names: int = 0


def digest(data: bytes) -> str:
    """The digest a file travels with."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def policy_bytes(policy: torch.nn.Module) -> bytes:
    """The policy's state dict as safetensors bytes (tensors copied apart: safetensors refuses shared ones)."""
    state = {name: tensor.detach().cpu().clone() for name, tensor in policy.state_dict().items()}
    return save_safetensors(state)


def actor_seed(seed: int, index: int, reconstructed: bool) -> int:
    """An actor's run seed: a stream of its own per actor (``seed + index`` would give actor 0's env row 1 the
    reset seed of actor 1's row 0), and a fresh one after a restart, so that a restarted actor does not replay
    the episodes it already shipped."""
    entropy = [seed, 1 + index] + ([time.time_ns()] if reconstructed else [])
    return int(np.random.SeedSequence(entropy).generate_state(1)[0] % 2**31)


def actor_folder_prefix(config: ExperimentConfig, index: int) -> str:
    """The temp folder prefix of one actor of one run (a restarted actor removes its predecessor's folder)."""
    return f"amago-ray-{config.run.name}-actor{index}-"


def actor_plan(job: ActorJob, index: int, folder: Path, reconstructed: bool) -> RunPlan:
    """The plan of actor ``index``: the learner's config, collecting only, into ``folder``, with
    ``envs_per_actor`` envs and its own seed (the learner's plan was validated; nothing here needs a registry)."""
    config, ray_cfg = job.config, job.config.ray
    seed = config.run.seed if config.run.seed is not None else 0
    actor_config = config.model_copy(
        update={
            "run": config.run.model_copy(
                update={
                    "mode": "collect",
                    "name": f"actor{index}",
                    "ckpt_base_dir": folder,
                    "seed": actor_seed(seed, index, reconstructed),
                    # Each actor has its share of its node's cores: torch's default (half the cores) would
                    # oversubscribe a node running many actors.
                    "torch_threads": max(1, int(ray_cfg.cpus_per_actor)),
                }
            ),
            "rollout": config.rollout.model_copy(update={"parallel_actors": config.envs_per_ray_actor}),
            "replay": config.replay.model_copy(update={"dset_root": folder, "dset_name": "buffer"}),
            "schedule": config.schedule.model_copy(
                update={"start_collecting_at_epoch": 0, "val_interval": None, "ckpt_interval": None}
            ),
            "logging": config.logging.model_copy(
                update={"verbose": False, "log_to_wandb": False, "plot": False}
            ),
            "ray": config.ray.model_copy(update={"actors": 0}),
        }
    )
    return RunPlan(actor_config)


def actor_env_makers(make_env: Any, config: ExperimentConfig, index: int) -> Any:
    """The env maker(s) of actor ``index``: a suite's makers know the global index of each of its envs
    (``index * envs_per_actor`` onwards of ``actors * envs_per_actor``), so a suite that pins actors (each to a
    game...) pins them across all Ray actors; other makers are the same for every actor."""
    envs = config.envs_per_ray_actor
    return actor_share(make_env, index * envs, config.ray.actors * envs)


@dataclass
class WriteOutcome:
    """What :func:`write_files` did: files and bytes written, names rejected, names that already existed."""

    written: int = 0
    written_bytes: int = 0
    rejected: list[str] = field(default_factory=list)
    repeated: int = 0


def write_files(files: list[ShippedFile], buffer: Path) -> WriteOutcome:
    """Writes shipped trajectory files into ``buffer``, each atomically (temp name, then rename).

    A file whose bytes do not match its digest, or whose name is no plain trajectory file name, is rejected; a
    name that is already in the buffer is not written again.
    """
    outcome = WriteOutcome()
    for shipped in files:
        target = buffer / shipped.name
        if (
            Path(shipped.name).name != shipped.name
            or not is_traj_file(target)
            or digest(shipped.data) != shipped.digest
        ):
            outcome.rejected.append(shipped.name)
            continue
        if target.exists():
            outcome.repeated += 1
            continue
        atomic_write(target, lambda out, data=shipped.data: out.write(data))  # type: ignore[misc]
        outcome.written += 1
        outcome.written_bytes += len(shipped.data)
    return outcome


class CollectorActor:
    """One Ray actor: a collect-only copy of the run in a temp folder of its node, stepping its own env pool.

    Args:
        job: the run's config, env makers and component classes.
        index: this actor's number (its seed stream and folder name).
    """

    def __init__(self, job: ActorJob, index: int) -> None:
        from amago_core.experiment.checkpoints import Progress
        from amago_core.experiment.experiment import Experiment

        self.index = index
        with warnings.catch_warnings():  # Ray's own property calls one of its deprecated APIs
            warnings.simplefilter("ignore", DeprecationWarning)
            self.reconstructed = bool(ray.get_runtime_context().was_current_actor_reconstructed)
        prefix = actor_folder_prefix(job.config, index)
        if self.reconstructed:
            # Files the dead predecessor wrote but never shipped are lost with it, never shipped twice.
            for stale in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
                shutil.rmtree(stale, ignore_errors=True)
        self.folder = Path(tempfile.mkdtemp(prefix=prefix))
        self.experiment = Experiment(
            actor_plan(job, index, self.folder, self.reconstructed),
            make_train_env=actor_env_makers(job.make_train_env, job.config, index),
            classes=job.classes,
        )
        self.experiment.counters.restore(Progress(total_frames=job.start_frames))
        self.experiment.start()
        dataset = self.experiment.dataset
        buffer = dataset.save_new_trajs_to if dataset is not None else None
        if buffer is None:
            msg = f"ray actor {index} built no trajectory folder; its dataset takes no new data"
            raise RuntimeError(msg)
        self.buffer: Path = buffer
        self.weights_version = -1
        self.make_val_env = actor_env_makers(job.make_val_env, job.config, index)
        self.val_envs: Any = None  # built on the first evaluate call

    def _load_weights(self, weights: WeightsOffer) -> bool:
        """Loads the offered weights unless this actor has them already; True when it loaded."""
        if weights.version == self.weights_version:
            return False
        self.experiment.policy.load_state_dict(load_safetensors(ray.get(weights.ref[0])))
        self.weights_version = weights.version
        return True

    def evaluate(self, timesteps: int, weights: WeightsOffer) -> dict[str, float]:
        """Validation metrics of the offered weights on this actor's own val pool (fresh episodes and memory)."""
        self._load_weights(weights)
        runner = self._runner()
        if self.val_envs is None:
            self.val_envs = runner.pool(self.make_val_env, "val")
        return runner.evaluate(self.val_envs, timesteps, desc="evaluate")

    def _runner(self) -> EnvRunner:
        runner = self.experiment.env_runner
        if runner is None:  # start() in __init__ builds it
            msg = "the Ray actor's experiment was not started; it has no env pools"
            raise RuntimeError(msg)
        return runner

    def ready(self) -> ActorInfo:
        """Where the actor runs, once it is built (the learner waits on this to report start-up errors)."""
        return ActorInfo(os.getpid(), ray.get_runtime_context().get_node_id(), self.reconstructed)

    def collect(self, epoch: int, timesteps: int, weights: WeightsOffer) -> Shipment:
        """Loads new weights, steps the pool ``timesteps`` times, and hands over the finished files."""
        start = time.perf_counter()
        loads = self._load_weights(weights)
        loaded = time.perf_counter()
        # The learner's epoch: rollout.force_reset_train_envs_every counts it.
        collected = self._runner().collect(epoch, timesteps, self.experiment.policy)
        by_name = collected.frames_by_env_name if collected is not None else {}
        frames = {name: count for name, count in by_name.items() if count}
        files = []
        # Only finished files are listed (the writer's temp names are hidden), so none travels half-written.
        for path in sorted(p for p in self.buffer.iterdir() if is_traj_file(p)):
            data = path.read_bytes()
            files.append(ShippedFile(path.name, data, digest(data)))
            path.unlink()
        return Shipment(
            actor=self.index,
            pid=os.getpid(),
            reconstructed=self.reconstructed,
            frames_by_env_name=frames,
            files=files,
            collect_s=time.perf_counter() - loaded,
            weights_load_s=loaded - start,
            loaded_weights=loads,
        )

    def close(self) -> None:
        """Closes the envs and removes the temp folder."""
        if self.val_envs is not None:
            self.val_envs.close()
        self.experiment.close()
        shutil.rmtree(self.folder, ignore_errors=True)


RemoteCollectorActor = ray.remote(CollectorActor)


class RayCollector:
    """The learner's side: starts or joins a Ray cluster, keeps ``ray.actors`` actors, writes what they ship.

    Args:
        job: what each actor builds.
        buffer: the learner's folder for new trajectory files.
        log: logs a metrics dict under a section (the experiment's ``log``), or None.
    """

    def __init__(self, job: ActorJob, buffer: Path, log: Any = None) -> None:
        settings = job.config.ray
        self.job = job
        self.settings = settings
        self.buffer = buffer
        self.log = log
        self.owns_ray = not ray.is_initialized()
        if self.owns_ray:
            # address None: RAY_ADDRESS if set, else a local cluster that ends with this process.
            ray.init(address=settings.address, include_dashboard=False, logging_level=logging.WARNING)
        try:
            self._check_capacity()
            self.actors: list[Any] = [  # Ray's actor handles (untyped)
                RemoteCollectorActor.options(
                    max_restarts=settings.max_restarts,
                    max_task_retries=0,  # a lost call is not redone: its files would arrive twice
                    num_cpus=settings.cpus_per_actor,
                ).remote(job, index)
                for index in range(settings.actors)
            ]
            self._wait_until_built()
        except BaseException:
            self.close()
            raise
        self.stats = CollectStats()
        self.weights: WeightsOffer | None = None
        self.synced_epoch: int | None = None
        self.deaths_in_a_row = [0] * settings.actors
        self.gone: set[int] = set()
        """Actors Ray gave up restarting: no longer called."""
        self.closed = False
        atexit.register(self.close)

    @classmethod
    def for_experiment(cls, experiment: Experiment) -> RayCollector:
        """The collector of ``experiment`` (called by ``init_envs`` when ``ray.actors > 0``).

        Raises:
            ValueError: several learner processes (each would start its own actors), or a dataset that takes no
                new data.
        """
        if experiment.accelerator is not None and experiment.accelerator.num_processes > 1:
            msg = (
                "ray.actors > 0 runs with one learner process; launch without accelerate's multi-process mode"
            )
            raise ValueError(msg)
        dataset = experiment.dataset
        buffer = dataset.save_new_trajs_to if dataset is not None else None
        if buffer is None:
            msg = "ray.actors > 0 but the dataset takes no new data; use a disk buffer (the default dataset)"
            raise ValueError(msg)
        job = ActorJob(
            config=experiment.config,
            make_train_env=experiment.make_train_env,
            classes=dict(experiment.classes),
            start_frames=experiment.total_frames // max(experiment.config.ray.actors, 1),
            make_val_env=experiment.make_val_env if experiment.config.ray.evaluate else None,
        )
        return cls(job, buffer, log=experiment.log)

    def _check_capacity(self) -> None:
        settings = self.settings
        needed = settings.actors * settings.cpus_per_actor
        available = float(ray.cluster_resources().get("CPU", 0.0))
        if needed > available:
            msg = (
                f"ray.actors={settings.actors} x ray.cpus_per_actor={settings.cpus_per_actor} need {needed:g} CPUs "
                f"but the Ray cluster has {available:g}; lower ray.cpus_per_actor to "
                f"{available / settings.actors:.3g} or add nodes (`ray start --address=...`)."
            )
            raise ValueError(msg)

    def _wait_until_built(self) -> None:
        for index, actor in enumerate(self.actors):
            try:
                ray.get(actor.ready.remote())
            except RayActorError as err:
                reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
                msg = f"ray actor {index} failed to start: {reason} (--debug shows its traceback)"
                raise RuntimeError(msg) from err

    def sync_weights(self, policy: torch.nn.Module, epoch: int) -> None:
        """Broadcasts the weights on the first call and every ``ray.weight_sync_interval`` epochs after."""
        interval = self.settings.weight_sync_interval
        if self.synced_epoch is not None and epoch - self.synced_epoch < interval:
            return
        start = time.perf_counter()
        data = policy_bytes(policy)
        version = 0 if self.weights is None else self.weights.version + 1
        self.weights = WeightsOffer(version, [ray.put(data)])
        self.synced_epoch = epoch
        self.stats.broadcasts += 1
        self.stats.broadcast_bytes += len(data)
        self.stats.broadcast_s += time.perf_counter() - start

    def collect(self, epoch: int, timesteps: int) -> CollectedData:
        """One collect call per actor; writes each answer's files as it arrives."""
        if self.weights is None:
            msg = "RayCollector.collect before sync_weights: the actors have no policy to act with"
            raise RuntimeError(msg)
        pending = {
            actor.collect.remote(epoch, timesteps, self.weights): index
            for index, actor in enumerate(self.actors)
            if index not in self.gone
        }
        result = CollectedData()
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            try:
                shipment: Shipment = ray.get(done[0])
            except RayActorError as err:
                self._on_failure(index, epoch, err)
                result.failed_workers.append(index)
                continue
            self.deaths_in_a_row[index] = 0
            result.files += self._write(shipment)
            for name, count in shipment.frames_by_env_name.items():
                result.frames_by_env_name[name] = result.frames_by_env_name.get(name, 0) + count
            stats = self.stats
            stats.frames_by_actor[index] = stats.frames_by_actor.get(index, 0) + sum(
                shipment.frames_by_env_name.values()
            )
            stats.pids_by_actor.setdefault(index, set()).add(shipment.pid)
            if shipment.loaded_weights:
                stats.actor_weight_loads += 1
                stats.actor_weight_load_s += shipment.weights_load_s
        if self.log is not None:
            self.log(
                {"Files": result.files, "Failed Actors": len(result.failed_workers)},
                "ray",
            )
        return result

    @property
    def evaluates(self) -> bool:
        """Whether validation runs on the actors (``ray.evaluate`` with val envs to build)."""
        return self.job.make_val_env is not None

    def evaluate(self, timesteps: int) -> dict[str, float] | None:
        """One evaluate call per actor; the mean of each metric over the actors that report it.

        An actor that dies here is handled as in :meth:`collect` (restarted by Ray, left out of this mean).
        """
        if self.weights is None:
            msg = "RayCollector.evaluate before sync_weights: the actors have no policy to act with"
            raise RuntimeError(msg)
        pending = {
            actor.evaluate.remote(timesteps, self.weights): index
            for index, actor in enumerate(self.actors)
            if index not in self.gone
        }
        reports: list[dict[str, float]] = []
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            try:
                reports.append(ray.get(done[0]))
            except RayActorError as err:
                self._on_failure(index, self.synced_epoch or 0, err)
        if not reports:
            return None
        keys = {key for report in reports for key in report}
        return {
            key: float(np.mean([report[key] for report in reports if key in report])) for key in sorted(keys)
        }

    def _on_failure(self, index: int, epoch: int, err: RayActorError) -> None:
        self.stats.failures += 1
        if isinstance(err, ActorUnavailableError):
            # Died mid-call, or called while Ray restarts it: back once its env pool is rebuilt.
            tqdm.write(
                f"ray actor {index} is unavailable in epoch {epoch} ({type(err).__name__}): its share of the "
                "epoch and its unfinished episodes are lost, Ray restarts it, the other actors go on."
            )
            return
        self.deaths_in_a_row[index] += 1
        if self.deaths_in_a_row[index] > self.settings.max_restarts:
            self.gone.add(index)
        tqdm.write(
            f"ray actor {index} died in epoch {epoch} ({type(err).__name__}): its unfinished episodes are lost"
            + ("; Ray will not restart it again" if index in self.gone else ", Ray restarts it")
            + ", the other actors go on."
        )
        if len(self.gone) == len(self.actors):
            msg = (
                f"every Ray actor died more than ray.max_restarts={self.settings.max_restarts} times; see the "
                "actors' errors above (or `ray logs`), fix the cause and --resume the run."
            )
            raise RuntimeError(msg) from err

    def _write(self, shipment: Shipment) -> int:
        start = time.perf_counter()
        outcome = write_files(shipment.files, self.buffer)
        for name in outcome.rejected:
            tqdm.write(f"ray actor {shipment.actor} shipped {name!r} damaged or misnamed; it is not written")
        stats = self.stats
        stats.snippets += outcome.written
        stats.snippet_bytes += outcome.written_bytes
        stats.rejected_files += len(outcome.rejected)
        stats.repeated_names += outcome.repeated
        stats.snippet_write_s += time.perf_counter() - start
        return outcome.written

    def actor_infos(self, timeout_s: float = 300.0) -> list[ActorInfo]:
        """Process, node and restart flag of every actor, waiting up to ``timeout_s`` for restarting ones.

        Raises:
            ActorUnavailableError: an actor was still restarting after ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        infos = []
        for actor in self.actors:
            while True:
                try:
                    infos.append(ray.get(actor.ready.remote()))
                    break
                except ActorUnavailableError:  # Ray answers "restarting" at once instead of waiting
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        return infos

    def close(self) -> None:
        """Stops the actors (removing their temp folders) and the Ray cluster this collector started."""
        if getattr(self, "closed", False):
            return
        self.closed = True
        atexit.unregister(self.close)
        if ray.is_initialized():
            for actor in getattr(self, "actors", []):
                # A dead or stuck actor: killing it below is all that is left to do.
                with contextlib.suppress(Exception):
                    ray.get(actor.close.remote(), timeout=30)
                ray.kill(actor, no_restart=True)
            if self.owns_ray:
                ray.shutdown()
