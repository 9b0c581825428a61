"""Language servers for real (`tether.lsp`): basedpyright and `ruff server`, installed by the
test environment (the `dev` extra), started inside the OS sandbox on the first touch of a file.
An edit that introduces an undefined name or a type error has the diagnostic in its result;
a server killed mid-session costs one warning and the next edit works; no server process
outlives the agent; `read` starts a file's server in the background; the `lsp` tool's
definition, hover, references and symbols on a real file."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from kit.calls import make_call
from kit.sandbox import sandbox_or_skip
from tether.lsp.config import find_command
from tether.lsp.manager import LspManager, lsp_manager
from tether.lsp.report import block_count
from tether.lsp.tool import lsp_tool
from tether.messages import TextBlock, ToolResultBlock
from tether.sandbox.detect import detect_sandbox
from tether.settings.model import LspSettings
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env

pytestmark = pytest.mark.slow  # each starts a real language server (seconds on a busy machine)

PY = "def greet(name: str) -> str:\n    return 'hi ' + name\n\n\nprint(greet('you'))\n"
WAIT = "90s"
"""The diagnostics wait: a cold basedpyright takes seconds on a loaded 2-core machine."""


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from the process table (/proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def servers_running() -> list[str]:
    """The command lines of our descendant processes that are language servers."""
    found = [cmdline(p) for p in descendants(os.getpid())]
    return [c for c in found if "langserver" in c or "ruff server" in c]


class Setup:
    def __init__(
        self, root: Path, settings: dict[str, Any], session_dir: Path | None = None
    ) -> None:
        self.root = root
        self.warnings: list[tuple[str, str]] = []
        kind = sandbox_or_skip()
        sandbox = detect_sandbox(kind)
        manager = lsp_manager(
            LspSettings.model_validate({"timeout": WAIT, "startup_timeout": WAIT, **settings}),
            root=root,
            env=scrubbed_env(),
            sandbox=sandbox,
            session_dir=session_dir,
            on_warning=lambda k, m: self.warnings.append((k, m)),
        )
        assert isinstance(manager, LspManager)
        self.manager = manager
        self.ctx = ToolContext(
            root=root, env=scrubbed_env(), sandbox=sandbox, lsp=manager
        )
        self.registry = ToolRegistry([*builtin_tools(), lsp_tool])

    async def call(self, name: str, **arguments: Any) -> ToolResultBlock:
        return await run_tool_call(self.registry, make_call(name, **arguments), self.ctx)


@pytest.fixture
async def py(tmp_path: Path) -> AsyncIterator[Setup]:
    if find_command(["basedpyright-langserver"], os.environ.get("PATH")) is None:
        pytest.skip("basedpyright is not installed (the dev extra has it)")
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "a.py").write_text(PY)
    setup = Setup(root, {"servers": {"python": {"command": ["basedpyright-langserver", "--stdio"]}}})
    try:
        yield setup
    finally:
        await setup.manager.aclose()


async def test_an_edit_that_adds_an_undefined_name_and_a_type_error_gets_them_in_its_result(
    py: Setup,
) -> None:
    r = await py.call(
        "edit", path="a.py", old_string="print(greet('you'))", new_string="print(greet(3), nope)"
    )
    assert not r.is_error
    assert cast(TextBlock, r.content[0]).text == "edited a.py: replaced 1 occurrence"
    block = cast(TextBlock, r.content[1]).text
    assert block.startswith('<diagnostics file="a.py" server="python"')
    assert '"nope" is not defined [reportUndefinedVariable] (basedpyright) (new)' in block
    assert "5:13 error:" in block  # line and character column of `nope`
    assert "[reportArgumentType]" in block and "5:13" in block
    assert block_count(block) == (2, 2)  # the file had no error before: both are new
    # fixing it: the block says none are left
    r = await py.call("edit", path="a.py", old_string="greet(3), nope", new_string="greet('x')")
    assert block_count(r.text) == (0, 0)
    # `write` too; a warning-level finding is below the default severity
    r = await py.call("write", path="b.py", content="import os\nx: int = 'no'\n")
    assert block_count(r.text) == (1, 1) and "[reportAssignmentType]" in r.text
    assert py.warnings == []
    # a file no server serves: the plain result
    r = await py.call("write", path="notes.txt", content="nope(")
    assert r.text == "created notes.txt (5 bytes)"


async def test_reading_a_file_warms_its_server_up_in_the_background(py: Setup) -> None:
    r = await py.call("read", path="a.py")
    assert r.text.splitlines()[0] == "     1\tdef greet(name: str) -> str:"  # at once
    uri = (py.root / "a.py").as_uri()
    for _ in range(600):
        servers = list(py.manager.servers.values())
        if servers and servers[0].current(uri) is not None:
            break
        await asyncio.sleep(0.1)
    (server,) = py.manager.servers.values()
    assert server.current(uri) == []  # opened and checked before any edit
    r = await py.call("edit", path="a.py", old_string="'you'", new_string="2")
    assert block_count(r.text) == (1, 1)
    assert list(py.manager.servers.values()) == [server]  # the same server


async def test_the_lsp_tool_finds_the_definition_and_hover_of_a_real_file(py: Setup) -> None:
    r = await py.call("lsp", operation="definition", path="a.py", line=5, column=8)
    assert not r.is_error, r.text
    assert r.text == "a.py:1:5: def greet(name: str) -> str:"
    r = await py.call("lsp", operation="hover", path="a.py", line=5, column=8)
    assert "def greet(name: str) -> str" in r.text
    r = await py.call("lsp", operation="references", path="a.py", line=1, column=5)
    assert r.text.splitlines() == [
        "a.py:1:5: def greet(name: str) -> str:",
        "a.py:5:7: print(greet('you'))",
    ]
    r = await py.call("lsp", operation="document_symbols", path="a.py")
    assert r.text.splitlines()[0].startswith("function greet")
    r = await py.call("lsp", operation="workspace_symbols", query="greet")
    assert "function greet — a.py:1:5" in r.text
    (py.root / "c.py").write_text("x: int = 'a'\n")
    r = await py.call("lsp", operation="diagnostics", path="c.py")
    assert block_count(r.text) == (1, None) and "[reportAssignmentType]" in r.text
    r = await py.call("lsp", operation="hover", path="c.py", line=9, column=1)
    assert r.is_error and "c.py has 1 line; line 9 is past the end" in r.text  # not "2 lines" (trial5)
    r = await py.call("lsp", operation="hover", path="../outside.py", line=1, column=1)
    assert r.is_error and "outside" in r.text


async def test_a_server_killed_mid_session_is_one_warning_and_edits_go_on(py: Setup) -> None:
    r = await py.call("edit", path="a.py", old_string="'you'", new_string="1")
    assert block_count(r.text) == (1, 1)
    (server,) = py.manager.servers.values()
    assert server.pid is not None
    os.killpg(server.pid, signal.SIGKILL)
    for _ in range(100):
        if py.warnings:
            break
        await asyncio.sleep(0.05)
    assert len(py.warnings) == 1
    kind, message = py.warnings[0]
    assert kind == "lsp_server_exited"
    assert message.startswith("language server `python` (basedpyright-langserver) exited")
    # the next edit works, and the server starts again for it
    r = await py.call("edit", path="a.py", old_string="greet(1)", new_string="greet(nope2)")
    assert not r.is_error and r.text.startswith("edited a.py")
    assert '"nope2" is not defined' in r.text
    assert len(py.warnings) == 1
    await py.manager.aclose()
    assert servers_running() == []


async def test_ruff_server_serves_python_when_configured(tmp_path: Path) -> None:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    (root / "m.py").write_text("import os\n")
    setup = Setup(
        root,
        {"severity": "warning", "servers": {"python": {"command": ["ruff", "server"]}}},
    )
    try:
        r = await setup.call("edit", path="m.py", old_string="import os\n", new_string="print(nope)\n")
        assert "`nope`" in r.text and "[F821]" in r.text, r.text
        assert block_count(r.text) == (1, 1)  # F401 (unused `os`) went away, F821 is new
    finally:
        await setup.manager.aclose()
    assert servers_running() == []


async def test_a_server_that_cannot_start_is_one_warning_and_the_edit_works(tmp_path: Path) -> None:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    (root / "m.py").write_text("x = 1\n")
    broken = tmp_path / "bin" / "broken-lsp"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'no license' >&2\nexit 3\n")
    broken.chmod(0o755)
    setup = Setup(root, {"servers": {"python": {"command": [str(broken)]}}})
    try:
        for n in (1, 2):
            r = await setup.call("edit", path="m.py", old_string=f"x = {n}", new_string=f"x = {n + 1}")
            assert not r.is_error and r.text == "edited m.py: replaced 1 occurrence"
        # each touch tried it again (at most MAX_STARTS times), one line each
        assert [k for k, _ in setup.warnings] == ["lsp_server_failed", "lsp_server_failed"]
        assert setup.warnings[0][1].startswith(
            "language server `python` (broken-lsp) failed to start:"
        )
    finally:
        await setup.manager.aclose()


async def test_without_an_os_sandbox_no_server_starts(tmp_path: Path) -> None:
    warnings: list[tuple[str, str]] = []
    manager = lsp_manager(
        LspSettings.model_validate({"servers": {"python": {"command": ["ruff", "server"]}}}),
        root=tmp_path,
        env=scrubbed_env(),
        sandbox=None,
        on_warning=lambda k, m: warnings.append((k, m)),
    )
    assert manager is not None
    ctx = ToolContext(root=tmp_path, env=scrubbed_env(), lsp=manager)
    registry = ToolRegistry(builtin_tools())
    for _ in range(2):
        r = await run_tool_call(registry, make_call("write", path="a.py", content="nope\n"), ctx)
        assert r.text.startswith(("created a.py", "overwrote a.py"))
    assert warnings == [
        ("lsp_no_sandbox", "language servers not started: no OS sandbox to run them in")
    ]
    assert manager.servers == {} and servers_running() == []


async def test_a_server_reads_the_project_but_cannot_write_it(tmp_path: Path) -> None:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    (root / "m.py").write_text("x = 1\n")
    probe = tmp_path / "bin" / "probe-lsp"
    probe.parent.mkdir()
    probe.write_text(
        "#!/bin/sh\n"
        "cat m.py >&2\n"
        f"touch {root}/written 2>/dev/null && echo wrote >&2 || echo refused >&2\n"
        "exit 1\n"
    )
    probe.chmod(0o755)
    session = tmp_path / "session"
    setup = Setup(root, {"servers": {"python": {"command": [str(probe)]}}}, session_dir=session)
    try:
        r = await setup.call("edit", path="m.py", old_string="x = 1", new_string="x = 2")
        assert r.text == "edited m.py: replaced 1 occurrence"
    finally:
        await setup.manager.aclose()
    # its stderr, in the session's lsp-logs: it read the file (then the old text), not written
    assert (session / "lsp-logs" / "python.log").read_text() == "x = 1\nrefused\n"
    assert not (root / "written").exists()
