"""The usage line the hosts print: what the replies reported, never a measured-looking zero."""

from __future__ import annotations

from tether.messages import Provenance, Turn, Usage, text_turn
from tether.providers.pricing import NOT_REPORTED, reported, turns_usage_line

PROV = Provenance(provider="local", api="openai-chat", model="smollm2")


def reply(turn_id: str, usage: Usage | None) -> Turn:
    turn = text_turn(turn_id, "assistant", "ok")
    return Turn(id=turn.id, role="assistant", content=turn.content, usage=usage, provenance=PROV)


def test_no_reply_reported_usage_says_so() -> None:
    # llama-cpp-python's server sends no usage in its stream: not "in 0 / 0 out"
    turns = [text_turn("u", "user", "hi"), reply("a", None), reply("b", Usage())]
    assert turns_usage_line(turns) == NOT_REPORTED == "not reported by the provider"


def test_some_replies_without_usage_are_counted() -> None:
    turns = [reply("a", Usage(input_tokens=100, output_tokens=7)), reply("b", None)]
    line = turns_usage_line(turns)
    assert line.startswith("in 100 / 7 out") and "(1 of 2 replies reported no usage)" in line


def test_reported_usage_is_shown_as_before() -> None:
    turns = [reply("a", Usage(input_tokens=100, output_tokens=7))]
    assert turns_usage_line(turns) == "in 100 / 7 out"
    assert reported(Usage(output_tokens=3)) and not reported(None) and not reported(Usage())
