"""Runs one of AMAGO's example scripts and records what AMAGO's own classes received: a round-trip fixture.

Run with AMAGO v3.3.0's reference interpreter (``.venv-amago-ref``, made by
``../shared/baselines/amago-3.3.0/setup.sh``), never amago's: AMAGO is the measuring stick, run as a separate
program. The script runs unmodified, as ``python SCRIPT ARGS...`` would run it, with a profile hook that notes the
arguments every ``__init__`` (or function) of a configurable named in the run's ``ckpts/config.txt`` received
when it was called. A class's arguments are its own ``__init__``'s: ``TMazeExploration`` and the
``EpsilonGreedy.__init__`` it calls are recorded separately, so what gin gave a subclass and what reached its base
are both visible.

Writes into ``--out``: ``config.txt`` (the run's operative gin config, as AMAGO wrote it), ``received.json``
(``{"configurables": {name: [{parameter: value}, ...]}}``, one entry per distinct set of arguments, in call
order; a value JSON cannot hold is tagged: ``{"class": name}``, ``{"function": name}``, ``{"float": "inf"}``, or
``{"repr": type name}`` for objects such as spaces and tensors) and ``command.json`` (the script, its arguments and the AMAGO
version). Example, from the repository root::

    OMP_NUM_THREADS=1 WANDB_MODE=disabled .venv-amago-ref/bin/python bench/record_amago_run.py \\
        --out tests/compat/fixtures/amago_runs/tmaze_rnn \\
        ../shared/baselines/amago-3.3.0/examples/04_tmaze.py --horizon 10 --traj_encoder rnn ...

(the whole command of each fixture is its ``command.json``).

``--run_name``, ``--buffer_dir`` and ``--no_log`` are added (a temporary folder holds the run).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import math
import re
import runpy
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

_HEADER = re.compile(r"^# Parameters for ([\w./]+):\s*$", flags=re.M)


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it, or its ``repr`` (tagged) when JSON cannot."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if getattr(value, "shape", None) == () and hasattr(value, "item"):  # a numpy or torch scalar
        return _plain(value.item())
    if isinstance(value, type):
        return {"class": value.__name__}
    if callable(value) and hasattr(value, "__name__"):
        return {"function": value.__name__}
    return {"repr": type(value).__name__}


class Recorder:
    """A profile hook that keeps the arguments of the calls of ``names`` (``Agent``, ``binary_filter``...) whose
    code lies in ``folders`` (AMAGO's package and the script: gym's ``Discrete`` is not AMAGO's)."""

    def __init__(self, names: set[str], folders: tuple[str, ...], temporary: str) -> None:
        self.names = names
        self.folders = folders
        self.temporary = temporary
        self.received: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_flags & inspect.CO_OPTIMIZED:  # a function's call, not a class body
            return
        if not code.co_filename.startswith(self.folders):
            return
        owner, _, method = code.co_qualname.rpartition(".")
        if method == "__post_init__" and owner in self.names:
            # a dataclass (AMAGO's Experiment): the fields its generated __init__ received
            instance = frame.f_locals["self"]
            values = {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance) if f.init}
        elif (method == "__init__" and owner in self.names) or (not owner and method in self.names):
            count = code.co_argcount + code.co_kwonlyargcount
            values = {
                parameter: frame.f_locals[parameter]
                for parameter in code.co_varnames[:count]
                if parameter != "self" and parameter in frame.f_locals
            }
        else:
            return
        name = owner if owner else method
        plain = {key: self._plain(value) for key, value in values.items()}
        seen = self.received.setdefault(name, [])
        if plain not in seen:
            seen.append(plain)

    def _plain(self, value: Any) -> Any:
        if isinstance(value, str) and self.temporary in value:
            return value.replace(self.temporary, "<tmp>")
        return _plain(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for config.txt and received.json")
    parser.add_argument("script", type=Path, help="an AMAGO example script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    options = parser.parse_args()
    import gin

    import amago  # AMAGO's own package: the reference interpreter's

    script = options.script.resolve()
    with tempfile.TemporaryDirectory() as folder:
        run_args = [*options.args, "--run_name", "rec", "--buffer_dir", folder, "--no_log"]
        # AMAGO's configurables (gin's registry) and the script's own (its @gin.configurable definitions)
        names = _registered_names(gin) | _script_configurables(script)
        package = str(Path(amago.__file__).resolve().parent)
        recorder = Recorder(names, (package, str(script)), folder)
        sys.argv = [str(script), *run_args]
        sys.setprofile(recorder)
        try:
            runpy.run_path(str(script), run_name="__main__")
        finally:
            sys.setprofile(None)
        configs = sorted(Path(folder).rglob("ckpts/config.txt"))
        if len(configs) != 1:
            print(
                f"expected one ckpts/config.txt under the run folder, found {len(configs)}", file=sys.stderr
            )
            return 1
        text = configs[0].read_text(encoding="utf-8")
    in_config = [header.rpartition(".")[2] for header in _HEADER.findall(text)]
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "config.txt").write_text(text, encoding="utf-8")
    received = {name: recorder.received.get(name, []) for name in in_config}
    (options.out / "received.json").write_text(
        json.dumps({"configurables": received}, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    command = {
        "amago_version": _amago_version(),
        "script": script.name,
        "args": options.args,
        "added_args": ["--run_name", "rec", "--buffer_dir", "<tmp>", "--no_log"],
    }
    (options.out / "command.json").write_text(json.dumps(command, indent=1) + "\n", encoding="utf-8")
    return 0


def _registered_names(gin: Any) -> set[str]:
    """The short names of every configurable gin has registered (AMAGO's, once ``amago`` is imported)."""
    import amago.agent
    import amago.envs.exploration
    import amago.experiment
    import amago.loading
    import amago.nets.actor_critic
    import amago.nets.policy_dists
    import amago.nets.traj_encoders
    import amago.nets.tstep_encoders  # noqa: F401

    registry = gin.config._REGISTRY  # gin has no public listing of its configurables
    return {selector.rpartition(".")[2] for selector, _ in registry.items()}


def _script_configurables(script: Path) -> set[str]:
    """The names the script decorates with ``@gin.configurable`` (its own classes and functions)."""
    names = re.findall(r"@gin\.configurable[^\n]*\n(?:@[^\n]*\n)*(?:class|def) (\w+)", script.read_text())
    return set(names)


def _amago_version() -> str:
    from importlib.metadata import version

    return version("amago")


if __name__ == "__main__":
    raise SystemExit(main())
