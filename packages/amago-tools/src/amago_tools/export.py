"""Exporting a run's policy as one step function with explicit memory: TorchScript and ONNX files.

The step of ``n_envs`` envs is::

    (obs.<key>..., rl2, time_idx, memory...) -> (action, next_memory...)

- ``obs.<key>``: ``(n_envs, ...)`` each key of the agent's observation dict (``obs.observation`` for envs
  whose observations are not dicts), in the observation space's dtype;
- ``rl2``: ``(n_envs, 1 + A)`` float32, the previous reward, then the previous action (one-hot for Discrete,
  0/1 for MultiBinary, [-1, 1] for Box); zeros at an episode's first observation;
- ``time_idx``: ``(n_envs,)`` int64 steps since each env's episode began. At 0 the env's memory restarts
  inside the step, so the memory fed at an episode's start may hold anything (zeros, to begin with);
- ``memory...``: the trajectory encoder's rollout memory as named tensors (none for memoryless encoders);
- ``action``: the policy's most likely action, ``(n_envs, 1)`` int64 indices (Discrete) or ``(n_envs, A)``
  (0/1 uint8 for MultiBinary, float32 in [-1, 1] for Box, which the env's bounds rescale).

``policy_step.json`` lists the inputs and outputs with their shapes and dtypes, the memory tensors, the
spaces, and how each file compared with the eager agent. Every file is checked before it is kept: it is
stepped through a short recorded rollout and must reproduce the eager agent's actions and memory.

Tracing records one path through the code: an encoder whose rollout step makes Python decisions from tensor
values cannot be captured this way, and its check fails with a message saying so. An encoder can offer a
graph-friendly step of its own: amago's Transformer, whose eager step groups its KV cache rows by their lengths
in Python, attends over its whole fixed-size cache with a length mask while ``torch.jit.is_tracing()`` /
``torch.compiler.is_exporting()`` is True.

A module of the agent with an ``exportable_memory()`` method (a context manager; :data:`EXPORTABLE_MEMORY`) has
it open for the whole export, recording included. Inside it, the memory it makes must restart an env exactly
as :meth:`~amago_tools.policy.memory.MemoryLayout.restart_rows` does inside the exported step: the env's entries
along the env dim replaced by a fresh memory's (the Transformer then keeps its cache rows in env order, where
a reset zeroes the env's own row, instead of sorting rows by length).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import re
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from amago_core.io import atomic_write, atomic_write_json, inside
from amago_core.plugins.registry import Registries
from amago_core.plugins.registry import registries as installed_registries
from amago_core.rollout.spaces import space_to_json
from amago_tools.policy.loader import LoadedRun, PolicyLoadError, describe, load_run
from amago_tools.policy.memory import MemoryLayout
from amago_tools.recorded import RecordedSteps, record_steps

FORMATS = ("torchscript", "onnx")
"""What ``export_policy`` can write."""
FILE_NAMES = {"torchscript": "policy_step.pt", "onnx": "policy_step.onnx"}
MANIFEST_NAME = "policy_step.json"
MANIFEST_FORMAT = 1
EXPORT_EXTRA = 'pip install "amago-tools[export]"'
ONNX_MODULES = ("onnx", "onnxscript", "onnxruntime")
"""What writing (onnx, onnxscript: torch's exporter) and checking (onnxruntime) an ONNX file needs."""
TOLERANCE = 1e-4
"""Largest difference from the eager agent an exported file may show (absolute, plus this times the value)."""
DEFAULT_CHECK_STEPS = 64
EXPORTABLE_MEMORY = "exportable_memory"
"""Method (a context manager) a module of the agent may have: open during an export (see the module docstring)."""


class ExportError(RuntimeError):
    """A format could not be written, or its file does not reproduce the eager agent."""


@dataclass(frozen=True)
class ExportResult:
    """What became of one format.

    Attributes:
        format: ``torchscript`` or ``onnx``.
        path: the file written (None when it was not).
        steps_checked: recorded steps the file was compared on.
        max_abs_diff: the largest difference from the eager agent's actions and memory over those steps.
        error: why the file was not written (None when it was).
    """

    format: str
    path: Path | None
    steps_checked: int = 0
    max_abs_diff: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class ExportReport:
    """What ``export_policy`` did.

    Attributes:
        out_dir: where the files went.
        manifest: ``policy_step.json`` (None when no format was written).
        results: one per requested format.
        checked_on: the recorded rollout every file was compared on.
    """

    out_dir: Path
    manifest: Path | None
    results: list[ExportResult]
    checked_on: str


def onnx_available() -> bool:
    """Whether the ONNX exporter and runtime are installed (``amago-tools[export]``)."""
    return all(importlib.util.find_spec(name) is not None for name in ONNX_MODULES)


class PolicyStep(torch.nn.Module):
    """One deterministic step of the agent with its memory as plain tensors (what the exported files hold).

    Args:
        agent: the agent (on the CPU, in eval mode).
        obs_keys: the observation dict's keys, in input order.
        layout: how the memory maps to tensors.
    """

    def __init__(self, agent: torch.nn.Module, obs_keys: Sequence[str], layout: MemoryLayout) -> None:
        super().__init__()
        self.agent = agent
        self.obs_keys = tuple(obs_keys)
        self.layout = layout
        self.fresh_names: list[str] = []
        for index, tensor in enumerate(layout.initial()):
            name = f"fresh_memory_{index}"
            self.register_buffer(name, tensor.clone(), persistent=False)
            self.fresh_names.append(name)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(obs.<key>..., rl2, time_idx, memory...) -> (action, next_memory...)`` (see the module docstring)."""
        keys = len(self.obs_keys)
        obs = {key: inputs[i].unsqueeze(1) for i, key in enumerate(self.obs_keys)}
        rl2, time_idx = inputs[keys], inputs[keys + 1]
        fresh = [getattr(self, name) for name in self.fresh_names]
        memory = self.layout.restart_rows(list(inputs[keys + 2 :]), fresh, time_idx == 0)
        agent: Any = self.agent
        actions, next_memory = agent.get_actions(
            obs, rl2.unsqueeze(1), time_idx.reshape(-1, 1, 1), self.layout.rebuild(memory), sample=False
        )
        return (actions[:, 0], *self.layout.flatten(next_memory))


def _tensor_spec(name: str, tensor: torch.Tensor, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        **extra,
    }


@dataclass(frozen=True)
class _Signature:
    """Names and example values of the step's inputs and outputs."""

    input_names: list[str]
    output_names: list[str]
    example: tuple[torch.Tensor, ...]

    @classmethod
    def of(cls, step: PolicyStep, recorded: RecordedSteps) -> _Signature:
        memory_names = list(step.layout.names)
        inputs = _step_inputs(step, recorded, 0, [torch.zeros_like(t) for t in step.layout.initial()])
        return cls(
            input_names=[f"obs.{key}" for key in step.obs_keys] + ["rl2", "time_idx", *memory_names],
            output_names=["action"] + [f"next_{name}" for name in memory_names],
            example=inputs,
        )


def _step_inputs(
    step: PolicyStep, recorded: RecordedSteps, index: int, memory: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, ...]:
    obs = [torch.from_numpy(recorded.obs[index][key]) for key in step.obs_keys]
    rl2 = torch.from_numpy(recorded.rl2[index])
    time_idx = torch.from_numpy(recorded.time_idx[index])
    return (*obs, rl2, time_idx, *memory)


def _difference(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor]) -> tuple[float, bool]:
    """The largest absolute difference, and whether every entry is within :data:`TOLERANCE`."""
    if len(got) != len(want):
        return float("inf"), False
    worst, close = 0.0, True
    for a, b in zip(got, want, strict=True):
        a64, b64 = a.detach().to(torch.float64), b.detach().to(torch.float64)
        if a64.shape != b64.shape:
            return float("inf"), False
        if a64.numel():
            worst = max(worst, float((a64 - b64).abs().max()))
            close = close and bool(torch.allclose(a64, b64, rtol=TOLERANCE, atol=TOLERANCE))
    return worst, close


