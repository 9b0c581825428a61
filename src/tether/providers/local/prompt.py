"""The embedded model's JSON protocol: the reply protocol, the tool catalog, worked examples, the
wire view rendered as chat-template messages, and reading replies back (`answer_of`, the
streamed answer text: `AnswerStreamer`). Pure: data in, data out.

The protocol is one JSON object per reply — `{"tool": NAME, "arguments": {...}}` or
`{"answer": TEXT}` — enforced by the grammar (`tether.providers.local.grammar`). Past assistant
turns are rendered back in the same JSON shape and tool results as user messages, so a run is a
chain: call → result → next call … → answer. After a result the model is told to take the next
step or answer; after an error result, to correct the call and try again, and the grammar then
admits only a call (`must_call`, as for the first reply): tiny models otherwise answer right
after an error result (the task suite saw SmolLM2 do so in 8 of 24 tasks). After `FORCED_RETRIES` failed rounds in a row
the model may answer again, told it can say what went wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from tether.messages import (
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.base import ModelRequest, ToolSpec, wire_messages

PROTOCOL = """You are an agent that does tasks in the current folder by calling tools.
Each reply is ONE JSON object, either a tool call:
{"tool": NAME, "arguments": {...}}
or, when the task is done, the answer to the user:
{"answer": TEXT}
You see each tool's result before your next reply, so take one step at a time: look first
(ls, glob, grep, read), then act (write, edit, bash), then answer. A task often needs 2-4 calls.
If a result is an error, read it and call again with corrected arguments.
Paths are relative to the current folder, spelled as the user wrote them.
Answer with the facts you found (names, numbers, text), not with a plan."""

EXAMPLES: tuple[tuple[str, tuple[tuple[dict[str, Any], str], ...], str], ...] = (
    (
        "What does the README say about installing?",
        (({"tool": "read", "arguments": {"path": "README.md"}}, "1\t# Demo\n2\tInstall: pip install demo"),),
        "It says: pip install demo",
    ),
    (
        "Change the greeting in greet.py to Hi",
        (
            (
                {"tool": "read", "arguments": {"path": "greet.py"}},
                '1\tprint("Hello")',
            ),
            (
                {"tool": "edit", "arguments": {"path": "greet.py", "old_string": "Hello", "new_string": "Hi"}},
                "edited greet.py",
            ),
        ),
        "greet.py now prints Hi.",
    ),
    (
        "Which file mentions the server port? Save its name in port.txt",
        (
            ({"tool": "grep", "arguments": {"pattern": "port"}}, "conf/app.yaml:3: port: 9000"),
            (
                {"tool": "write", "arguments": {"path": "port.txt", "content": "conf/app.yaml"}},
                "wrote port.txt",
            ),
        ),
        "conf/app.yaml sets the port; I wrote its name to port.txt.",
    ),
    (
        "How many files are in docs? Show the date too",
        (
            ({"tool": "ls", "arguments": {"path": "doc"}}, "ERROR: doc does not exist"),
            ({"tool": "ls", "arguments": {"path": "docs"}}, "intro.md\nusage.md"),
            ({"tool": "bash", "arguments": {"command": "date +%F"}}, "2025-03-02"),
        ),
        "docs has 2 files (intro.md, usage.md). Today is 2025-03-02.",
    ),
)
"""Worked examples: several tools, chains of calls, one recovery from an error result. Small
models follow examples more than prose."""


def tool_catalog(tools: tuple[ToolSpec, ...]) -> list[str]:
    """One line per tool: `- name(arg, optional?): first sentence of its description`."""
    lines: list[str] = []
    for t in tools:
        props = cast(dict[str, Any], t.parameters.get("properties", {}))
        required = cast(list[str], t.parameters.get("required", []))
        args = ", ".join(name + ("" if name in required else "?") for name in props)
        summary = t.description.split(". ")[0].splitlines()[0] if t.description else ""
        lines.append(f"- {t.name}({args}): {summary.rstrip('.')}")
    return lines


def examples_text(tools: tuple[ToolSpec, ...]) -> str:
    """The worked examples whose calls use only offered tools ("" when none fits)."""
    offered = {t.name for t in tools}
    blocks: list[str] = []
    for task, steps, answer in EXAMPLES:
        if not all(call["tool"] in offered for call, _ in steps):
            continue
        lines = [f"Task: {task}"]
        for call, result in steps:
            lines.append(json.dumps(call))
            lines.append(f"Result: {result}")
        lines.append(json.dumps({"answer": answer}))
        blocks.append("\n".join(lines))
    return "Examples:\n\n" + "\n\n".join(blocks) if blocks else ""


def system_prompt(tools: tuple[ToolSpec, ...], user_system: str | None) -> str:
    """The system message: protocol, tool catalog, examples, then the caller's system prompt."""
    parts = [PROTOCOL]
    if tools:
        parts.append("Tools:\n" + "\n".join(tool_catalog(tools)))
        examples = examples_text(tools)
        if examples:
            parts.append(examples)
    else:
        parts.append('No tools are available now: reply {"answer": TEXT}.')
    if user_system:
        parts.append(user_system)
    return "\n\n".join(parts)


