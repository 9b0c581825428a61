"""Loop hygiene (pure): replay, block-after-N, shell canonicalization (Hypothesis), stale-read
notices."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tether.messages import TextBlock, ToolCallBlock, tool_result
from tether.settings.model import AgentConfig
from tether.tools.exec.hygiene import (
    BLOCKED,
    DEFAULT_REASON,
    DedupRule,
    Hygiene,
    HygieneConfig,
    canonical_shell,
    default_key,
    loop_breaker_config,
    shell_key,
)
from tether.tools.exec.run import ToolRunResult

_n = iter(range(10**9))


def c(name: str, /, **args: Any) -> ToolCallBlock:
    return ToolCallBlock(id=f"c{next(_n)}", name=name, arguments=args)


def ok(call: ToolCallBlock, text: str = "ok", *, error: bool = False) -> ToolRunResult:
    return ToolRunResult(block=tool_result(call.id, text, is_error=error))


# --- shell canonicalization ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ls -la", "  ls    -la  "),
        ("ls -la", "cd /repo && ls -la"),
        ("ls -la", 'cd "my dir" && cd sub && ls\t-la'),
        ("ls -la", "cd /repo; ls -la"),  # issue 39: the `;` form too
        ("ls -la", "cd /repo ; cd sub && ls -la"),
        ("pytest -q", "cd /repo;pytest -q & sleep 5"),
        ("npm start", "npm start & sleep 5; curl localhost:3000"),
        ("npm start", "cd app && npm  start & sleep 2.5; tail -n 5 log; cat x"),
        ("make", "make; sleep 10; cat out"),
        ("make", "make && sleep 3"),
    ],
)
def test_equivalent_spellings_are_equal(a: str, b: str) -> None:
    assert canonical_shell(a) == canonical_shell(b) == a


@pytest.mark.parametrize(
    "cmd",
    ['echo "a  b"', "echo 'x & sleep 1; y'", "sleep 5; cat log", "cd a &&", "echo a\\ \\ b"],
)
def test_meaningful_text_is_kept(cmd: str) -> None:
    assert canonical_shell(cmd) == cmd


def test_different_commands_stay_different() -> None:
    assert canonical_shell('echo "a  b"') != canonical_shell('echo "a b"')
    assert canonical_shell("ls a") != canonical_shell("ls b")
    assert shell_key("bash", {"command": "cd x && ls"}) == shell_key("bash", {"command": "ls "})


def _joined(*parts: str) -> str:
    return "".join(parts)


_shell = st.text(
    alphabet=st.sampled_from(list("ab cd&;|'\"\\\t\nsleep0123.xyz-/")), max_size=60
) | st.builds(
    _joined,
    st.sampled_from(["", "cd /x && ", "cd 'a b' &&  cd c && "]),
    st.text(alphabet="abc -_\"' ", max_size=20),
    st.sampled_from(["", " & sleep 3; tail log", "; sleep 1", " && sleep 2 && x"]),
)


@given(_shell)
def test_canonical_shell_is_idempotent(cmd: str) -> None:
    once = canonical_shell(cmd)
    assert canonical_shell(once) == once


def _complete(cmd: str) -> bool:
    """Balanced quotes and no dangling backslash (else trailing blanks are quoted text)."""
    try:
        shlex.split(cmd)
    except ValueError:
        return False
    return True


@given(_shell, st.sampled_from([" ", "  ", "\t", " \n "]))
def test_whitespace_around_the_command_does_not_matter(cmd: str, ws: str) -> None:
    assert canonical_shell(ws + cmd) == canonical_shell(cmd)
    assume(_complete(cmd))
    assert canonical_shell(ws + cmd + ws) == canonical_shell(cmd)


@given(st.from_regex(r"[a-z][a-z0-9 ]{0,15}", fullmatch=True), st.sampled_from(["/r", "'x y'"]))
def test_a_leading_cd_does_not_matter(body: str, folder: str) -> None:
    assert canonical_shell(f"cd {folder} && {body}") == canonical_shell(body)
    assert canonical_shell(f"cd {folder}; {body}") == canonical_shell(body)


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4))
def test_default_key_ignores_argument_order(args: dict[str, Any]) -> None:
    assert default_key("t", dict(reversed(list(args.items())))) == default_key("t", args)


# --- dedup -----------------------------------------------------------------------------------


def test_block_after_n_is_sticky_until_the_input_changes() -> None:
    h = Hygiene(HygieneConfig(dedup={"bash": DedupRule(policy="block", after=2, key=shell_key)}))
    outcomes: list[str] = []
    for cmd in ["ls", "cd /r && ls", "ls  ", "ls", "ls -l", "ls -l", "ls -l", "ls"]:
        call = c("bash", command=cmd)
        pre = h.check(call)
        if pre is None:
            h.record(call, ok(call), safe=False)
            outcomes.append("ran")
        else:
            assert pre.block.is_error and pre.block.tool_call_id == call.id
            assert pre.block.text.startswith("Blocked: ")
            outcomes.append("blocked")
    assert outcomes == ["ran", "ran", "blocked", "blocked", "ran", "ran", "blocked", "ran"]
    blocked = BLOCKED.format(name="bash", n=2, reason=DEFAULT_REASON)
    assert blocked.startswith("Blocked: this `bash` call repeats")


def test_other_tools_do_not_break_a_streak_and_unruled_tools_pass() -> None:
    h = Hygiene(HygieneConfig(dedup={"grep": DedupRule(policy="block", after=1)}))
    assert h.check(c("grep", pattern="x")) is None
    assert h.check(c("read", path="a")) is None and h.check(c("read", path="a")) is None
    assert h.check(c("grep", pattern="x")) is not None
    assert h.check(c("grep", pattern="y")) is None
    invalid = ToolCallBlock(id="bad", name="grep", arguments={}, invalid="truncated")
    assert h.check(invalid) is None and h.check(invalid) is None
    with pytest.raises(ValueError):
        DedupRule(policy="block", after=0)


def test_replay_returns_the_earlier_result_marked() -> None:
    h = Hygiene(HygieneConfig(dedup={"fetch": DedupRule(policy="replay")}))
    first = c("fetch", url="u")
    assert h.check(first) is None
    h.record(first, ok(first, "page"), safe=True)
    again = c("fetch", url="u")
    pre = h.check(again)
    assert pre is not None and pre.block.tool_call_id == again.id and not pre.block.is_error
    assert isinstance(pre.block.content[0], TextBlock)
    assert first.id in pre.block.content[0].text and "replayed" in pre.block.content[0].text
    assert pre.block.content[1:] == (TextBlock(text="page"),)
    assert h.check(c("fetch", url="v")) is None
    # a failed result is not replayed; a non-safe call forgets everything
    bad = c("fetch", url="w")
    h.record(bad, ok(bad, "503", error=True), safe=True)
    assert h.check(c("fetch", url="w")) is None
    w = c("write", path="x", content="")
    h.record(w, ok(w), safe=False)
    assert h.check(c("fetch", url="u")) is None


# --- stale reads -----------------------------------------------------------------------------


def _notes(h: Hygiene, call: ToolCallBlock, *, error: bool = False) -> tuple[str, ...]:
    return h.record(call, ok(call, error=error), safe=call.name == "read").system_notes


def test_one_stale_read_notice_per_read_then_write() -> None:
    h = Hygiene(root="/ws")
    assert _notes(h, c("edit", path="a.py")) == ()  # never read: nothing to say
    assert _notes(h, c("read", path="a.py")) == ()
    assert _notes(h, c("read", path="./a.py")) == ()
    notes = _notes(h, c("edit", path="a.py", old_string="x", new_string="y"))
    assert len(notes) == 1 and notes[0].startswith("file a.py changed since you read it")
    assert "`edit`" in notes[0]
    assert _notes(h, c("edit", path="a.py")) == ()  # no read in between: no second notice
    assert _notes(h, c("read", path="/ws/a.py")) == ()
    assert _notes(h, c("write", path="sub/../a.py", content="")) != ()  # same file, new spelling
    assert _notes(h, c("read", path="b.py"), error=True) == ()  # a failed read does not count
    assert _notes(h, c("write", path="b.py")) == ()
    assert _notes(h, c("read", path="b.py")) == ()
    assert _notes(h, c("write", path="b.py"), error=True) == ()  # a failed write changes nothing
    assert len(_notes(h, c("write", path="b.py"))) == 1


@pytest.mark.parametrize("cmd", ["echo \\\\", "echo \\ ", "echo a\\\\\\ ", "\\\\", "\\ "])
def test_blanks_after_an_escaped_backslash_go_and_an_escaped_blank_stays(cmd: str) -> None:
    """Found by the property above: a trailing `\\\\` is one backslash (the blanks after it are
    not quoted), while `\\ ` is a blank the command means."""
    assert canonical_shell(" " + cmd + "  ") == canonical_shell(cmd)


def _blocked(h: Hygiene, calls: list[ToolCallBlock]) -> list[bool]:
    out: list[bool] = []
    for call in calls:
        pre = h.check(call)
        if pre is None:
            h.record(call, ok(call), safe=False)
        out.append(pre is not None)
    return out


def test_the_settings_section_tunes_the_loop_breaker() -> None:
    """Issue 39: `tools.loop_breaker` sets the threshold, the reason and the opted-out calls
    (a skip pattern), adds rules for other tools and turns the built-in one off."""
    config = AgentConfig.model_validate(
        {
            "tools": {
                "loop_breaker": {
                    "bash": {"after": 2, "reason": "Poll with `watch` instead.", "skip": ["^gh run"]},
                    "grep": {"after": 1},
                }
            }
        }
    )
    h = Hygiene(loop_breaker_config(config.tools.loop_breaker))
    calls = [c("bash", command=x) for x in ["make", "cd /r; make", "make", "make"]]
    assert _blocked(h, calls) == [False, False, True, True]
    pre = h.check(c("bash", command="make"))
    assert pre is not None and pre.block.text.endswith("Poll with `watch` instead.")
    polls = [c("bash", command="gh run view 1") for _ in range(6)]  # opted out: never blocked
    assert _blocked(h, polls) == [False] * 6
    assert _blocked(h, [c("grep", pattern="x"), c("grep", pattern="x")]) == [False, True]
    off = Hygiene(
        loop_breaker_config(AgentConfig.model_validate({"tools": {"loop_breaker": {"bash": {"policy": "off"}}}}).tools.loop_breaker)
    )
    assert _blocked(off, [c("bash", command="ls") for _ in range(8)]) == [False] * 8
    default = Hygiene(loop_breaker_config({}))
    assert _blocked(default, [c("bash", command="ls") for _ in range(6)]) == [False] * 5 + [True]
    with pytest.raises(ValueError, match="not a regular expression"):
        AgentConfig.model_validate({"tools": {"loop_breaker": {"bash": {"skip": ["("]}}}})


def test_a_hasher_returning_none_opts_a_call_out() -> None:
    def key(name: str, arguments: Mapping[str, Any]) -> str | None:
        return None if arguments.get("poll") else default_key(name, arguments)

    h = Hygiene(HygieneConfig(dedup={"t": DedupRule(policy="block", after=1, key=key)}))
    assert _blocked(h, [c("t", poll=True) for _ in range(3)]) == [False] * 3
    assert _blocked(h, [c("t", x=1), c("t", x=1)]) == [False, True]