def _compare(
    name: str,
    run_step: Callable[[tuple[torch.Tensor, ...]], Sequence[torch.Tensor]],
    step: PolicyStep,
    recorded: RecordedSteps,
    hint: str,
) -> float:
    """Steps ``run_step`` (a loaded file) through the recording from zero memory; the largest difference.

    Raises:
        ExportError: a step's action or memory differs from the eager agent's beyond :data:`TOLERANCE`.
    """
    memory = [torch.zeros_like(t) for t in step.layout.initial()]
    worst = 0.0
    for index in range(len(recorded)):
        try:
            outputs = list(run_step(_step_inputs(step, recorded, index, memory)))
        except Exception as exc:  # a file that cannot run is one more way to fail the check
            msg = f"the {name} file fails at recorded step {index} ({_root_cause(exc)}); not written.{hint}"
            raise ExportError(msg) from exc
        diff, close = _difference(outputs, [recorded.actions[index], *recorded.memory[index]])
        worst = max(worst, diff)
        if not close:
            msg = (
                f"the {name} step differs from the eager agent at recorded step {index} (max abs diff {diff:.3g}); "
                f"not written.{hint}"
            )
            raise ExportError(msg)
        memory = outputs[1:]
    return worst


@contextlib.contextmanager
def _quiet_exporters() -> Iterator[list[warnings.WarningMessage]]:
    """Silences the exporters' progress prints, logging and warnings, recording the warnings."""
    loggers = [
        logging.getLogger(name) for name in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            contextlib.redirect_stdout(io.StringIO()),
        ):
            warnings.simplefilter("always")
            yield caught
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


