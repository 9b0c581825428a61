"""The embedded model's pure parts: the action schema, rendering, answer streaming, repeats."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.messages import TextBlock, ToolCallBlock, Turn, text_turn, tool_result
from tether.providers.base import ModelRequest, ToolSpec
from tether.providers.local.grammar import action_schema
from tether.providers.local.prompt import (
    FORCED_RETRIES,
    NEXT_STEP,
    RETRY,
    RETRY_OR_ANSWER,
    echoes_hint,
    error_rounds,
    gave_up_answer,
    may_echo_hint,
    must_call,
    render_messages,
    repeats_last_call,
    result_hint,
)
from tether.providers.local.prompt import AnswerStreamer as _AnswerStreamer
from tether.providers.local.prompt import answer_of as _answer_of
from tether.providers.local.provider import _Progress  # pyright: ignore[reportPrivateUsage]

READ = ToolSpec(
    name="read",
    description="Read a file.",
    parameters={"type": "object", "title": "x", "properties": {"path": {"type": "string", "title": "P"}}, "required": ["path"]},
)


def test_action_schema_offers_each_tool_and_an_answer_without_titles() -> None:
    schema = action_schema((READ,))
    options = schema["anyOf"]
    assert options[0]["properties"]["tool"] == {"const": "read"}
    assert "title" not in json.dumps(options[0]["properties"]["arguments"])
    assert options[-1]["required"] == ["answer"]
    assert action_schema(())["anyOf"] == [options[-1]]


def test_render_shows_calls_and_results_in_the_reply_format() -> None:
    view = (
        text_turn("u", "user", "Read a.txt"),
        Turn(id="a", role="assistant", content=(ToolCallBlock(id="c", name="read", arguments={"path": "a.txt"}),)),
        Turn(id="r", role="user", content=(tool_result("c", "hello"),)),
    )
    msgs = render_messages(ModelRequest(model="m", messages=view, tools=(READ,), system="Be terse."))
    assert msgs[0]["role"] == "system" and "Be terse." in msgs[0]["content"]
    assert json.loads(msgs[2]["content"]) == {"tool": "read", "arguments": {"path": "a.txt"}}
    assert "hello" in msgs[3]["content"] and '{"answer"' in msgs[3]["content"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]


@given(st.text(), st.integers(min_value=1, max_value=7))
def test_answer_streamer_reassembles_any_answer_from_any_chunking(text: str, step: int) -> None:
    raw = json.dumps({"answer": text})
    streamer = _AnswerStreamer()
    out = "".join(streamer.new_text(raw[:i]) for i in range(step, len(raw) + step, step))
    assert out == text


def test_repeat_detection_only_right_after_the_same_call() -> None:
    call = ToolCallBlock(id="c", name="read", arguments={"path": "a"})
    view = (
        Turn(id="a", role="assistant", content=(call,)),
        Turn(id="r", role="user", content=(tool_result("c", "x"),)),
    )
    same = json.dumps({"tool": "read", "arguments": {"path": "a"}})
    other = json.dumps({"tool": "read", "arguments": {"path": "b"}})
    assert repeats_last_call(same, view)
    assert not repeats_last_call(other, view)
    assert not repeats_last_call(json.dumps({"answer": "x"}), view)
    assert not repeats_last_call(same, (*view, Turn(id="u", role="user", content=(TextBlock(text="more"),))))


def test_answer_streamer_accepts_the_whitespace_the_grammar_allows() -> None:
    streamer = _AnswerStreamer()
    raw = '{ "answer" :  "cut mid-sent'
    assert streamer.new_text(raw) == "cut mid-sent"
    assert streamer.new_text(raw + "ence") == "ence"


ALL_TOOLS = tuple(
    ToolSpec(name=n, description=f"{n} tool.", parameters={"type": "object", "properties": {}})
    for n in ("read", "write", "edit", "ls", "glob", "grep", "bash")
)


def test_examples_chain_several_tools_and_recover_from_an_error() -> None:
    system = render_messages(ModelRequest(model="m", messages=(text_turn("u", "user", "hi"),), tools=ALL_TOOLS))[0]["content"]
    calls = [json.loads(line) for line in system.splitlines() if line.startswith('{"tool": "')]
    assert {c["tool"] for c in calls} >= {"read", "edit", "grep", "write", "ls", "bash"}
    assert "Result: ERROR:" in system
    # With only read offered, no example shows a tool the model cannot call.
    only_read = render_messages(ModelRequest(model="m", messages=(text_turn("u", "user", "hi"),), tools=(READ,)))[0]["content"]
    shown = {json.loads(line)["tool"] for line in only_read.splitlines() if line.startswith('{"tool": "')}
    assert shown == {"read"}


def test_after_a_result_the_prompt_offers_the_next_step_and_after_an_error_a_retry() -> None:
    call = Turn(id="a", role="assistant", content=(ToolCallBlock(id="c", name="read", arguments={"path": "a.txt"}),))
    ok = (text_turn("u", "user", "Fix a.txt"), call, Turn(id="r", role="user", content=(tool_result("c", "x"),)))
    bad = (text_turn("u", "user", "Fix a.txt"), call, Turn(id="r", role="user", content=(tool_result("c", "no such file", is_error=True),)))
    last_ok = render_messages(ModelRequest(model="m", messages=ok, tools=(READ,)))[-1]["content"]
    last_bad = render_messages(ModelRequest(model="m", messages=bad, tools=(READ,)))[-1]["content"]
    assert "call the next tool" in last_ok and "Task: Fix a.txt" in last_ok
    assert "Now reply" not in last_ok
    assert "Result: ERROR: no such file" in last_bad and "call again" in last_bad
    assert "call the next tool" not in last_bad


def test_progress_line_only_for_long_replies_and_rate_from_the_first_token(
    capsys: pytest.CaptureFixture[str],
) -> None:
    short = _Progress(0.0)
    for t in (1.0, 2.0, 3.0):
        short.token(t)
    short.finish(3.5)
    assert capsys.readouterr().err == ""
    long = _Progress(0.0)
    long.token(4.0)  # first token after 4 s of prompt processing
    for i in range(1, 11):
        long.token(4.0 + i * 0.2)  # 5 tokens/s
    long.finish(6.5)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "tether: generating… 6 tokens (5.0 tokens/s)"
    assert err[-1].startswith("tether: generated 11 tokens")
    late = _Progress(0.0)
    late.token(7.0)  # the first token after 7 s of prompt processing: no rate yet
    assert capsys.readouterr().err == ""
    for i in range(1, 6):
        late.token(7.0 + i * 0.25)  # 4 tokens/s, measured over 1 s at the fifth
    late.finish(8.25)
    assert capsys.readouterr().err.splitlines() == [
        "tether: generating… 5 tokens (4.0 tokens/s)",
        "tether: generated 6 tokens (4.0 tokens/s)",
    ]


def _round(k: int, *, failed: bool) -> tuple[Turn, Turn]:
    call = ToolCallBlock(id=f"c{k}", name="read", arguments={"path": f"f{k}"})
    result = tool_result(f"c{k}", "no such file" if failed else "ok", is_error=failed)
    return (
        Turn(id=f"a{k}", role="assistant", content=(call,)),
        Turn(id=f"r{k}", role="user", content=(result,)),
    )


@given(st.lists(st.booleans(), max_size=8))
def test_a_call_is_required_right_after_a_failed_round_and_only_then(outcomes: list[bool]) -> None:
    """`must_call` holds for the first reply and exactly when the view ends in
    1..FORCED_RETRIES failed rounds in a row (the hint says so too); after more the model may
    answer, told it can say what failed."""
    view: tuple[Turn, ...] = (text_turn("u", "user", "Fix a.txt"),)
    for k, failed in enumerate(outcomes):
        view += _round(k, failed=failed)
    trailing = 0
    for failed in reversed(outcomes):
        if not failed:
            break
        trailing += 1
    assert error_rounds(view) == trailing
    # The first reply (no assistant turn yet) must be a call too.
    assert must_call(view) == (not outcomes or 0 < trailing <= FORCED_RETRIES)
    hint = result_hint(view)
    if not outcomes:
        assert hint is None
    elif trailing == 0:
        assert hint == NEXT_STEP
    else:
        assert hint == (RETRY if trailing <= FORCED_RETRIES else RETRY_OR_ANSWER)
    if hint is not None:
        last = render_messages(ModelRequest(model="m", messages=view, tools=(READ,)))[-1]
        assert last["content"].endswith(hint)


def test_an_answer_quoting_a_hint_is_recognised_and_ordinary_answers_are_not() -> None:
    """The 0.5B model once answered with the retry hint itself; such an answer is generated
    again as a call (`LocalProvider._generate`)."""
    for hint in (RETRY, RETRY_OR_ANSWER, NEXT_STEP):
        assert echoes_hint(hint) and echoes_hint(f"  {hint.upper()}")
        assert not echoes_hint(f"I read it. {hint}")  # an opening only: see may_echo_hint
    for answer in ("The code word is PELICAN.", "I wrote b.txt.", "The call to ls failed: no dir"):
        assert not echoes_hint(answer)
    assert _answer_of('{"answer": "x"}') == "x"
    assert _answer_of('{"tool": "ls", "arguments": {}}') is None and _answer_of("{") is None


def _failed_twice(error: str) -> tuple[Turn, ...]:
    """A task, then two rounds whose `ls` call failed with `error`."""
    view: list[Turn] = [text_turn("u", "user", "List the folder src")]
    for k in range(2):
        call = ToolCallBlock(id=f"c{k}", name="ls", arguments={"path": "scr"})
        view.append(Turn(id=f"a{k}", role="assistant", content=(call,)))
        view.append(Turn(id=f"r{k}", role="user", content=(tool_result(call.id, error, is_error=True),)))
    return tuple(view)


def test_a_give_up_answer_says_what_failed_never_a_hint() -> None:
    said = gave_up_answer(_failed_twice("\nls: scr: no such file or directory\nsee --help"))
    assert said == "I could not finish the task: the ls call failed: ls: scr: no such file or directory"
    assert not echoes_hint(said)
    assert len(gave_up_answer(_failed_twice("x" * 5000))) < 400
    assert gave_up_answer(_failed_twice("   ")) == "I could not finish the task: the ls call failed"
    ok = (*_failed_twice("e")[:-1], Turn(id="r", role="user", content=(tool_result("c1", "fine"),)))
    assert gave_up_answer(ok) == "I could not finish the task."
    assert gave_up_answer(()) == "I could not finish the task."


def _fake_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, passes: list[list[str]]) -> object:
    """A `LocalProvider` whose llama.cpp model replies with `passes` (the pieces of each
    generation, in order)."""
    from tether.providers.local import provider as local

    replies = iter(passes)

    class FakeLlama:
        metadata: ClassVar[dict[str, str]] = {}
        n_tokens = 42

        def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
            return list(text)  # one id per byte: enough for the penalty's exempt set

        def detokenize(self, ids: list[int]) -> bytes:
            return bytes(ids)

        def create_chat_completion(self, **_options: object) -> Iterator[dict[str, object]]:
            for piece in next(replies):
                yield {"choices": [{"delta": {"content": piece}, "finish_reason": None}]}
            yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}

    from tether.providers.local import engine

    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")

    def generate(
        self: local.LocalProvider, request: ModelRequest, stop: threading.Event
    ) -> Iterator[str | int]:  # the child's generation, on the fake model, in this process
        return engine.generate(FakeLlama(), gguf, self.n_ctx, request, self.options(), stop)

    monkeypatch.setattr(local.LocalProvider, "_generate", generate)
    return local.LocalProvider(gguf, prompt_cache_bytes=0)  # no state to save


LS = ToolSpec(name="ls", description="List.", parameters={"type": "object", "properties": {"path": {"type": "string"}}})


def _events(provider: object, view: tuple[Turn, ...]) -> list[object]:
    from tether.providers.local.provider import LocalProvider

    assert isinstance(provider, LocalProvider)
    request = ModelRequest(model="m", messages=view, tools=(LS, READ))

    async def reply() -> list[object]:
        return [e async for e in provider.stream(request)]

    return asyncio.run(reply())


def _deltas(events: list[object]) -> list[str]:
    return [cast(Any, e).text for e in events if type(e).__name__ == "TextDelta"]


def test_a_final_reply_quoting_the_hint_is_replaced_by_what_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The give-up path the 0.5B model took in 3 of 24 tasks: after two failed rounds it
    repeats the failing call, the repeat is generated again as an answer, and that answer
    quotes `RETRY_OR_ANSWER`. The user gets what failed, and never sees the hint."""
    echo = json.dumps({"answer": RETRY_OR_ANSWER})
    provider = _fake_model(
        monkeypatch,
        tmp_path,
        [['{"tool": "ls", "arguments": {"path": "scr"}}'], [echo[:20], echo[20:50], echo[50:]]],
    )
    events = _events(provider, _failed_twice("ls: scr: no such file"))
    assert "".join(_deltas(events)) == "I could not finish the task: the ls call failed: ls: scr: no such file"
    assert not any(type(e).__name__ == "ToolCallStart" for e in events)


