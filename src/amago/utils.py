"""AMAGO's ``amago.utils``: the relative-timestep AdamW, and pointers for the small helpers amago does differently."""

from __future__ import annotations

from amago._compat import shim_exports

_INTERNAL = "an internal helper of AMAGO's training loop; amago's loop does this itself"

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {"AdamWRel": "amago_core.experiment.optimizers:AdamWRel"},
    no_counterpart={
        "AmagoWarning": "amago warns with Python's own categories (UserWarning and its own ShortMemoryWarning...)",
        "amago_warning": "amago warns with warnings.warn and one-line messages",
        "stack_list_array_dicts": _INTERNAL,
        "split_dict": _INTERNAL,
        "split_batch": _INTERNAL,
        "avg_over_accelerate": "amago_core.experiment.processes.average_over_processes averages metrics over processes",
        "sum_over_accelerate": _INTERNAL,
        "masked_avg": "amago_agents.base.masked_mean",
        "get_constant_schedule_with_warmup": "the warmup is a setting: -o optim.lr_warmup_steps=N",
        "call_async_env": "env pools are amago_core.rollout.pools; call the env's method through your own wrapper",
        "count_params": "the run's summary line prints the trainable parameters (sum(p.numel() for p in ...))",
        "gin_as_wandb_config": "amago sends config.resolved.json to wandb as the run's config",
        "get_grad_norm": "grad norms are logged per module as train/... Grad Norm metrics",
        "retry_load_checkpoint": "checkpoints load through amago_tools.policy.load_policy or amago run --resume",
    },
)