NEXT_STEP = (
    "If the task needs another step, call the next tool. If it is done, reply "
    '{"answer": ...} with what you found or did.'
)
RETRY = "The call failed. Fix the arguments (or pick another tool) and call again."
RETRY_OR_ANSWER = (
    "The call failed again. Call a tool with other arguments, or, if the task cannot be done, "
    "answer with what went wrong."
)

FORCED_RETRIES = 1
"""Rounds in a row ending in an error result after which the next reply must still be a call."""


def error_rounds(view: tuple[Turn, ...]) -> int:
    """How many rounds at the end of `view` failed: trailing (assistant turn with tool calls,
    user turn with their results) pairs in which some result is an error."""
    n, i = 0, len(view) - 1
    while i >= 1:
        results, calls = view[i], view[i - 1]
        if not results.tool_results or calls.role != "assistant" or not calls.tool_calls:
            break
        if not any(r.is_error for r in results.tool_results):
            break
        n, i = n + 1, i - 2
    return n


def must_call(view: tuple[Turn, ...]) -> bool:
    """True when the next reply must be a tool call: the first reply of a conversation (no
    assistant turn yet: the model has not looked at the folder; the 0.5B model answered 3 of
    24 tasks from the worked examples without a call), or right after 1..`FORCED_RETRIES`
    failed rounds (after more, the model may give up and answer)."""
    if view and not any(t.role == "assistant" for t in view):
        return True
    return 0 < error_rounds(view) <= FORCED_RETRIES


_HINT_OPENINGS = tuple(h.split(".")[0].lower() for h in (RETRY, RETRY_OR_ANSWER, NEXT_STEP))


def echoes_hint(answer: str) -> bool:
    """True when an answer opens with the first sentence of one of tether's own hints
    (`RETRY`, `RETRY_OR_ANSWER`, `NEXT_STEP`; case and leading space ignored): that is not an
    answer (the 0.5B model answered with the retry hint's wording in 2 of 24 tasks, and with
    `RETRY_OR_ANSWER` after giving up in 3). An opening, not anywhere: a streamed answer is
    held back only while it may still be one (`may_echo_hint`), so no text the user saw is
    taken back."""
    low = answer.lstrip().lower()
    return any(low.startswith(opening) for opening in _HINT_OPENINGS)


def may_echo_hint(partial: str) -> bool:
    """True while a growing answer may still turn out to echo a hint (`echoes_hint`): it is
    blank, a prefix of a hint's opening, or opens with one. Its text is held back until then."""
    low = partial.lstrip().lower()
    return any(opening.startswith(low) or low.startswith(opening) for opening in _HINT_OPENINGS)


def gave_up_answer(view: tuple[Turn, ...]) -> str:
    """The answer given in place of a final answer that only quoted one of tether's hints
    (`echoes_hint`): what failed, from the last round of `view` (the failed call's tool and
    the first line of its error, at most 300 characters). The 0.5B model, giving up after
    failed calls, answered 3 of 24 tasks with `RETRY_OR_ANSWER`'s own words: the user would
    read tether's instruction to the model as the answer."""
    last = view[-1] if view else None
    calls = {c.id: c for c in view[-2].tool_calls} if len(view) >= 2 else {}
    for result in last.tool_results if last is not None else ():
        if result.is_error:
            call = calls.get(result.tool_call_id)
            what = f"the {call.name} call" if call is not None else "the last call"
            line = next((x.strip() for x in result.text.splitlines() if x.strip()), "")
            reason = f": {line[:300]}" if line else ""
            return f"I could not finish the task: {what} failed{reason}"
    return "I could not finish the task."


def result_hint(view: tuple[Turn, ...]) -> str | None:
    """The hint after the last turn's tool results (None when it has none): `NEXT_STEP`,
    `RETRY` while a call is required, `RETRY_OR_ANSWER` once the model may answer again."""
    if not view or not view[-1].tool_results:
        return None
    if not any(r.is_error for r in view[-1].tool_results):
        return NEXT_STEP
    return RETRY if must_call(view) else RETRY_OR_ANSWER