# A tensor read as a list or number usually steers the code (sizes, branches); a boolean is often a harmless
# shape comparison, so it is named only when nothing likelier is found.
_TRACED_VALUE_KINDS = ("list", "integer", "index", "number", "float", "boolean")


def _tracing_hint(caught: Sequence[warnings.WarningMessage], encoder: str) -> str:
    """A sentence naming where tracing saw a tensor turned into a Python value (the likely cause), if it did."""
    conversions = [
        w
        for w in caught
        if w.category is torch.jit.TracerWarning
        and str(w.message).startswith("Converting a tensor to a Python")
    ]
    for kind in _TRACED_VALUE_KINDS:
        for warning in conversions:
            if f"Python {kind}" in str(warning.message):
                return (
                    f" Traj encoder {encoder!r} turns tensors into Python values in its rollout step "
                    f"({Path(warning.filename).name}:{warning.lineno}), which a traced graph cannot follow; "
                    "export a run whose memory is ff, rnn, mamba or transformer."
                )
    return ""


# A full stop after a word (not after an abbreviation such as "e.g.") or a bracket, before a capital letter.
_SENTENCE_END = re.compile(r"(?:(?<=[a-z]{2})|(?<=\)))\. (?=[A-Z])")


# Packages whose frames are the exporters' machinery rather than the model's code.
_EXPORTER_PACKAGES = ("torch", "onnx", "onnxscript", "onnxruntime")


