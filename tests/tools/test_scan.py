"""Tool folders: top-level files only, helpers in sub-folders, TOOLS lists, broken files
skipped and named, duplicate names refused naming both places, refresh re-imports."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tether.tools import builtin_tools
from tether.tools.scan import ToolConflictError, scan_tool_folders


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _touch_later(path: Path, text: str) -> None:
    """Rewrite `path` with a clearly newer mtime (coarse file-system clocks)."""
    path.write_text(text)
    t = time.time() + 5
    os.utime(path, (t, t))


def test_top_level_files_only_and_private_helpers(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _write(a / "lib" / "util.py", "WHO = 'a'\n")
    _write(b / "lib" / "util.py", "WHO = 'b'\n")
    _write(
        a / "lib" / "nested_tool.py",
        "from tether.tools import tool\n@tool\ndef hidden() -> str:\n    return ''\n",
    )
    _write(
        a / "one.py",
        "from tether.tools import tool\nfrom .lib.util import WHO\n"
        "@tool(safe=True)\ndef who_a() -> str:\n    '''Who.'''\n    return WHO\n",
    )
    _write(
        b / "two.py",
        "from tether.tools import tool, builtin_tools\nfrom tether.tools.builtin.files import read\n"
        "from .lib.util import WHO\n"
        "def who_b() -> str:\n    '''Who.'''\n    return WHO\n"
        "def plain(x: int) -> int:\n    '''Double.'''\n    return 2 * x\n"
        "TOOLS = [who_b, tool(plain, name='double')]\n",
    )
    _write(b / "_private.py", "raise RuntimeError('never imported')\n")
    _write(b / "notes.txt", "not python\n")
    scan = scan_tool_folders([a, b])
    assert scan.registry.names() == ("who_a", "who_b", "double")
    assert scan.problems == ()
    assert scan.registry["who_a"].fn() == "a" and scan.registry["who_b"].fn() == "b"
    assert scan.registry["who_a"].safe and not scan.registry["double"].safe
    assert scan.registry["who_a"].source == (a / "one.py").resolve()
    assert scan.registry["double"].parameters["required"] == ["x"]


def test_a_broken_file_is_reported_and_skipped(tmp_path: Path) -> None:
    _write(
        tmp_path / "good.py",
        "from tether.tools import tool\n@tool\ndef good() -> str:\n    return 'ok'\n",
    )
    _write(tmp_path / "syntax.py", "def broken(:\n")
    _write(tmp_path / "boom.py", "raise RuntimeError('bad import')\n")
    _write(
        tmp_path / "badsig.py",
        "from tether.tools import tool\n@tool\ndef f(*a) -> str:\n    return ''\n",
    )
    scan = scan_tool_folders([tmp_path])
    assert scan.registry.names() == ("good",)
    by_file = {p.file.name: p.message for p in scan.problems}
    assert set(by_file) == {"syntax.py", "boom.py", "badsig.py"}
    assert by_file["syntax.py"].startswith("SyntaxError")
    assert by_file["boom.py"] == "RuntimeError: bad import"
    assert "*args" in by_file["badsig.py"]
    assert str(scan.problems[0]) == f"{tmp_path.resolve() / 'badsig.py'}: {by_file['badsig.py']}"


def test_duplicate_names_name_both_places(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    src = "from tether.tools import tool\n@tool\ndef same() -> str:\n    return ''\n"
    _write(a / "x.py", src)
    _write(b / "y.py", src)
    with pytest.raises(ToolConflictError) as err:
        scan_tool_folders([a, b])
    assert str((a / "x.py").resolve()) in str(err.value)
    assert str((b / "y.py").resolve()) in str(err.value)
    _write(
        tmp_path / "c" / "r.py",
        "from tether.tools import tool\n@tool\ndef read() -> str:\n    return ''\n",
    )
    with pytest.raises(ToolConflictError, match=r"'read': defined in built-in and in .*r\.py"):
        scan_tool_folders([tmp_path / "c"], base=builtin_tools())
    with pytest.raises(NotADirectoryError):
        scan_tool_folders([tmp_path / "missing"])


def test_refresh_reimports_changed_files_and_helpers(tmp_path: Path) -> None:
    _write(tmp_path / "lib" / "val.py", "VALUE = 1\n")
    tool_src = (
        "from tether.tools import tool\nfrom .lib.val import VALUE\n"
        "@tool\ndef value() -> int:\n    return VALUE\n"
    )
    _write(tmp_path / "v.py", tool_src)
    scan = scan_tool_folders([tmp_path], base=builtin_tools())
    reg = scan.registry
    assert reg["value"].fn() == 1 and "read" in reg
    assert scan.refresh() == ()  # nothing changed
    _touch_later(tmp_path / "lib" / "val.py", "VALUE = 2\n")
    assert scan.refresh() == (tmp_path.resolve(),)
    assert reg["value"].fn() == 2  # the helper was re-imported too; same registry object
    _write(
        tmp_path / "w.py",
        "from tether.tools import tool\n@tool\ndef extra() -> str:\n    return 'e'\n",
    )
    scan.refresh()
    assert reg.names()[-2:] == ("value", "extra") and reg.names()[0] == "read"
    (tmp_path / "w.py").unlink()
    _touch_later(tmp_path / "v.py", tool_src.replace("def value", "def renamed"))
    scan.refresh()
    assert "extra" not in reg and "value" not in reg and reg["renamed"].fn() == 2
    # a conflict on refresh raises and leaves the registry as it was
    _write(
        tmp_path / "dup.py",
        "from tether.tools import tool\n@tool\ndef bash() -> str:\n    return ''\n",
    )
    before = reg.names()
    with pytest.raises(ToolConflictError, match=r"dup\.py"):
        scan.refresh()
    assert reg.names() == before
    # a broken edit is reported, the other files keep working
    (tmp_path / "dup.py").unlink()
    _touch_later(tmp_path / "v.py", "this is not python\n")
    scan.refresh()
    assert "renamed" not in reg and [p.file.name for p in scan.problems] == ["v.py"]
