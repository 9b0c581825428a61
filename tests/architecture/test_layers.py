"""The layering rules of docs/architecture.md, checked on the source's imports (ast, no import side
effects): `messages` imports nothing of ours; `wire` and the pure compaction policy import
only `messages` (and their own package, and `errors`: the exception tree, a leaf like
`messages`); nothing below `agent/` imports `agent/` or `cli/`; `sandbox/` sits below `tools/`
(it imports neither `tools/` nor `agent/`), and the sandbox launcher imports only the standard
library and its own stdlib-only siblings; the turn room (`agent/turn/`) imports neither the
`Agent` nor the construction (`agent/assembly/`) at run time, and the loop is a skeleton."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kit.source import parse_file

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"

PURE_COMPACTION = (
    "pressure",
    "monitor",
    "windows",
    "rounds",
    "snapshot",
    "prompt",
    "tail",
    "restore",
    "prune",
    "idle",
    "reads",
)
"""The compaction policy modules (pure); `summarize` (the call) and `recall` (a tool) are edges."""

BELOW_AGENT = (
    "messages.py",
    "wire",
    "providers",
    "tools",
    "sandbox",
    "session",
    "compaction",
    "settings",
    "mcp",
    "lsp",
    "tracing",
    "checkpoint",
    "permissions",
    "prompt",
    "skills",
)


def tether_imports(path: Path) -> set[str]:
    """The `tether.*` modules a file imports (any nesting, TYPE_CHECKING blocks included)."""
    found: set[str] = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n == "tether" or n.startswith("tether.")}
    return found


def files(*parts: str) -> list[Path]:
    out: list[Path] = []
    for part in parts:
        p = SRC / part
        out += [p] if p.is_file() else sorted(p.rglob("*.py"))
    return out


def test_the_checker_sees_imports() -> None:
    assert "tether.messages" in tether_imports(SRC / "wire" / "view.py")


def test_messages_and_errors_import_nothing_of_ours() -> None:
    assert tether_imports(SRC / "messages.py") == set()
    assert tether_imports(SRC / "errors.py") == set()


def test_the_atomic_write_sits_on_the_bottom_floor() -> None:
    """`atomic` (the one atomic file write) imports nothing of ours, so the settings, the
    providers, the tools, the checkpoints and the hosts all write files through it."""
    assert tether_imports(SRC / "atomic.py") == set()


def test_the_host_git_hardening_sits_on_the_bottom_floor() -> None:
    """`hostgit` (every git process tether runs on the host) imports nothing of ours: the
    checkpoints, the worktrees and the prompt's git facts all run git through it."""
    assert tether_imports(SRC / "hostgit.py") == set()


def test_the_counted_nouns_sit_on_the_bottom_floor() -> None:
    """`plural` imports nothing of ours: the CLI, the TUI and the agent's notes all use it."""
    assert tether_imports(SRC / "plural.py") == set()


def test_the_token_estimate_sits_on_the_bottom_floor() -> None:
    """`tokens` (the estimate and `ModelLimits`) imports only `messages`, so the providers and
    the session store need not import compaction to count tokens or hold a model's limits."""
    assert tether_imports(SRC / "tokens.py") == {"tether.messages"}


@pytest.mark.parametrize(
    "path", files("providers", "session"), ids=lambda p: str(p.relative_to(SRC))
)
def test_providers_and_sessions_import_nothing_of_compaction(path: Path) -> None:
    bad = {m for m in tether_imports(path) if m.startswith("tether.compaction")}
    assert bad == set(), f"{path.relative_to(SRC)} imports {bad}"


@pytest.mark.parametrize("path", files("wire"), ids=lambda p: p.name)
def test_wire_imports_only_messages(path: Path) -> None:
    allowed = ("tether.messages", "tether.errors", "tether.wire")
    bad = {m for m in tether_imports(path) if not m.startswith(allowed)}
    assert bad == set(), f"{path.name} imports {bad}"


@pytest.mark.parametrize("name", PURE_COMPACTION)
def test_compaction_policy_imports_only_messages_and_wire(name: str) -> None:
    allowed = (
        "tether.messages",
        "tether.errors",
        "tether.wire",
        "tether.compaction",
        "tether.tokens",
    )
    bad = {
        m for m in tether_imports(SRC / "compaction" / f"{name}.py") if not m.startswith(allowed)
    }
    assert bad == set(), f"compaction/{name}.py imports {bad}"