def test_a_first_reply_quoting_the_hint_is_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first reply echoing the retry hint is generated again as a call: none of its text
    reaches the host (it would have stayed in the assistant turn beside the call)."""
    echo = json.dumps({"answer": RETRY})
    call = '{"tool": "read", "arguments": {"path": "src/a.py"}}'
    provider = _fake_model(monkeypatch, tmp_path, [[echo[:18], echo[18:]], [call]])
    events = _events(provider, _failed_twice("ls: scr: no such file")[:3])
    assert _deltas(events) == []
    assert [type(e).__name__ for e in events].count("ToolCallStart") == 1


def test_an_answer_streams_as_soon_as_it_cannot_be_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = ['{"answer": "The ', "code ", "word ", "is ", 'PELICAN."}']
    provider = _fake_model(monkeypatch, tmp_path, [pieces])
    done = (*_failed_twice("e")[:2], Turn(id="r", role="user", content=(tool_result("c0", "PELICAN"),)))
    deltas = _deltas(_events(provider, done))
    assert "".join(deltas) == "The code word is PELICAN."
    assert deltas[0] == "The code " and len(deltas) == 4  # "The " held: a hint may open so


@given(st.sampled_from([RETRY, RETRY_OR_ANSWER, NEXT_STEP]), st.text(max_size=40), st.data())
def test_hint_hold_back_never_shows_an_echo_and_holds_only_while_one_is_possible(
    hint: str, text: str, data: st.DataObject
) -> None:
    """Every prefix of an echo is held (`may_echo_hint`), so nothing of it is shown; a text no
    longer held can never become an echo, whatever follows."""
    echo = data.draw(st.sampled_from([hint, hint.upper(), "  " + hint, hint + " " + text]))
    assert echoes_hint(echo)
    assert all(may_echo_hint(echo[:k]) for k in range(len(echo) + 1))
    if not may_echo_hint(text):
        assert not echoes_hint(text + data.draw(st.text(max_size=40)))
        assert not echoes_hint(text + hint)
