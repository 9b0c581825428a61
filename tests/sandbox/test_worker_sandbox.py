"""Folder tools run in a worker process, and the worker runs inside the OS sandbox: a tool
file that writes outside the working folder is refused (nothing written), one that writes
inside it works — under each sandbox kind this machine has."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.agents import make_agent
from tether.sandbox.base import SandboxMechanism
from tether.sandbox.detect import available
from tether.testing import ScriptedProvider, call
from tether.tools.scan import scan_tool_folders

TOOL = '''
from pathlib import Path
from tether.tools import tool

@tool
def put(path: str, text: str) -> str:
    """Write text to a path (deliberately unguarded: only the sandbox stops it).

    Args:
        path: where.
        text: what.
    """
    Path(path).write_text(text)
    return "written"
'''


@pytest.mark.parametrize("kind", ["bwrap", "landlock"])
async def test_a_folder_tool_cannot_write_outside_the_project(
    tmp_path: Path, kind: SandboxMechanism
) -> None:
    sandbox = available(kind)
    if sandbox is None:
        pytest.skip(f"{kind} does not work on this machine")
    work, tools_dir, outside = tmp_path / "work", tmp_path / "tools", tmp_path / "outside"
    for d in (work, tools_dir, outside):
        d.mkdir()
    (tools_dir / "put.py").write_text(TOOL)
    folders = scan_tool_folders([tools_dir])
    target_out, target_in = outside / "escaped.txt", work / "inside.txt"
    target_tools = tools_dir / "planted.py"  # visible to the worker, read-only
    provider = ScriptedProvider(
        [
            call("put", path=str(target_out), text="x"),
            call("put", path=str(target_tools), text="x"),
            call("put", path=str(target_in), text="y"),
            "done",
        ]
    )
    agent = make_agent(provider, work, tools=folders.registry, sandbox=sandbox.kind)
    await agent.run("go")
    out_result, tools_result, in_result = (agent.history[i].tool_results[0] for i in (2, 4, 6))
    # outside the project: hidden by the sandbox's private /tmp or refused, never written
    assert out_result.is_error and "Error" in out_result.text and not target_out.exists()
    # the tool's own folder is mounted for the worker, read-only
    assert tools_result.is_error and not target_tools.exists()
    assert "Read-only file system" in tools_result.text or "Permission denied" in tools_result.text
    assert not in_result.is_error and target_in.read_text() == "y"


async def test_a_project_file_cannot_shadow_a_module_in_the_worker(tmp_path: Path) -> None:
    """The worker's cwd is the project; `python -m` would put it first on sys.path, so a
    cloned repo's `json.py` would run inside every folder-tool call (even in safe mode,
    without a sandbox). The worker starts with `-P`: the project's files are not modules."""
    work, tools_dir = tmp_path / "work", tmp_path / "tools"
    work.mkdir()
    tools_dir.mkdir()
    pwned = tmp_path / "PWNED"
    (work / "json.py").write_text(f"open({str(pwned)!r}, 'w').write('x')\nraise SystemExit(3)\n")
    (tools_dir / "count.py").write_text(
        "from tether.tools import tool\n\n@tool(safe=True)\ndef count() -> str:\n"
        '    """Count."""\n    return "3"\n'
    )
    provider = ScriptedProvider([call("count"), "done"])
    agent = make_agent(
        provider, tools=scan_tool_folders([tools_dir]).registry, root=work, sandbox="none"
    )
    await agent.run("go")
    result = agent.history[2].tool_results[0]
    assert not result.is_error and result.text == "3"
    assert not pwned.exists()