@pytest.mark.parametrize("path", files(*BELOW_AGENT), ids=lambda p: str(p.relative_to(SRC)))
def test_nothing_below_agent_imports_agent_or_cli(path: Path) -> None:
    bad = {m for m in tether_imports(path) if m.startswith(("tether.agent", "tether.cli"))}
    assert bad == set(), f"{path.relative_to(SRC)} imports {bad}"


@pytest.mark.parametrize("path", files("prompt"), ids=lambda p: p.name)
def test_the_prompt_imports_only_messages(path: Path) -> None:
    """The system prompt's facts and rendering sit low: data in, text out (gathering reads the
    disk and runs git through `hostgit`, but imports nothing else of tether's besides the turn
    vocabulary)."""
    allowed = ("tether.messages", "tether.prompt", "tether.hostgit")
    bad = {m for m in tether_imports(path) if not m.startswith(allowed)}
    assert bad == set(), f"prompt/{path.name} imports {bad}"


@pytest.mark.parametrize("path", files("skills"), ids=lambda p: p.name)
def test_skills_import_only_prompt_and_tools(path: Path) -> None:
    allowed = ("tether.prompt", "tether.tools", "tether.skills")
    bad = {m for m in tether_imports(path) if not m.startswith(allowed)}
    assert bad == set(), f"skills/{path.name} imports {bad}"


@pytest.mark.parametrize("path", files("lsp"), ids=lambda p: p.name)
def test_the_language_servers_sit_beside_mcp(path: Path) -> None:
    """`lsp` is an edge like `mcp`: it uses the tools, the sandbox and the settings (and
    `mcp.runtime`, what a stdio server's command needs visible in the sandbox); the agent
    holds it, the tools reach it only through `ToolContext.lsp` (a protocol)."""
    allowed = (
        "tether.lsp",
        "tether.tools",
        "tether.sandbox",
        "tether.settings",
        "tether.messages",
        "tether.errors",
        "tether.plural",  # the bottom floor (docs/architecture.md)
        "tether.mcp.runtime",
    )
    bad = {m for m in tether_imports(path) if not m.startswith(allowed)}
    assert bad == set(), f"lsp/{path.name} imports {bad}"


def test_nothing_below_the_agent_imports_lsp() -> None:
    below = [p for p in files(*BELOW_AGENT) if "lsp" not in p.relative_to(SRC).parts]
    bad = {
        str(p.relative_to(SRC)) for p in below if any(m.startswith("tether.lsp") for m in tether_imports(p))
    }
    assert bad == set()


@pytest.mark.parametrize("path", files("sandbox"), ids=lambda p: p.name)
def test_the_sandbox_imports_neither_tools_nor_agent(path: Path) -> None:
    bad = {m for m in tether_imports(path) if m.startswith(("tether.tools", "tether.agent"))}
    assert bad == set(), f"sandbox/{path.name} imports {bad}"


def _run_time_imports(path: Path) -> set[str]:
    """The `tether.*` modules a file imports when it runs (imports inside functions included,
    `if TYPE_CHECKING:` blocks not), with `from M import N` also naming `M.N`."""
    tree = parse_file(path)
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("tether.")}


