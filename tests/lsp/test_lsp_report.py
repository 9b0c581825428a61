"""The diagnostics block (`tether.lsp.report`, pure): which findings are new since before a
change, the severity filter, the caps, and the count the TUI reads back; plus the settings →
servers rules (`tether.lsp.config`) that need no server."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tether.lsp.config import find_command, project_root, resolve_servers
from tether.lsp.report import Finding, block_count, mark_new, render_block
from tether.settings.model import AgentConfig, LspSettings


def f(line: int, message: str, severity: int = 1, code: str | None = "c") -> Finding:
    return Finding(line=line, column=1, severity=severity, message=message, code=code)


def test_a_finding_that_only_moved_is_not_new() -> None:
    before = [f(3, '"x" is not defined')]
    after = [f(9, '"x" is not defined'), f(4, '"y" is not defined')]
    block = render_block("a.py", "python", after, before)
    assert block is not None
    assert block.splitlines()[0] == '<diagnostics file="a.py" server="python" count="2" new="1">'
    lines = block.splitlines()[1:-1]
    assert lines[0] == '4:1 error: "y" is not defined [c] (new)'  # the new one first
    assert lines[1] == '9:1 error: "x" is not defined [c]'
    assert block_count(block) == (2, 1)


def test_unknown_before_leaves_new_out_and_nothing_to_say_is_none() -> None:
    block = render_block("a.py", "python", [f(1, "m")], None)
    assert block is not None and ' new="' not in block and "(new)" not in block
    assert block_count(block) == (1, None)
    assert render_block("a.py", "python", [], None) is None
    assert render_block("a.py", "python", [], []) is None
    # warnings are below the default least severity (errors)
    assert render_block("a.py", "python", [f(1, "w", severity=2)], []) is None
    shown = render_block("a.py", "python", [f(1, "w", severity=2)], [], least=2)
    assert shown is not None and "1:1 warning: w" in shown


def test_a_change_that_fixed_everything_says_so() -> None:
    block = render_block("a.py", "python", [], [f(1, "a"), f(2, "b")])
    assert block is not None
    assert block_count(block) == (0, 0)
    assert "no error-level findings left (2 before)" in block


def test_the_caps_cut_with_a_count_of_what_was_left_out() -> None:
    many = [f(i, f"problem {i} " + "x" * 100) for i in range(1, 51)]
    block = render_block("a.py", "python", many, None, max_count=5)
    assert block is not None
    assert len(block.splitlines()) == 1 + 5 + 1 + 1  # head, 5 findings, "… 45 more", tail
    assert "… 45 more not shown" in block
    small = render_block("a.py", "python", many, None, max_count=50, max_bytes=500)
    assert small is not None
    body = small.splitlines()[1:-2]
    assert sum(len(x.encode()) + 1 for x in body) <= 500
    assert f"… {50 - len(body)} more not shown" in small
    assert block_count(small) == (50, None)


def test_messages_are_one_line_and_attributes_escaped() -> None:
    block = render_block('we"ird<.py', "python", [f(1, "first\n  second")], None)
    assert block is not None
    assert block.splitlines()[0].startswith('<diagnostics file="we&quot;ird&lt;.py"')
    assert "1:1 error: first / second [c]" in block


keys = st.sampled_from(["a", "b", "c"])


@given(
    before=st.lists(st.tuples(st.integers(1, 50), keys), max_size=8),
    after=st.lists(st.tuples(st.integers(1, 50), keys), max_size=8),
)
def test_new_counts_are_the_multiset_difference(
    before: list[tuple[int, str]], after: list[tuple[int, str]]
) -> None:
    old = [f(line, m) for line, m in before]
    now = [f(line, m) for line, m in after]
    flags = mark_new(now, old)
    for m in "abc":
        want = max(0, sum(x == m for _, x in after) - sum(x == m for _, x in before))
        assert sum(flag for flag, (_, x) in zip(flags, after, strict=True) if x == m) == want
    block = render_block("f.py", "s", now, old)
    if now or old:
        assert block is not None and block_count(block) == (len(now), sum(flags))


def test_servers_settings_merge_over_the_built_in_entries(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "mylsp"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    env = {"PATH": str(tool.parent)}
    cfg = AgentConfig.model_validate(
        {
            "lsp": {
                "servers": {
                    "mine": {"command": ["mylsp", "--stdio"], "extensions": ["py", ".foo"]},
                    "go": {"command": ["mylsp"]},  # only the command changes
                    "python": {"enabled": False},
                    "gone": {"command": ["no-such-lsp"], "extensions": [".x"]},
                }
            }
        }
    )
    specs, missing = resolve_servers(cfg.lsp, env)
    by = {s.name: s for s in specs}
    assert by["mine"].command == (str(tool), "--stdio")
    assert by["mine"].extensions == (".py", ".foo")
    assert by["go"].extensions == (".go",) and by["go"].root_markers == ("go.work", "go.mod")
    assert "python" not in by
    assert specs[0].name == "mine"  # the user's own first: it wins `.py`
    assert missing == ("language server `gone` not started: `no-such-lsp` is not found",)
    assert resolve_servers(LspSettings(enabled=False), env) == ((), ())
    assert find_command(["no-such-lsp"], str(tool.parent)) is None


def test_the_project_root_is_the_nearest_marker_inside_the_working_folder(tmp_path: Path) -> None:
    top = tmp_path
    (top / "pkg" / "src").mkdir(parents=True)
    (top / "pkg" / "pyproject.toml").write_text("")
    (top / "pyproject.toml").write_text("")
    assert project_root(top / "pkg" / "src" / "a.py", top, ["pyproject.toml"]) == top / "pkg"
    assert project_root(top / "b.py", top, ["pyproject.toml"]) == top
    assert project_root(top / "pkg" / "src" / "a.py", top, ["Cargo.toml"]) == top
