"""Using a trained policy outside the experiment loop: ``load_policy`` for plain gymnasium loops.

``load_policy(run_dir)`` rebuilds a run folder's agent from its config and safetensors weights and returns a
:class:`StatefulPolicy` (``reset(n_envs)``, ``act(obs, reward, done)``) that keeps each env's memory.
Exporting the agent's step function as TorchScript and ONNX (``amago export RUN_DIR``,
``amago_tools.export.export_policy``) is built on these names. The run folder's files are amago-core's
(``amago_core.experiment.run_dir``); this package only reads them. Importing this package is cheap; its names load on
first use.
"""

from amago_core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "LoadedRun": "amago_tools.policy.loader",
        "MemoryLayout": "amago_tools.policy.memory",
        "PolicyLoadError": "amago_tools.policy.loader",
        "PolicySpaces": "amago_core.rollout.spaces",
        "StatefulPolicy": "amago_tools.policy.stateful",
        "load_policy": "amago_tools.policy.loader",
        "load_run": "amago_tools.policy.loader",
    },
)
