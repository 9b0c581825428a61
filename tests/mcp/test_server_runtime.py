"""A stdio MCP server installed in a user folder starts inside the sandbox: a venv under a
temporary home (a folder the sandbox does not show as it is: its private /tmp replaces it),
run by its console script's path, found on its PATH, and through an `npx`-style launcher from a
project's `node_modules`. Its whole runtime (venv root, `pyvenv.cfg`, `lib/`, the interpreter,
the npm package folder) is bound back read-only. A server that dies at start is reported with
its stderr's last lines and the log's path, not only "Connection closed"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit.mcp import DEMO
from tether.mcp import McpTools
from tether.messages import TextBlock
from tether.sandbox.detect import detect_sandbox
from tether.settings.model import McpServerSettings
from tether.tools.context import ToolOutput

pytestmark = pytest.mark.timeout(180)
SANDBOX = detect_sandbox()
needs_sandbox = pytest.mark.skipif(SANDBOX is None, reason="no OS sandbox on this machine")


def text(out: ToolOutput) -> str:
    assert not isinstance(out.content, str)
    return "".join(p.text for p in out.content if isinstance(p, TextBlock))


def user_venv(home: Path, *, with_server: bool = True) -> Path:
    """A venv in the user's folder holding the demo server (built with the SDK) as an installed
    module with a console script, `bin/demo-mcp`; the SDK comes from this run's environment
    through a `.pth` file in the venv's own `site-packages` (so the venv's `lib/` and
    `pyvenv.cfg` must be visible for it to import)."""
    venv = home / "venvs" / "demo"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "sdk.pth").write_text("\n".join(deps) + "\n")
    if with_server:
        shutil.copy(DEMO, site / "demo_mcp_server.py")
    script = venv / "bin" / "demo-mcp"
    script.write_text(
        f"#!{venv}/bin/python\nimport runpy\n"
        "runpy.run_module('demo_mcp_server', run_name='__main__')\n"
    )
    script.chmod(0o755)
    return venv


async def _add(settings: McpServerSettings, root: Path) -> tuple[str, list[tuple[str, str]]]:
    warnings: list[tuple[str, str]] = []
    mcp = McpTools(
        {"demo": settings},
        root=root,
        sandbox=SANDBOX,
        session_dir=root.parent / "session",
        on_warning=lambda k, m: warnings.append((k, m)),
    )
    try:
        tools = await mcp.start()
        out = text(await mcp.call("demo", "add", {"a": 2, "b": 3})) if tools else ""
    finally:
        await mcp.aclose()
    return out, warnings


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "work"
    r.mkdir()
    return r


def test_the_runtime_is_found_from_the_command(tmp_path: Path) -> None:
    from tether.mcp.runtime import server_runtime

    venv = user_venv(tmp_path / "home")
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    found = server_runtime(["demo-mcp"], env, tmp_path)
    assert venv.resolve() in found, found
    assert server_runtime(["/usr/bin/true"], env, tmp_path) == ()  # visible already


@needs_sandbox
async def test_a_server_in_a_user_venv_starts_by_its_path(root: Path, tmp_path: Path) -> None:
    venv = user_venv(tmp_path / "home")
    out, warnings = await _add(
        McpServerSettings.model_validate({"command": str(venv / "bin" / "demo-mcp")}), root
    )
    assert out == "5", warnings


@needs_sandbox
async def test_a_server_in_a_user_venv_is_found_on_its_path(root: Path, tmp_path: Path) -> None:
    venv = user_venv(tmp_path / "home")
    path = f"{venv}/bin:{os.environ.get('PATH', '/usr/bin:/bin')}"
    settings = McpServerSettings.model_validate({"command": "demo-mcp", "env": {"PATH": path}})
    out, warnings = await _add(settings, root)
    assert out == "5", warnings


@needs_sandbox
async def test_a_server_that_dies_at_start_says_why(root: Path, tmp_path: Path) -> None:
    venv = user_venv(tmp_path / "home", with_server=False)
    out, warnings = await _add(
        McpServerSettings.model_validate({"command": str(venv / "bin" / "demo-mcp")}), root
    )
    assert out == "" and len(warnings) == 1
    kind, message = warnings[0]
    assert kind == "mcp_server_failed"
    assert "No module named demo_mcp_server" in message, message
    log = root.parent / "session" / "mcp-warnings" / "demo.log"
    assert str(log) in message and "demo_mcp_server" in log.read_text()


def _node_project(where: Path, venv: Path) -> Path:
    """A project whose `node_modules` holds `demo-mcp`, a Node package whose bin starts the
    venv's server (the way an npm-published wrapper starts its server)."""
    pkg = where / "node_modules" / "demo-mcp"
    pkg.mkdir(parents=True)
    (where / "package.json").write_text('{"name": "proj", "version": "1.0.0"}\n')
    (pkg / "package.json").write_text(
        '{"name": "demo-mcp", "version": "1.0.0", "bin": {"demo-mcp": "cli.js"}}\n'
    )
    (pkg / "server.json").write_text(f'{{"command": "{venv}/bin/demo-mcp"}}\n')
    (pkg / "cli.js").write_text(
        "#!/usr/bin/env node\n"
        "const { spawn } = require('child_process');\n"
        "const cfg = require('./server.json');\n"
        "const child = spawn(cfg.command, [], { stdio: 'inherit' });\n"
        "child.on('exit', (code) => process.exit(code ?? 1));\n"
    )
    (pkg / "cli.js").chmod(0o755)
    (where / "node_modules" / ".bin").mkdir()
    (where / "node_modules" / ".bin" / "demo-mcp").symlink_to("../demo-mcp/cli.js")
    return where


needs_npx = pytest.mark.skipif(
    shutil.which("npx") is None or shutil.which("node") is None, reason="no npx/node here"
)


@needs_sandbox
@needs_npx
async def test_a_node_package_bin_starts_from_node_modules(root: Path, tmp_path: Path) -> None:
    venv = user_venv(tmp_path / "home")
    project = _node_project(tmp_path / "home" / "proj", venv)
    bin_path = project / "node_modules" / ".bin" / "demo-mcp"
    (project / "node_modules" / "demo-mcp" / "server.json").write_text(
        f'{{"command": "{venv}/bin/demo-mcp"}}\n'
    )
    settings = McpServerSettings.model_validate({"command": str(bin_path)})
    # the server the package starts lives in the venv: the settings name it for the sandbox
    settings = settings.model_copy(update={"args": [str(venv / "bin" / "demo-mcp")]})
    out, warnings = await _add(settings, root)
    assert out == "5", warnings


@needs_sandbox
@needs_npx
async def test_an_npx_launcher_starts_a_local_package(root: Path, tmp_path: Path) -> None:
    venv = user_venv(tmp_path / "home")
    project = _node_project(tmp_path / "home" / "proj", venv)
    settings = McpServerSettings.model_validate(
        {
            "command": "npx",
            "args": ["--offline", "--no-install", "demo-mcp", str(venv / "bin" / "demo-mcp")],
            "cwd": str(project),
        }
    )
    out, warnings = await _add(settings, root)
    assert out == "5", warnings
