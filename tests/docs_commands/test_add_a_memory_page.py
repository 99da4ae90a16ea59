"""The memory that docs/tutorial/11-add-a-memory.md builds, file by file, passes amago's conformance check.

The page's python blocks that start with a path comment (``# src/...``, ``# tests/...``) are written to a
scratch plugin folder and imported from there, as a reader who copies them would; its toml block names the
entry point the spec must match. A copy with a broken reset must fail the same check, so the page's code is
what the check judges.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("torch")

from amago_core.testing.check import ComponentCheckError
from amago_core.testing.nets_checks import check_traj_encoder

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tutorial" / "11-add-a-memory.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
PACKAGE = "amago_plugin_my_mingru"


def _blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(PAGE.read_text(encoding="utf-8")) if lang == language]


def _plugin_files() -> dict[str, str]:
    """Relative path -> source of every python block that names its file on its first line."""
    files = {}
    for body in _blocks("python"):
        first = body.splitlines()[0]
        if first.startswith("# src/") or first.startswith("# tests/"):
            files[first.removeprefix("# ").strip()] = body
    return files


def _load_spec(root: Path, files: dict[str, str]):
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    (root / "src" / PACKAGE / "__init__.py").write_text("", encoding="utf-8")
    for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[name]
    sys.path.insert(0, str(root / "src"))
    try:
        specs = __import__(f"{PACKAGE}.specs", fromlist=["MY_MINGRU"])
        return specs.MY_MINGRU
    finally:
        sys.path.remove(str(root / "src"))


@pytest.fixture(autouse=True)
def _forget_the_scratch_plugin():
    yield
    for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[name]


def test_the_pages_memory_passes_the_check_its_test_runs(tmp_path, monkeypatch) -> None:
    files = _plugin_files()
    assert set(files) == {
        f"src/{PACKAGE}/specs.py",
        f"src/{PACKAGE}/encoder.py",
        "tests/test_my_mingru.py",
    }
    (toml,) = _blocks("toml")
    entry = tomllib.loads(toml)["project"]["entry-points"]["amago.traj_encoders"]
    assert entry == {"my_mingru": f"{PACKAGE}.specs:MY_MINGRU"}

    spec = _load_spec(tmp_path, files)
    assert spec.name == "my_mingru"
    assert spec.config.fields_missing_docs() == []
    monkeypatch.syspath_prepend(str(tmp_path / "src"))  # the factory is imported when the check builds it
    namespace: dict = {}
    exec(compile(files["tests/test_my_mingru.py"], "test_my_mingru.py", "exec"), namespace)
    namespace["test_keeps_the_trajectory_encoder_contract"]()


def test_a_copy_that_resets_every_row_fails_the_same_check(tmp_path, monkeypatch) -> None:
    files = _plugin_files()
    encoder = files[f"src/{PACKAGE}/encoder.py"]
    broken = encoder.replace(
        "return reset_rows(hidden_state, dones)", "return torch.zeros_like(hidden_state)"
    )
    assert broken != encoder
    files[f"src/{PACKAGE}/encoder.py"] = broken
    spec = _load_spec(tmp_path, files)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    with pytest.raises(ComponentCheckError, match="reset_hidden_state resets only the done rows"):
        check_traj_encoder(spec, {"d_hidden": 16})
