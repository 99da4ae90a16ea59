"""``Learner``: the agent as it is trained, with its optimiser and warmup schedule, and one gradient step.

:meth:`Learner.step` is handed ``Experiment.compute_loss``, so a subclass's loss is what the optimiser minimises.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, cast

import torch
from accelerate import Accelerator

from amago_core.data.batch import Batch
from amago_core.experiment import fast_torch
from amago_core.experiment.agent_api import LearningAgent, ReportsGradNorms

LossFunction = Callable[[Batch, bool], tuple[torch.Tensor, dict[str, Any]]]
"""``compute_loss(batch, log_step) -> (loss, metrics)``: ``Experiment.compute_loss``'s signature."""


class Learner:
    """The agent being trained: its module, the module as accelerate prepared it, the optimiser and the linear
    learning-rate warmup.

    Args:
        warmup_steps: optimiser steps over which the learning rate rises linearly to its value.
        compile: compile the prepared module's forward (``run.compile`` resolved): the loss's forward and its
            backward run compiled, and the first step compilation breaks is redone eagerly (see :meth:`step`).

    Attributes:
        agent: the agent as built (what checkpoints save and rollouts act with).
        prepared: the same module as accelerate prepared it (DDP-wrapped when several processes train); the
            forward of the loss goes through it.
        optimizer, lr_schedule: the optimiser and the warmup schedule, as accelerate prepared them.
        compile: whether the update runs compiled (False from the first step compilation broke).
    """

    def __init__(
        self,
        accelerator: Accelerator,
        agent: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        warmup_steps: int,
        compile: bool = False,
    ) -> None:
        warmup = max(warmup_steps, 1)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min((step + 1) / warmup, 1.0))
        self.accelerator = accelerator
        self.agent = agent
        self.prepared: torch.nn.Module
        self.optimizer: torch.optim.Optimizer
        self.lr_schedule: torch.optim.lr_scheduler.LRScheduler
        if (
            accelerator.num_processes > 1
            or accelerator.device.type != "cpu"
            or accelerator.mixed_precision == "fp16"
        ):
            self.prepared, self.optimizer, self.lr_schedule = accelerator.prepare(agent, optimizer, scheduler)
        else:
            # One CPU process (bf16 autocast comes from the caster the step is given): preparing the model would
            # only place it on the CPU it is on, after importing torch's distributed-tensor stack to ask whether it
            # holds DTensors (~0.6 s).
            self.prepared = agent
            self.optimizer, self.lr_schedule = accelerator.prepare(optimizer, scheduler)
        self.compile = compile
        if compile:
            # nn.Module.compile's own mechanism: the module (its train/eval mode, parameters, state_dict keys)
            # stays the same object, only its __call__ runs compiled, and dropping the attribute undoes it.
            try:
                self.prepared._compiled_call_impl = fast_torch.compile_function(self.prepared._call_impl)
            except Exception as error:  # torch.compile refused outright (an unsupported Python, say)
                self._run_eagerly()
                fast_torch.warn_eager("update", error)

    @classmethod
    def build(
        cls,
        accelerator: Accelerator,
        agent: torch.nn.Module,
        optimizer_for: Callable[[torch.nn.Module], torch.optim.Optimizer],
        warmup_steps: int,
        compile_setting: str,
    ) -> Learner:
        """The learner of a freshly built ``agent``: its optimiser (``optimizer_for``: ``Experiment.init_optimizer``,
        an override point), the warmup, and compilation as ``run.compile`` asks for on this device."""
        compile_on = fast_torch.compile_wanted(compile_setting, accelerator.device, "update")
        if not compile_on:
            fast_torch.skip_dynamo_import()  # nothing compiles: the optimiser need not import torch's compiler (~1.5 s)
        optimizer = optimizer_for(agent)
        return cls(accelerator, agent, optimizer, warmup_steps=warmup_steps, compile=compile_on)

    def _run_eagerly(self) -> None:
        self.compile = False
        self.prepared._compiled_call_impl = None

    def step(
        self,
        batch: Batch,
        log_step: bool,
        loss_weight: float,
        *,
        compute_loss: LossFunction,
        caster: Callable[[], AbstractContextManager[Any]],
        grad_clip: float,
    ) -> tuple[dict[str, Any], bool]:
        """One gradient step (or one accumulation micro-step), the loss scaled by ``loss_weight``.

        Args:
            batch: the batch, on this process's device.
            log_step: whether the loss reports its metrics (and the step adds the learning rate and grad norms).
            loss_weight: the batch's weight (length-grouped batches weigh by their share of the timesteps).
            compute_loss: the loss (``Experiment.compute_loss``, an override point).
            caster: the autocast context of the forward under mixed precision.
            grad_clip: the gradient norm clipped to.

        Returns:
            The metrics (``Loss`` always), and whether the optimiser really stepped (False on a micro-step).
        """
        accelerator = self.accelerator
        with accelerator.accumulate(self.prepared):
            self.optimizer.zero_grad()
            try:
                loss, metrics = self._loss_backward(batch, log_step, loss_weight, compute_loss, caster)
            except Exception as error:
                if not self.compile:
                    raise
                # Compilation broke (its forward or its lazily compiled backward): redo this step eagerly. A
                # failure comes before any gradient is written, and an error eager code raises too propagates.
                self._run_eagerly()
                self.optimizer.zero_grad()
                loss, metrics = self._loss_backward(batch, log_step, loss_weight, compute_loss, caster)
                fast_torch.warn_eager("update", error)
            stepped = accelerator.sync_gradients
            if stepped:
                accelerator.clip_grad_norm_(self.prepared.parameters(), grad_clip)
                if log_step:
                    metrics["Learning Rate"] = self.lr_schedule.get_last_lr()[0]
                    if isinstance(self.agent, ReportsGradNorms):
                        metrics.update(self.agent.grad_norms())
            self.optimizer.step()
            self.lr_schedule.step()
            if stepped:
                # The agent keeps a copy of its critics exactly one update old for the policy gradient; it
                # moves its targets after each real optimiser step (not after accumulation micro-steps).
                cast(LearningAgent, self.agent).soft_sync_targets()
        metrics["Loss"] = float(loss.detach())
        return metrics, stepped

    def _loss_backward(
        self,
        batch: Batch,
        log_step: bool,
        loss_weight: float,
        compute_loss: LossFunction,
        caster: Callable[[], AbstractContextManager[Any]],
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        with caster():  # mixed precision: the forward in bf16/fp16, the update in fp32
            loss, metrics = compute_loss(batch, log_step)
        self.accelerator.backward(loss * loss_weight if loss_weight != 1.0 else loss)
        return loss, metrics