@pytest.mark.parametrize("package", ["tools", "sandbox"])
def test_no_import_cycle_inside_tools_or_sandbox(package: str) -> None:
    """Importing `a.b.c` runs `a` and `a.b` first, so a package `__init__` counts as a module."""
    modules: dict[str, Path] = {}
    for p in files(package):
        parts = p.relative_to(SRC.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    edges: dict[str, set[str]] = {}
    for name, p in modules.items():
        targets: set[str] = set()
        for m in _run_time_imports(p):
            pieces = m.split(".")
            targets |= {".".join(pieces[:i]) for i in range(2, len(pieces) + 1)}
        edges[name] = {t for t in targets if t in modules and t != name}

    def reaches(start: str, goal: str) -> bool:
        seen: set[str] = set()
        todo = [start]
        while todo:
            here = todo.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                todo += edges[here]
        return False

    cycles = sorted(f"{a} -> {b}" for a in edges for b in edges[a] if reaches(b, a))
    assert cycles == []


LAUNCHER = ("launcher", "landlock", "reaper", "unixguard")
"""The sandbox launcher (`python -I -S`, no site-packages) and the modules it imports."""


@pytest.mark.parametrize("name", LAUNCHER)
def test_the_sandbox_launcher_imports_only_the_standard_library(name: str) -> None:
    import sys

    tree = parse_file(SRC / "sandbox" / f"{name}.py")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "tether.sandbox":
                names |= {f"tether.sandbox.{a.name}" for a in node.names}
            else:
                names.add(node.module)
    ours = {n for n in names if n.startswith("tether")}
    assert ours <= {f"tether.sandbox.{m}" for m in LAUNCHER}, ours
    stdlib = {n.split(".")[0] for n in names - ours}
    assert stdlib - {"__future__"} <= set(sys.stdlib_module_names), stdlib


@pytest.mark.parametrize(
    "path",
    [p for p in files(".") if "cli" not in p.relative_to(SRC).parts],
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_nothing_outside_cli_imports_cli(path: Path) -> None:
    bad = {m for m in tether_imports(path) if m.startswith("tether.cli")}
    assert bad == set(), f"{path.relative_to(SRC)} imports {bad}"


def test_the_public_api_is_listed_in_one_place_and_every_name_exists_and_is_documented() -> None:
    import importlib

    import tether

    api = tether.PUBLIC_API
    assert sorted(tether.__all__) == sorted(api)
    for name, module in api.items():
        value = getattr(importlib.import_module(module), name)
        assert getattr(tether, name) is value, name
        if callable(value) or isinstance(value, type):
            assert (getattr(value, "__doc__", None) or "").strip(), f"{name} has no docstring"
    # the type stub beside it (generated from PUBLIC_API) names the same set, from the same
    # modules, and `__init__.py` imports none of them itself
    assert not any(
        isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tether.")
        for node in ast.walk(parse_file(SRC / "__init__.py"))
    )
    tree = parse_file(SRC / "__init__.pyi")
    typed = {
        (alias.asname or alias.name, node.module)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tether.")
        for alias in node.names
    }
    assert typed == set(api.items())


def test_a_module_outside_the_public_api_is_not_reexported_at_the_top() -> None:
    import tether

    with pytest.raises(AttributeError):
        tether.loop  # noqa: B018  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


@pytest.mark.parametrize("path", files("agent/turn"), ids=lambda p: p.name)
def test_the_turn_room_imports_neither_the_agent_nor_the_construction(path: Path) -> None:
    """`agent/turn/` (the loop and what acts on each turn) sits below `agent.py`, `subagents.py`
    and `agent/assembly/`: at run time it imports none of them, except the loop's one import of
    the `AgentParts` record (the policies name it for typing only)."""
    allowed = {"tether.agent.assembly.parts", "tether.agent.assembly.parts.AgentParts"}
    bad = {
        m
        for m in _run_time_imports(path)
        if m.startswith(("tether.agent.agent", "tether.agent.subagents", "tether.agent.assembly"))
        and not (path.name == "loop.py" and m in allowed)
    }
    assert bad == set(), f"agent/turn/{path.name} imports {bad}"


def test_the_loop_is_a_skeleton_of_at_most_80_lines() -> None:
    """Per-turn features are turn policies (`agent/turn/policy.py`), not lines in `run_turns`."""
    tree = parse_file(SRC / "agent" / "turn" / "loop.py")
    (fn,) = [n for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "run_turns"]
    assert fn.end_lineno is not None and fn.end_lineno - fn.lineno + 1 <= 80


@pytest.mark.parametrize("path", files("settings"), ids=lambda p: p.name)
def test_the_settings_import_only_leaves_below_them(path: Path) -> None:
    """The settings schema sits low (floor 3): it imports no tools (`DEFAULT_REFUSED` is the
    settings' own default), no permissions (the rule grammar is `settings/rules.py`) and
    nothing above; only leaf vocabulary and the atomic file write."""
    allowed = (
        "tether.settings",
        "tether.errors",
        "tether.durations",
        "tether.effort",
        "tether.atomic",
    )
    bad = {m for m in tether_imports(path) if not m.startswith(allowed)}
    assert bad == set(), f"settings/{path.name} imports {bad}"


@pytest.mark.parametrize("path", files("sandbox"), ids=lambda p: p.name)
def test_the_sandbox_does_not_import_the_settings(path: Path) -> None:
    """`policy_for` / `limits_for` read the `tools` settings through a structural type
    (`ToolsConfinement`): the sandbox (floor 2) never imports the settings (floor 3)."""
    bad = {m for m in tether_imports(path) if m.startswith("tether.settings")}
    assert bad == set(), f"sandbox/{path.name} imports {bad}"
