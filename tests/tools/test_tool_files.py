"""The built-in file and search tools: read ranges, binary refusal, write, edit uniqueness, ls,
glob, grep."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from tether.messages import ImageBlock, ToolResultBlock
from tether.tools.builtin.files import MAX_LINE_CHARS

Call = Callable[..., Awaitable[ToolResultBlock]]


async def test_read_line_ranges(call: Call, root: Path) -> None:
    (root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    r = await call("read", path="f.txt")
    assert r.text.splitlines()[0] == "     1\tline 1"
    assert len(r.text.splitlines()) == 10 and "showing" not in r.text
    r = await call("read", path="f.txt", offset=3, limit=2)
    lines = r.text.splitlines()
    assert lines[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "showing lines 3-4 of 10" in r.text and "offset=5" in r.text
    r = await call("read", path="f.txt", offset=9, limit=5)
    assert r.text.splitlines() == ["     9\tline 9", "    10\tline 10"]
    r = await call("read", path="f.txt", offset=50)
    assert "has 10 lines" in r.text and "past the end" in r.text
    r = await call("read", path="f.txt", offset=0)
    assert r.is_error and "offset" in r.text


async def test_read_edge_cases(call: Call, root: Path) -> None:
    (root / "empty.txt").write_text("")
    assert "empty file" in (await call("read", path="empty.txt")).text
    (root / "nolf.txt").write_bytes(b"a\r\nb\r\nc")
    assert (await call("read", path="nolf.txt")).text == "     1\ta\n     2\tb\n     3\tc"
    r = await call("read", path="nolf.txt", limit=1)
    assert "showing lines 1-1 of 3" in r.text
    (root / "long.txt").write_text("x" * (MAX_LINE_CHARS + 10))
    assert "line cut" in (await call("read", path="long.txt")).text
    (root / "bin.dat").write_bytes(b"\x89PNG\0\0\x01" * 100)
    r = await call("read", path="bin.dat")
    assert r.is_error and "binary" in r.text and "700 bytes" in r.text
    (root / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n\0")
    r = await call("read", path="pic.png")
    assert isinstance(r.content[1], ImageBlock) and r.content[1].media_type == "image/png"
    (root / "d").mkdir()
    assert "is a directory" in (await call("read", path="d")).text
    assert "does not exist" in (await call("read", path="missing.txt")).text
    os.mkfifo(root / "fifo")
    assert "not a regular file" in (await call("read", path="fifo")).text


async def test_write(call: Call, root: Path) -> None:
    r = await call("write", path="a/b/c.txt", content="hi\n")
    assert not r.is_error and r.text == "created a/b/c.txt (3 bytes)"
    assert (root / "a/b/c.txt").read_text() == "hi\n"
    os.chmod(root / "a/b/c.txt", 0o600)
    r = await call("write", path=str(root / "a/b/c.txt"), content="é")
    assert r.text == "overwrote a/b/c.txt (2 bytes)"
    assert (root / "a/b/c.txt").stat().st_mode & 0o777 == 0o600  # mode kept
    assert sorted(os.listdir(root / "a/b")) == ["c.txt"]  # no temp file left behind
    assert "is a directory" in (await call("write", path="a", content="x")).text
    assert "is a directory" in (await call("write", path=".", content="x")).text


async def test_edit_uniqueness(call: Call, root: Path) -> None:
    f = root / "code.py"
    f.write_bytes(b"x = 1\r\ny = 1\r\nz = 2\r\n")
    r = await call("edit", path="code.py", old_string="= 1", new_string="= 3")
    assert r.is_error and "occurs 2 times" in r.text and "replace_all" in r.text
    assert f.read_bytes() == b"x = 1\r\ny = 1\r\nz = 2\r\n"
    r = await call("edit", path="code.py", old_string="w = 1", new_string="w = 3")
    assert r.is_error and "not found" in r.text
    r = await call("edit", path="code.py", old_string="z = 2", new_string="z = 9")
    assert not r.is_error and "replaced 1 occurrence" in r.text
    assert f.read_bytes() == b"x = 1\r\ny = 1\r\nz = 9\r\n"  # line endings kept
    r = await call("edit", path="code.py", old_string="= 1", new_string="= 0", replace_all=True)
    assert "replaced 2 occurrences" in r.text
    assert f.read_bytes() == b"x = 0\r\ny = 0\r\nz = 9\r\n"
    assert (await call("edit", path="code.py", old_string="", new_string="a")).is_error
    assert (await call("edit", path="code.py", old_string="x", new_string="x")).is_error
    assert (await call("edit", path="nope.py", old_string="x", new_string="y")).is_error


async def test_ls_glob_grep(call: Call, root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "m.py").write_text("import os\nprint('hi')\n")
    (root / "src" / "a.py").write_text("def main():\n    pass\n")
    (root / "README.md").write_text("main docs\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("main = 1\n")
    (root / "blob.bin").write_bytes(b"main\0\0")
    assert (await call("ls")).text == ".git/\nREADME.md\nblob.bin\nsrc/"
    assert (await call("ls", path="src")).text == "a.py\npkg/"
    (root / "empty").mkdir()
    assert "empty directory" in (await call("ls", path="empty")).text

    r = await call("glob", pattern="**/*.py")
    assert r.text.splitlines() == ["src/a.py", "src/pkg/m.py"]
    assert (await call("glob", pattern="*.py", path="src")).text == "src/a.py"
    assert (await call("glob", pattern="src/*")).text == "src/a.py\nsrc/pkg/"
    assert "no matches" in (await call("glob", pattern="*.rs")).text
    assert ".git" not in (await call("glob", pattern="**/*")).text

    r = await call("grep", pattern=r"main")
    assert r.text.splitlines() == ["README.md:1: main docs", "src/a.py:1: def main():"]
    r = await call("grep", pattern=r"main|print", glob="*.py")
    assert r.text.splitlines() == ["src/a.py:1: def main():", "src/pkg/m.py:2: print('hi')"]
    r = await call("grep", pattern="import", path="src/pkg/m.py")
    assert r.text == "src/pkg/m.py:1: import os"
    assert "no matches" in (await call("grep", pattern="zzz")).text
    r = await call("grep", pattern="(unclosed")
    assert r.is_error and "invalid regex" in r.text


async def test_write_takes_a_name_of_the_longest_length_the_folder_takes(
    call: Call, root: Path
) -> None:
    """A 255-byte name (the file system's limit) is written: the temp file's name was the
    target's with a prefix and a suffix, too long for the folder (found by a new user)."""
    name = "L" * 255
    r = await call("write", path=name, content="x")
    assert not r.is_error, r.text
    assert (root / name).read_text() == "x"
    r = await call("edit", path=name, old_string="x", new_string="y")
    assert not r.is_error, r.text
    assert (root / name).read_text() == "y"
    assert [p.name for p in root.iterdir() if p.name.endswith(".tmp")] == []


async def test_a_write_the_file_system_refuses_is_one_sentence_naming_the_file(
    call: Call, root: Path
) -> None:
    """The error names the file asked for (not the temp file) and reads as the tool's answer,
    not as an `OSError:` line."""
    r = await call("write", path="M" * 256, content="x")
    assert r.is_error
    assert r.text.startswith("cannot write MMM") and "name too long" in r.text.lower()
    assert "OSError" not in r.text and ".tmp" not in r.text
