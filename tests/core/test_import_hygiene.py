"""The CLI, plugin and config modules, and every installed spec module, import no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from amago_core.cli.doctor import TORCH_FREE_CORE_MODULES, find_torch_importers
from amago_core.plugins import registries


def test_core_modules_leave_torch_out_of_sys_modules():
    code = (
        "import sys\n"
        f"for name in {list(TORCH_FREE_CORE_MODULES)!r} + ['amago', 'amago_core.config', 'amago_core.testing']:\n"
        "    __import__(name)\n"
        "from amago_core.plugins import registries\n"
        "for registry in registries():\n"
        "    registry.describe()\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_cli_help_and_listing_import_no_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from amago_core.cli.app import app\n"
        "runner = CliRunner()\n"
        "for args in (['--help'], ['list'], ['list', '--json'], ['plugins'], ['config', 'schema'],\n"
        "             ['show', 'traj-encoders', 'transformer'], ['config', 'show']):\n"
        "    result = runner.invoke(app, args)\n"
        "    assert result.exit_code == 0, (args, result.output)\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_every_installed_spec_module_is_torch_free():
    modules = sorted(
        {
            r.value.partition(":")[0]
            for registry in registries()
            for n in registry.names()
            for r in registry.records(n)
        }
    )
    assert modules, "no spec modules are installed"
    assert find_torch_importers(modules) == {}


@pytest.mark.slow
def test_the_hygiene_probe_does_catch_torch():
    assert find_torch_importers(["json", "torch.nn", "csv"]) == {"torch.nn": "imports torch"}
