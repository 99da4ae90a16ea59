"""An agent's rollout memory as a flat list of named tensors: the explicit state of an exported step function.

Trajectory encoders keep their rollout memory in whatever shape suits them: None (memoryless), a tensor (GRU),
a tuple (an LSTM's ``(h, c)``) or a dataclass of tensors (Mamba's conv and SSM states, the Transformer's KV
cache). :class:`MemoryLayout` flattens any nesting of those into tensors with stable names, and builds the
memory back from them, so an exported graph can take and return it as plain inputs and outputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

_PLAIN_VALUES = (bool, int, float, str, type(None))
"""Values a memory may hold besides tensors: settings, kept as they are (not part of the exported state)."""


class MemoryLayoutError(TypeError):
    """The agent's memory holds something other than tensors in tuples, lists, dicts or dataclasses."""


def _leaves(memory: Any, name: str) -> list[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` of every tensor in ``memory``, depth first, in a fixed order."""
    if torch.is_tensor(memory):
        return [(name, memory)]
    if isinstance(memory, tuple | list):
        return [leaf for index, item in enumerate(memory) for leaf in _leaves(item, f"{name}.{index}")]
    if isinstance(memory, dict):
        return [leaf for key, item in memory.items() for leaf in _leaves(item, f"{name}.{key}")]
    if dataclasses.is_dataclass(memory) and not isinstance(memory, type):
        return [
            leaf
            for field in dataclasses.fields(memory)
            for leaf in _leaves(getattr(memory, field.name), f"{name}.{field.name}")
        ]
    if isinstance(memory, _PLAIN_VALUES):
        return []
    msg = (
        f"the agent's rollout memory holds a {type(memory).__name__} at {name!r}; an exported step needs tensors "
        "in tuples, lists, dicts or dataclasses."
    )
    raise MemoryLayoutError(msg)


def _rebuild(template: Any, tensors: Sequence[torch.Tensor], start: int) -> tuple[Any, int]:
    """``template`` with its tensors replaced by ``tensors[start:]`` in :func:`_leaves` order; returns the
    memory and the index of the first tensor not used."""
    if torch.is_tensor(template):
        return tensors[start], start + 1
    if isinstance(template, tuple | list):
        items = []
        for item in template:
            rebuilt, start = _rebuild(item, tensors, start)
            items.append(rebuilt)
        if isinstance(template, tuple) and hasattr(template, "_fields"):  # a NamedTuple
            return type(template)(*items), start
        return type(template)(items), start
    if isinstance(template, dict):
        rebuilt_dict = {}
        for key, item in template.items():
            rebuilt_dict[key], start = _rebuild(item, tensors, start)
        return rebuilt_dict, start
    if dataclasses.is_dataclass(template) and not isinstance(template, type):
        changes = {}
        for field in dataclasses.fields(template):
            value = getattr(template, field.name)
            rebuilt, after = _rebuild(value, tensors, start)
            if after != start:
                changes[field.name] = rebuilt
            start = after
        return dataclasses.replace(template, **changes), start
    return template, start


def _batch_dim(one: torch.Tensor, more: torch.Tensor) -> int | None:
    """The dim that grows with the number of envs (None: the tensor is shared by every env)."""
    if one.dim() != more.dim():
        msg = f"a memory tensor changes its number of dims with the number of envs ({one.dim()} vs {more.dim()})."
        raise MemoryLayoutError(msg)
    for dim, (a, b) in enumerate(zip(one.shape, more.shape, strict=True)):
        if a != b:
            return dim
    return None


@dataclass(frozen=True)
class MemoryLayout:
    """How the memory of ``n_envs`` envs maps to named tensors.

    Attributes:
        template: the memory of ``n_envs`` fresh episodes (its structure and its non-tensor settings).
        names: one name per tensor (``memory``, ``memory.0``, ``memory.conv``...).
        batch_dims: each tensor's env dimension (None for a tensor shared by every env).
    """

    template: Any
    names: tuple[str, ...]
    batch_dims: tuple[int | None, ...]

    @classmethod
    def of(cls, agent: Any, n_envs: int) -> MemoryLayout:
        """Reads the layout from ``agent.init_hidden_state`` for ``n_envs`` and ``n_envs + 1`` envs (on the CPU).

        Raises:
            MemoryLayoutError: the memory holds something that is not a tensor or a container of them.
        """
        template = agent.init_hidden_state(n_envs, "cpu")
        leaves = _leaves(template, "memory")
        bigger = _leaves(agent.init_hidden_state(n_envs + 1, "cpu"), "memory")
        if [name for name, _ in leaves] != [name for name, _ in bigger]:
            msg = "the agent's rollout memory changes its structure with the number of envs."
            raise MemoryLayoutError(msg)
        dims = tuple(_batch_dim(a, b) for (_, a), (_, b) in zip(leaves, bigger, strict=True))
        return cls(template=template, names=tuple(name for name, _ in leaves), batch_dims=dims)

    def flatten(self, memory: Any) -> list[torch.Tensor]:
        """The tensors of ``memory`` (laid out like the template) in :attr:`names` order."""
        return [tensor for _, tensor in _leaves(memory, "memory")]

    def rebuild(self, tensors: Sequence[torch.Tensor]) -> Any:
        """The memory holding ``tensors`` (in :attr:`names` order)."""
        memory, used = _rebuild(self.template, tensors, 0)
        if used != len(tensors):
            msg = f"the memory has {used} tensors; got {len(tensors)}."
            raise ValueError(msg)
        return memory

    def initial(self) -> list[torch.Tensor]:
        """The tensors of the template: every env at the start of an episode."""
        return self.flatten(self.template)

    def restart_rows(
        self, tensors: Sequence[torch.Tensor], initial: Sequence[torch.Tensor], starts: torch.Tensor
    ) -> list[torch.Tensor]:
        """``tensors`` with the envs where ``starts`` (``(n_envs,)`` bool) is True set to ``initial``'s.

        Written with ``torch.where`` only, so a traced or exported graph keeps it as data flow. A tensor
        shared by every env is left as it is.
        """
        restarted = []
        for tensor, fresh, dim in zip(tensors, initial, self.batch_dims, strict=True):
            if dim is None:
                restarted.append(tensor)
                continue
            shape = [1] * tensor.dim()
            shape[dim] = -1
            restarted.append(torch.where(starts.reshape(shape), fresh.to(tensor.dtype), tensor))
        return restarted