def _root_cause(exc: BaseException) -> str:
    """The first sentence of the innermost chained exception, with its type and where the model's code raised
    it (the innermost frame outside the exporters and the standard library)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    first = _SENTENCE_END.split((str(exc).strip().splitlines() or [""])[0])[0]
    return f"{type(exc).__name__}{_model_frame(exc)}: {first[:200]}"


def _model_frame(exc: BaseException) -> str:
    """`` at FILE:LINE in FUNCTION`` of the innermost frame of ``exc``'s traceback in the model's code, or ''."""
    paths = sysconfig.get_paths()
    installed = [
        Path(paths["purelib"]),
        Path(paths["platlib"]),
    ]  # may lie inside the standard library's folder
    exporters = [
        Path(module.__file__).parent
        for module in map(sys.modules.get, _EXPORTER_PACKAGES)
        if module is not None and module.__file__ is not None
    ]

    def in_model(filename: str) -> bool:
        path = Path(filename)
        if any(path.is_relative_to(folder) for folder in exporters):
            return False
        return not path.is_relative_to(paths["stdlib"]) or any(path.is_relative_to(p) for p in installed)

    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if in_model(frame.filename)]
    if not frames:
        return ""
    # Comprehensions and lambdas are named after the function around them.
    named = next(
        (frame.name for frame in reversed(frames) if not frame.name.startswith("<")), frames[-1].name
    )
    return f" at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {named}"


@contextlib.contextmanager
def _exportable_memory(agent: torch.nn.Module) -> Iterator[None]:
    """Opens :data:`EXPORTABLE_MEMORY` of every module of ``agent`` that has one."""
    with contextlib.ExitStack() as stack:
        for module in agent.modules():
            hook = getattr(module, EXPORTABLE_MEMORY, None)
            if callable(hook):
                stack.enter_context(hook())
        yield


def _write_checked(out: Path, write: Callable[[Path], float], root: Path) -> float:
    """Calls ``write(tmp)`` (writes the file, checks it, returns the largest difference) and keeps the file.

    Through :func:`~amago_core.io.atomic_write`: a file that fails its check never replaces ``out``, nothing is
    written through a symlink under ``root``, and the kept file gets the mode a plain ``open()`` would give it
    (the temp file is private until then).
    """
    worst: list[float] = []
    atomic_write(out, lambda tmp: worst.append(write(tmp)), root=root)
    return worst[0]


def _write_root(run_dir: Path, out: Path) -> Path:
    """The folder the export's writes must stay in: the run folder when ``out`` lies in it (the default
    ``RUN_DIR/export``, where a planted link must not steer a write elsewhere), else ``out``, the user's choice."""
    absolute = Path(os.path.abspath(out))
    return run_dir if absolute.is_relative_to(os.path.abspath(run_dir)) else out


def _with_env_options(loaded: LoadedRun, overrides: Sequence[str], registries: Registries) -> LoadedRun:
    """``loaded`` with ``-o env.OPTION=VALUE`` items applied to its env config (the one the files are checked on).

    Raises:
        PolicyLoadError: an item that does not parse, another env kind, or an env config the suite refuses.
    """
    from pydantic import ValidationError

    from amago_core.config.errors import describe_validation_error
    from amago_core.config.sources import ConfigSourceError, load_config
    from amago_core.plugins.errors import PluginError

    base = loaded.config.model_dump(mode="json")
    try:
        config = load_config(base=base, overrides=overrides, environ={}, registries=registries)
        changed = replace(loaded, config=config.resolved(registries))
        if changed.kind("env") == loaded.kind("env"):
            return changed
        problem = (
            f"the files are checked on the run's own env ({loaded.kind('env')}); only its options may change"
        )
    except ValidationError as exc:
        problem = "; ".join(describe_validation_error(exc))
    except (ConfigSourceError, PluginError) as exc:
        problem = str(exc)
    msg = f"cannot check the export on the env of -o {' -o '.join(overrides)}: {problem}"
    raise PolicyLoadError(msg)


