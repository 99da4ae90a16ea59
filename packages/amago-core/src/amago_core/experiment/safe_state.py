"""State dicts in formats that cannot run code when read: tensors in safetensors, everything else in JSON.

A run folder may come from anyone, so nothing amago reads back from one is unpickled. :func:`split_state` turns
a ``state_dict()`` (a tree of containers, numbers and tensors) into a JSON skeleton plus a flat ``{key: tensor}``
dict, and :func:`join_state` rebuilds it; anything else in the tree is refused when saving, never pickled.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from amago_core.experiment.run_dir import atomic_write, atomic_write_json
from amago_core.io import nests_deeper_than

_TENSOR, _NDARRAY, _TUPLE, _DICT, _FLOAT = "__tensor__", "__ndarray__", "__tuple__", "__dict__", "__float__"
MAX_STATE_DEPTH = 64
"""Deepest nesting of lists and tables a state's JSON file may have (amago's own reach about 10)."""


class UnsafeStateError(TypeError):
    """A state holds something that can only be saved by pickling it."""


class DamagedStateError(ValueError):
    """A saved state file is missing, cut short or not what amago wrote; the message names the file."""


def split_state(obj: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """``(skeleton, tensors)``: a JSON-safe skeleton of ``obj`` and the tensors it refers to by key.

    Raises:
        UnsafeStateError: ``obj`` holds a value that is neither a container, a number, a string nor an array.
    """
    tensors: dict[str, torch.Tensor] = {}

    def encode(value: Any, where: str) -> Any:
        if isinstance(value, torch.Tensor):
            key = str(len(tensors))
            # A copy of its own: safetensors refuses tensors that share memory, and state may alias parameters.
            tensors[key] = value.detach().cpu().contiguous().clone()
            return {_TENSOR: key}
        if isinstance(value, np.ndarray):
            key = str(len(tensors))
            tensors[key] = torch.from_numpy(np.ascontiguousarray(value).copy())
            return {_NDARRAY: key}
        if isinstance(value, np.generic):
            return encode(value.item(), where)
        if isinstance(value, bool | int | str) or value is None:
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {_FLOAT: repr(value)}  # JSON has no inf/nan
        if isinstance(value, tuple):
            return {_TUPLE: [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {_DICT: [[encode(k, where), encode(v, f"{where}.{k}")] for k, v in value.items()]}
        msg = (
            f"cannot save {where or 'the state'} ({type(value).__name__}) without pickling it; training states "
            "hold only numbers, strings, containers and tensors."
        )
        raise UnsafeStateError(msg)

    return encode(obj, ""), tensors


def join_state(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """The object :func:`split_state` was given, rebuilt from its skeleton and tensors.

    Raises:
        DamagedStateError: the skeleton names a tensor that is not there.
    """

    def decode(value: Any) -> Any:
        if isinstance(value, list):
            return [decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if _TENSOR in value or _NDARRAY in value:
            key = value.get(_TENSOR, value.get(_NDARRAY))
            if key not in tensors:
                msg = f"tensor {key!r} is missing"
                raise DamagedStateError(msg)
            return tensors[key] if _TENSOR in value else tensors[key].numpy()
        if _TUPLE in value:
            return tuple(decode(v) for v in value[_TUPLE])
        if _DICT in value:
            return {_hashable(decode(k)): decode(v) for k, v in value[_DICT]}
        if _FLOAT in value:
            return float(value[_FLOAT])
        return {k: decode(v) for k, v in value.items()}

    return decode(skeleton)


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list | tuple) else key


def read_state_json(file: Path) -> Any:
    """The JSON of a state file, its nesting checked without recursion (a planted file may nest anything).

    Raises:
        DamagedStateError: the file is missing, not JSON, or nests deeper than :data:`MAX_STATE_DEPTH` (the
            message names it).
    """
    too_deep = DamagedStateError(
        f"{file} nests lists or tables more than {MAX_STATE_DEPTH} levels deep; amago never writes such a state: "
        "the file is damaged or planted (move its folder away)"
    )
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except RecursionError:  # nested past Python's own JSON reader
        raise too_deep from None
    except (OSError, ValueError) as exc:
        msg = f"{file} cannot be read ({type(exc).__name__}: {exc})"
        raise DamagedStateError(msg) from exc
    if nests_deeper_than(data, MAX_STATE_DEPTH):
        raise too_deep
    return data


def save_state(obj: Any, folder: Path, name: str) -> None:
    """Writes ``obj`` as ``{name}.json`` (+ ``{name}.safetensors`` when it holds tensors), each atomically."""
    skeleton, tensors = split_state(obj)
    if tensors:
        atomic_write(Path(folder) / f"{name}.safetensors", lambda tmp: save_file(tensors, str(tmp)))
    atomic_write_json(Path(folder) / f"{name}.json", skeleton)


def load_state(folder: Path, name: str) -> Any:
    """Reads what :func:`save_state` wrote (JSON and safetensors only: nothing is unpickled).

    Raises:
        DamagedStateError: a file is missing, cut short or unreadable (the message names it).
    """
    skeleton_file = Path(folder) / f"{name}.json"
    tensor_file = Path(folder) / f"{name}.safetensors"
    skeleton = read_state_json(skeleton_file)
    try:
        tensors = load_file(str(tensor_file)) if tensor_file.exists() else {}
        return join_state(skeleton, tensors)
    except DamagedStateError as exc:
        msg = f"{skeleton_file} does not match {tensor_file.name}: {exc}"
        raise DamagedStateError(msg) from exc
    except (
        OSError,
        ValueError,
        RuntimeError,
        SafetensorError,
    ) as exc:  # a bad header, a skeleton amago did not write
        msg = f"{skeleton_file.parent / name}.* cannot be read ({type(exc).__name__}: {exc})"
        raise DamagedStateError(msg) from exc
