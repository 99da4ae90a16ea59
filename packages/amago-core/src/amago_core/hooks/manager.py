"""Builds the pluggy plugin manager from the ``amago`` entry-point group, honouring the plugin switches."""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass
from typing import Any

import pluggy

from amago_core.hooks import specs
from amago_core.plugins.discovery import EntryRecord
from amago_core.plugins.errors import BrokenPluginError
from amago_core.suggest import did_you_mean


@dataclass
class HookPluginStatus:
    """One hook module: where it comes from and whether it loaded."""

    record: EntryRecord
    error: str | None = None


class HookManager:
    """A pluggy ``PluginManager`` plus a record of which hook modules loaded and which failed."""

    def __init__(self, records: list[EntryRecord]):
        self.pm = pluggy.PluginManager(specs.PROJECT_NAME)
        self.pm.add_hookspecs(specs.AmagoHookSpecs)
        self.statuses: list[HookPluginStatus] = []
        for record in records:
            if record.skip_reason:
                continue
            status = HookPluginStatus(record)
            self.statuses.append(status)
            try:
                module = record.load()
                self.pm.register(module, name=f"{record.distribution}:{record.name}")
            except pluggy.PluginValidationError as exc:
                status.error = f"hook plugin {record.name!r} from {record.origin}: {exc}"
            except Exception as exc:
                status.error = f"cannot import {record.value} ({type(exc).__name__}: {exc})"

    @property
    def hook(self):
        """pluggy's hook caller: ``manager.hook.amago_on_epoch_end(...)``."""
        return self.pm.hook

    def call_each(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Calls each implementation of ``hook`` on its own, in the order the plugins were installed.

        One that raises is left out with a one-line warning naming its plugin, so that a command stays usable
        when one plugin breaks while the CLI is being built.

        Returns:
            ``(plugin name, answer)`` of every implementation that returned.
        """
        answers = []
        for impl in reversed(getattr(self.pm.hook, hook).get_hookimpls()):  # pluggy calls the last one first
            try:
                answers.append((impl.plugin_name, impl.function(**{k: kwargs[k] for k in impl.argnames})))
            except Exception as exc:
                first = (str(exc).strip().splitlines() or [""])[0]
                warn_once(
                    f"amago: warning: plugin {impl.plugin_name} raised in {hook} ({type(exc).__name__}: {first}); "
                    "left out; update that plugin, or turn it off with AMAGO_BLOCK_PLUGINS=<distribution>\n"
                )
        return answers

    def check(self) -> None:
        """Raises when a hook module failed to load or implements a hook that does not exist.

        Raises:
            BrokenPluginError: names the plugin, the misspelt hook with a did-you-mean, or the import error.
        """
        problems = [f"{s.record.name!r} from {s.record.origin}: {s.error}" for s in self.statuses if s.error]
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            problems.append(self._pending_message(exc))
        if problems:
            raise BrokenPluginError("; ".join(problems))

    def _pending_message(self, exc: pluggy.PluginValidationError) -> str:
        known = [name for name in dir(specs.AmagoHookSpecs) if name.startswith("amago_")]
        match = re.search(r"unknown hook '([^']+)'", str(exc))
        hook_name = match.group(1) if match else "?"
        plugin = self.pm.get_name(exc.plugin) or repr(exc.plugin)
        return (
            f"hook plugin {plugin} implements unknown hook {hook_name!r}.{did_you_mean(hook_name, known)} "
            f"Known hooks: {', '.join(known)}."
        )


_WARNED: set[str] = set()


def warn_once(line: str) -> None:
    """Writes ``line`` to stderr once per process (the CLI builds `run` and `config show` from the same hooks)."""
    if line not in _WARNED:
        _WARNED.add(line)
        sys.stderr.write(line)


_default: HookManager | None = None
_lock = threading.Lock()


def hook_manager() -> HookManager:
    """The process-wide hook manager, built from the current registries' ``amago`` entries."""
    global _default
    with _lock:
        if _default is None:
            from amago_core.plugins.registry import registries

            _default = HookManager(registries().hook_records)
        return _default


def reset_hook_manager() -> None:
    """Forgets the hook manager (tests, or after the plugin switches change)."""
    global _default
    with _lock:
        _default = None