def _write_torchscript(
    step: PolicyStep, signature: _Signature, recorded: RecordedSteps, out: Path, encoder: str, root: Path
) -> float:
    with _quiet_exporters() as caught, torch.no_grad():
        try:
            traced = torch.jit.trace(step, signature.example, check_trace=False)
        except Exception as exc:
            msg = (
                f"torch.jit.trace cannot follow the rollout step of traj encoder {encoder!r} ({_root_cause(exc)}); "
                "not written."
            )
            raise ExportError(msg) from exc
    hint = _tracing_hint(caught, encoder)

    def write(tmp: Path) -> float:
        with warnings.catch_warnings():
            # torch marks TorchScript deprecated in favour of torch.export; it is still the format asked for here.
            warnings.simplefilter("ignore", FutureWarning)
            torch.jit.save(traced, str(tmp))
            loaded = torch.jit.load(str(tmp), map_location="cpu")
        with torch.no_grad():
            return _compare("TorchScript", lambda args: loaded(*args), step, recorded, hint)

    return _write_checked(out, write, root)


def _write_onnx(
    step: PolicyStep, signature: _Signature, recorded: RecordedSteps, out: Path, encoder: str, root: Path
) -> float:
    if not onnx_available():
        msg = f"ONNX needs {', '.join(ONNX_MODULES)}: {EXPORT_EXTRA}"
        raise ExportError(msg)
    import onnxruntime

    def write(tmp: Path) -> float:
        with _quiet_exporters(), torch.no_grad():
            try:
                torch.onnx.export(
                    step,
                    signature.example,
                    str(tmp),
                    dynamo=True,
                    input_names=signature.input_names,
                    output_names=signature.output_names,
                    external_data=False,
                    verbose=False,
                )
            except Exception as exc:
                msg = (
                    f"torch's ONNX exporter cannot follow the rollout step of traj encoder {encoder!r} "
                    f"({_root_cause(exc)}); not written."
                )
                raise ExportError(msg) from exc
        session = onnxruntime.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
        wanted = {node.name for node in session.get_inputs()}

        def run_onnx(args: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
            feed = {
                name: value.numpy()
                for name, value in zip(signature.input_names, args, strict=True)
                if name in wanted  # the exporter drops inputs the step never reads
            }
            return [torch.from_numpy(np.asarray(value)) for value in session.run(None, feed)]

        return _compare("ONNX", run_onnx, step, recorded, "")

    return _write_checked(out, write, root)


WRITERS = {"torchscript": _write_torchscript, "onnx": _write_onnx}


def _manifest(
    loaded: LoadedRun, step: PolicyStep, signature: _Signature, results: list[ExportResult], checked_on: str
) -> dict[str, Any]:
    spaces = loaded.spaces
    with torch.no_grad():
        outputs = step(*signature.example)
    memory = step.layout.initial()
    return {
        "format": MANIFEST_FORMAT,
        "step": "(" + ", ".join(signature.input_names) + ") -> (" + ", ".join(signature.output_names) + ")",
        "n_envs": int(signature.example[len(step.obs_keys)].shape[0]),
        "inputs": [
            _tensor_spec(name, value)
            for name, value in zip(signature.input_names, signature.example, strict=True)
        ],
        "outputs": [
            _tensor_spec(name, value) for name, value in zip(signature.output_names, outputs, strict=True)
        ],
        "memory": [
            _tensor_spec(name, value, env_dim=dim)
            for name, value, dim in zip(step.layout.names, memory, step.layout.batch_dims, strict=True)
        ],
        "about": {
            "rl2": "previous reward, then previous action (one-hot for Discrete, 0/1 for MultiBinary, [-1, 1] for "
            "Box); zeros at an episode's first observation",
            "time_idx": "steps since the env's episode began; at 0 its memory restarts inside the step",
            "memory": "start from zeros of these shapes; feed each step's next_memory to the next step",
            "action": "the policy's most likely action: Discrete index from 0 (add the env space's start), "
            "MultiBinary 0/1, Box in [-1, 1] (rescale to the env space's low..high)",
        },
        "spaces": {
            "agent_obs_space": space_to_json(spaces.obs_space),
            "agent_action_space": space_to_json(spaces.action_space),
            "env_observation_space": space_to_json(spaces.env_observation_space),
            "env_action_space": space_to_json(spaces.env_action_space),
        },
        "run": describe(loaded),
        "checked_on": checked_on,
        "tolerance": TOLERANCE,
        "files": {
            result.format: {
                "file": result.path.name,
                "steps_checked": result.steps_checked,
                "max_abs_diff": result.max_abs_diff,
            }
            for result in results
            if result.path is not None
        },
    }


def export_policy(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    epoch: int | None = None,
    formats: Sequence[str] = FORMATS,
    n_envs: int = 1,
    check_steps: int = DEFAULT_CHECK_STEPS,
    registries: Registries | None = None,
    env_options: Sequence[str] = (),
) -> ExportReport:
    """Writes the run's policy step (see the module docstring) as TorchScript and/or ONNX, each file checked.

    Args:
        run_dir: the run folder.
        out_dir: where to write (default: ``RUN_DIR/export``).
        epoch: the weights of this epoch (None: the latest).
        formats: any of ``torchscript`` and ``onnx``.
        n_envs: envs the step takes at once (the files' fixed batch size).
        check_steps: steps of the recorded rollout each file is compared on.
        registries: where to find the run's components (default: the installed plugins).
        env_options: ``env.OPTION=VALUE`` items (``amago export -o``) for the env the files are checked on.

    Returns:
        What was written; a format that failed has its reason in ``error`` and leaves no file.

    Raises:
        amago_tools.policy.PolicyLoadError: the run's policy cannot be loaded, or ``env_options`` do not apply.
        amago_core.io.UnsafePathError: ``out_dir`` (by default ``RUN_DIR/export``) or a file to write there is a
            symlink in the run folder (checked before anything is written).
        ValueError: an unknown format, or ``n_envs`` / ``check_steps`` below 1.
    """
    unknown = [name for name in formats if name not in FORMATS]
    if unknown or not formats:
        msg = f"unknown export format(s) {unknown}; choose from {', '.join(FORMATS)}."
        raise ValueError(msg)
    if n_envs < 1 or check_steps < 1:
        msg = f"n_envs and check_steps must be at least 1; got {n_envs} and {check_steps}."
        raise ValueError(msg)
    registries = registries if registries is not None else installed_registries()
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "export"
    root = _write_root(Path(run_dir), out)
    for path in (out, out / MANIFEST_NAME, *(out / FILE_NAMES[name] for name in formats)):
        inside(root, path)  # before the slow part, and again at each write
    loaded = load_run(run_dir, epoch, device="cpu", registries=registries)
    checked = _with_env_options(loaded, env_options, registries) if env_options else loaded
    out.mkdir(parents=True, exist_ok=True)
    with _exportable_memory(loaded.agent):
        layout = MemoryLayout.of(loaded.agent, n_envs)
        step = PolicyStep(loaded.agent, list(loaded.spaces.obs_space.spaces), layout).eval()
        # Frozen weights: a file's outputs then never carry autograd history, whoever calls it and however.
        step.requires_grad_(False)
        recorded = record_steps(checked, layout, registries, n_envs=n_envs, steps=check_steps)
        signature = _Signature.of(step, recorded)
        checked_on = recorded.source + "".join(f" -o {item}" for item in env_options)
        encoder = loaded.kind("traj_encoder")
        results = []
        for name in dict.fromkeys(formats):
            path = out / FILE_NAMES[name]
            try:
                worst = WRITERS[name](step, signature, recorded, path, encoder, root)
            except ExportError as exc:
                results.append(ExportResult(name, None, error=str(exc)))
                continue
            results.append(ExportResult(name, path, steps_checked=len(recorded), max_abs_diff=worst))
        manifest = None
        if any(result.path is not None for result in results):
            manifest = out / MANIFEST_NAME
            atomic_write_json(manifest, _manifest(loaded, step, signature, results, checked_on), root=root)
    return ExportReport(out_dir=out, manifest=manifest, results=results, checked_on=checked_on)