def render_messages(request: ModelRequest) -> list[dict[str, str]]:
    """Render the wire view as chat-template messages (system / user / assistant strings).

    The last message, when it carries tool results, ends with the task and the hint
    (`result_hint`).
    """
    out: list[dict[str, str]] = [
        {"role": "system", "content": system_prompt(request.tools, request.system)}
    ]
    for turn in wire_messages(request, "openai-chat"):
        if turn.role == "assistant":
            out.append({"role": "assistant", "content": _render_assistant(turn)})
        elif turn.role == "system":
            out.append({"role": "system", "content": turn.text})
        else:
            out.append({"role": "user", "content": render_user(turn)})
    hint = result_hint(request.messages)
    if out[-1]["role"] == "user" and hint is not None:
        task = task_text(request)
        if task:
            hint = f"Task: {task}\n{hint}"
        out[-1]["content"] += "\n\n" + hint
    return out


def _render_assistant(turn: Turn) -> str:
    parts: list[str] = []
    for block in turn.content:
        if isinstance(block, ToolCallBlock):
            parts.append(json.dumps({"tool": block.name, "arguments": block.arguments}))
        elif isinstance(block, TextBlock) and block.text:
            parts.append(json.dumps({"answer": block.text}))
    return "\n".join(parts) or json.dumps({"answer": ""})


def task_text(request: ModelRequest) -> str | None:
    """The text of the last user message that is not only tool results (the task), or None."""
    task: str | None = None
    for turn in wire_messages(request, "openai-chat"):
        if turn.role == "user" and not turn.tool_results and turn.text:
            task = turn.text
    return task


def render_user(turn: Turn, *, results: bool = True) -> str:
    """A user turn as text: tool results as `Result: …` lines (left out when `results` is
    False), text as is, images and documents as a one-line placeholder."""
    parts: list[str] = []
    for block in turn.content:
        if isinstance(block, ToolResultBlock):
            if not results:
                continue
            parts.append(f"Result: ERROR: {block.text}" if block.is_error else f"Result: {block.text}")
        elif isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ImageBlock | DocumentBlock):
            parts.append(f"[{block.type}: {block.media_type}, not shown to this model]")
    return "\n\n".join(parts)


def repeats_last_call(raw: str, view: tuple[Turn, ...]) -> bool:
    """True when `raw` is a tool call identical to a call of the last assistant turn and the
    view ends with that call's results."""
    try:
        action: Any = json.loads(raw)
    except json.JSONDecodeError:
        return False
    if not isinstance(action, dict) or "tool" not in action or len(view) < 2:
        return False
    act = cast(dict[str, Any], action)
    last, previous = view[-1], view[-2]
    if not last.tool_results or previous.role != "assistant":
        return False
    return any(
        c.name == act["tool"] and c.arguments == act.get("arguments") for c in previous.tool_calls
    )


# ---------------------------------------------------------------------------------------------
# Replies in the JSON protocol

TOOL_PREFIX = re.compile(r'\s*\{\s*"tool"\s*:\s*(?:"([^"]*)")?')
"""The start of a `{"tool": NAME` reply (NAME, when complete, in group 1)."""


def answer_of(raw: str) -> str | None:
    """The text of a JSON-protocol `{"answer": TEXT}` reply, else None."""
    try:
        action: Any = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(action, dict):
        return None
    text = cast(dict[str, Any], action).get("answer")
    return text if isinstance(text, str) else None


class AnswerStreamer:
    """Extracts the `answer` string from a growing `{"answer": "..."}` buffer, so the text can be
    streamed as it is generated. Only complete escape sequences are decoded."""

    PREFIX = re.compile(r'\s*\{\s*"answer"\s*:\s*"')

    def __init__(self) -> None:
        self.emitted = 0  # characters of raw string body already decoded and emitted

    def new_text(self, buffer: str) -> str:
        match = self.PREFIX.match(buffer)
        if not match:
            return ""
        body = buffer[match.end() :]
        end = safe_string_end(body)
        if end <= self.emitted:
            return ""
        chunk = body[self.emitted : end]
        self.emitted = end
        try:
            return cast(str, json.loads(f'"{chunk}"'))
        except json.JSONDecodeError:
            return ""


def _hex(digits: str) -> int:
    try:
        return int(digits, 16)
    except ValueError:
        return -1


def safe_string_end(body: str) -> int:
    """Index up to which `body` (a JSON string body) holds only complete characters/escapes,
    stopping at the closing quote."""
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c == '"':
            return i
        if c == "\\":
            if i + 1 >= n:
                return i
            step = 6 if body[i + 1] == "u" else 2
            if i + step > n:
                return i
            if step == 6 and 0xD800 <= _hex(body[i + 2 : i + 6]) <= 0xDBFF:
                step = 12  # a surrogate pair: decode both halves together
                if i + step > n:
                    return i
            i += step
        else:
            i += 1
    return i
