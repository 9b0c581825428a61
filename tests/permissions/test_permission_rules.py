"""The permission matcher: a table of commands and rules, the grammar's refusals, and Hypothesis
over command composition (a line of joined commands is allowed only when each is, denied
when any is, whatever the operators, wrappers and nesting)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.permissions.rules import RuleError, Rules, command_matches, parse_rule, suggest
from tether.permissions.shell import Unparsable, split_command

RULES = Rules.of(
    allow=[
        "bash(pytest *)",
        "bash(git status)",
        "bash(npm run test:*)",
        "edit(src/**)",
        "mcp__github__*",
        "web_fetch(domain:docs.python.org)",
    ],
    ask=["bash(git push *)"],
    deny=["bash(rm -rf *)", "read(.env)"],
)

TABLE: list[tuple[str, dict[str, str], str | None, str | None]] = [
    # (tool, arguments, action, rule)
    ("bash", {"command": "pytest"}, "allow", "bash(pytest *)"),
    ("bash", {"command": "pytest -x tests/"}, "allow", "bash(pytest *)"),
    ("bash", {"command": "pytester"}, None, None),
    ("bash", {"command": "pytest -x && git status"}, "allow", "bash(pytest *)"),
    ("bash", {"command": "pytest; rm -rf build"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "pytest | tee out && ls"}, None, None),
    ("bash", {"command": "echo $(rm -rf /)"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "(cd x && rm -rf y)"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "bash -c 'rm -rf /'"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "timeout 60 env CI=1 nice -n 5 pytest -q"}, "allow", "bash(pytest *)"),
    ("bash", {"command": "find . -name x | xargs -0 rm -rf"}, "deny", "bash(rm -rf *)"),
    # the third trial: a program spelled with its bin folder, or run through sudo / doas / exec
    ("bash", {"command": "/bin/rm -rf build"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "sudo -u root /usr/bin/rm -rf /"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "doas rm -rf /"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "exec rm -rf /"}, "deny", "bash(rm -rf *)"),
    ("bash", {"command": "./rm -rf x"}, None, None),  # a program of the project's own
    ("bash", {"command": "git push origin main"}, "ask", "bash(git push *)"),
    ("bash", {"command": "pytest && git push"}, "ask", "bash(git push *)"),
    ("bash", {"command": "npm run test"}, "allow", "bash(npm run test:*)"),
    ("bash", {"command": "npm run test:unit"}, "allow", "bash(npm run test:*)"),
    ("bash", {"command": "echo 'unterminated"}, "ask", None),
    ("bash", {"command": "$CMD -rf /"}, "ask", None),
    ("edit", {"path": "src/a/b.py"}, "allow", "edit(src/**)"),
    ("edit", {"path": "/work/p/src/a.py"}, "allow", "edit(src/**)"),
    ("edit", {"path": "../p/src/a.py"}, "allow", "edit(src/**)"),  # resolved: the same file
    ("edit", {"path": "../q/src/a.py"}, None, None),
    ("edit", {"path": "lib/a.py"}, None, None),
    ("read", {"path": "./.env"}, "deny", "read(.env)"),
    ("mcp__github__create_issue", {"title": "x"}, "allow", "mcp__github__*"),
    ("mcp__gitlab__x", {}, None, None),
    ("web_fetch", {"url": "https://docs.python.org/3/library"}, "allow", "web_fetch(domain:docs.python.org)"),
    ("web_fetch", {"url": "https://docs.python.org.evil.io/"}, None, None),
]


@pytest.mark.parametrize(("tool", "arguments", "action", "rule"), TABLE)
def test_the_decision_table(tool: str, arguments: dict[str, str], action: str | None, rule: str | None) -> None:
    decision = RULES.decide(tool, arguments, "/work/p")
    assert decision.action == action
    assert (decision.rule.text if decision.rule else None) == rule


def test_no_rules_decide_nothing_even_for_unparsable_lines() -> None:
    assert Rules().decide("bash", {"command": "echo 'x"}).action is None
    assert Rules.of(allow=["edit"]).decide("bash", {"command": "echo 'x"}).action is None


@pytest.mark.parametrize("bad", ["bash(", "bash()", "", "two words", "bash(x) y"])
def test_unparsable_rules_are_refused_naming_them(bad: str) -> None:
    with pytest.raises(RuleError) as info:
        parse_rule(bad)
    assert repr(bad) in str(info.value) or "empty pattern" in str(info.value)


def test_a_bare_tool_and_tool_star_match_every_call() -> None:
    assert parse_rule("Bash").tool == "bash" and parse_rule("bash(*)").pattern is None
    assert Rules.of(deny=["bash"]).decide("bash", {"command": "ls"}).action == "deny"


def test_always_allow_suggestions() -> None:
    d = RULES.decide("bash", {"command": "git commit -m x && ls -la && pytest"})
    assert suggest("bash", {"command": "..."}, d) == ("bash(git commit *)", "bash(ls *)")
    assert suggest("edit", {"path": "src/a/b.py"}, d, "/w") == ("edit(src/a/**)",)
    assert suggest("write", {"path": "top.txt"}, d, "/w") == ("write(top.txt)",)
    assert suggest("mcp__x__y", {}, d) == ("mcp__x__y",)


def test_an_added_allow_rule_applies_at_once() -> None:
    rules = Rules.of(allow=["bash(ls *)"])
    assert rules.decide("bash", {"command": "make"}).action is None
    rules.add_allow("bash(make *)")
    assert rules.decide("bash", {"command": "ls && make all"}).action == "allow"


# -- composition ---------------------------------------------------------------------------

ALLOWED = ["pytest -q", "ls -la", "git status"]
DENIED = ["rm -rf build", "curl evil.example"]
OTHER = ["make all", "cat notes.txt"]
COMPOSE_RULES = Rules.of(
    allow=["bash(pytest *)", "bash(ls *)", "bash(git status)"],
    deny=["bash(rm -rf *)", "bash(curl *)"],
)
WRAPS = ["{}", "timeout 5 {}", "env A=1 {}", "nice -n 3 {}", "nohup {}", "X=1 {}"]


@st.composite
def line(draw: st.DrawFn, pool: list[str]) -> tuple[str, list[str]]:
    """A command line made of commands from `pool`, joined by shell operators and nested in
    subshells, substitutions and `bash -c`; also the plain commands it holds."""
    n = draw(st.integers(1, 4))
    cmds = [draw(st.sampled_from(pool)) for _ in range(n)]
    parts: list[str] = []
    for cmd in cmds:
        text = draw(st.sampled_from(WRAPS)).format(cmd)
        shape = draw(st.sampled_from(["plain", "subshell", "group", "subst", "bashc"]))
        if shape == "subshell":
            text = f"({text})"
        elif shape == "group":
            text = f"{{ {text}; }}"
        elif shape == "subst":
            text = f"echo $({text})"
        elif shape == "bashc":
            text = f"bash -c '{text}'"
        parts.append(text)
    ops = [draw(st.sampled_from([" && ", " || ", "; ", " | "])) for _ in range(n - 1)]
    out = parts[0]
    for op, part in zip(ops, parts[1:], strict=True):
        out += op + part
    return out, cmds


@settings(max_examples=200)
@given(data=st.data())
def test_a_line_is_allowed_only_when_every_command_is_denied_when_any_is(data: st.DataObject) -> None:
    text, cmds = data.draw(line(ALLOWED + DENIED + OTHER))
    parts = split_command(text)
    assert not isinstance(parts, Unparsable), text
    for cmd in cmds:
        assert cmd in parts, (text, parts)
    decision = COMPOSE_RULES.decide("bash", {"command": text})
    if any(c in DENIED for c in cmds):
        assert decision.action == "deny", text
    elif all(c in ALLOWED for c in cmds) and not any("echo $(" in p for p in parts):
        assert decision.action == "allow", text
    else:
        assert decision.action is None, text


@given(st.text(alphabet="ab *", min_size=1, max_size=6), st.text(alphabet="ab ", max_size=8))
def test_a_trailing_space_star_also_matches_the_bare_command(word: str, rest: str) -> None:
    word = word.replace("*", "").strip() or "a"
    assert command_matches(f"{word} *", word)
    assert command_matches(f"{word} *", f"{word} {rest}")
    assert not command_matches(f"{word} *", f"{word}x{rest}")
