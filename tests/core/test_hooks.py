"""pluggy hooks: loading from the `amago` entry-point group, misspelt hooks, the JSONL backend."""

from __future__ import annotations

import json

import pytest

from amago_core.hooks import LogBackend, hook_manager
from amago_core.hooks.jsonl_logger import JsonlLogBackend
from amago_core.plugins import BrokenPluginError


def test_builtin_jsonl_backend_is_contributed(tmp_path, fresh_registries):
    backends = hook_manager().hook.amago_log_backends(run_dir=tmp_path, config={})
    jsonl = [b for b in backends if isinstance(b, JsonlLogBackend)]
    assert len(jsonl) == 1
    assert isinstance(jsonl[0], LogBackend)
    jsonl[0].log({"train/loss": 0.5, "val/return": float("nan")}, step=3)
    jsonl[0].close()
    record = json.loads((tmp_path / "metrics.jsonl").read_text().strip())
    assert record == {"step": 3, "train/loss": 0.5, "val/return": "nan"}


def test_a_plugin_callback_is_called(fake_distribution):
    fake_distribution(
        "amago-plugin-callback",
        entry_points={"amago": {"cb": "cb_pkg.hooks"}},
        modules={
            "cb_pkg/__init__.py": "",
            "cb_pkg/hooks.py": """
                from amago_core.hooks import hookimpl
                SEEN = []

                @hookimpl
                def amago_on_epoch_end(epoch, metrics):
                    SEEN.append((epoch, metrics["x"]))
            """,
        },
    )
    manager = hook_manager()
    manager.check()
    manager.hook.amago_on_epoch_end(experiment=None, epoch=4, metrics={"x": 1.5})
    import cb_pkg.hooks

    assert cb_pkg.hooks.SEEN == [(4, 1.5)]


def test_a_misspelt_hook_fails_clearly(fake_distribution):
    fake_distribution(
        "amago-plugin-typo",
        entry_points={"amago": {"typo": "typo_pkg.hooks"}},
        modules={
            "typo_pkg/__init__.py": "",
            "typo_pkg/hooks.py": """
                from amago_core.hooks import hookimpl

                @hookimpl
                def amago_on_epoch_ennd(epoch):
                    pass
            """,
        },
    )
    with pytest.raises(BrokenPluginError) as excinfo:
        hook_manager().check()
    message = str(excinfo.value)
    assert "unknown hook 'amago_on_epoch_ennd'" in message
    assert "Did you mean 'amago_on_epoch_end'?" in message
    assert "amago-plugin-typo" in message


def test_a_hook_module_that_fails_to_import_is_reported(fake_distribution):
    fake_distribution(
        "amago-plugin-badhook",
        entry_points={"amago": {"bad": "badhook_pkg.hooks"}},
        modules={"badhook_pkg/__init__.py": "", "badhook_pkg/hooks.py": "import not_here_at_all\n"},
    )
    with pytest.raises(BrokenPluginError, match="not_here_at_all"):
        hook_manager().check()
