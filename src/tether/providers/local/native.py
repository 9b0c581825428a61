"""The embedded model's native tool-call protocol: the model's own chat template (read from the
GGUF's `tokenizer.chat_template`) with Hermes-style `<tool_call>` blocks. Pure: data in, data out.

Qwen2.5 (and other Hermes-style templates) declare tools in the system turn inside
`<tools></tools>` and expect each call as

    <tool_call>
    {"name": NAME, "arguments": {...}}
    </tool_call>

with results coming back as `<tool_response>…</tool_response>` in a user turn. Here the wire view
is rendered through the model's own Jinja template (so the tokens are exactly the ones it was
trained on), and the reply is constrained by a grammar admitting one such block whose JSON obeys
the tool's schema (`tether.providers.local.grammar`), or a plain-text answer. `parse_native_call`
turns an admitted block back into the generic `{"tool": NAME, "arguments": {...}}` action.

Which protocol a model family uses (`NATIVE_FAMILIES`) was decided by measurement with
`bench/tasks.py` (see docs/providers.md, "The embedded model").
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal, cast

from tether.messages import ToolCallBlock, Turn
from tether.providers.base import ModelRequest, ToolSpec, wire_messages
from tether.providers.local.grammar import arguments_schema, schema_grammar
from tether.providers.local.prompt import (
    EXAMPLES,
    NEXT_STEP,
    render_user,
    result_hint,
    task_text,
)

Protocol = Literal["json", "native"]

NATIVE_FAMILIES: frozenset[str] = frozenset()
"""GGUF `general.architecture` values for which the native protocol measured better than the
generic JSON one on `bench/tasks.py` (and whose template declares Hermes-style tool calls).

Empty: on Qwen2.5-Coder-0.5B (`qwen2`, the only family here whose template declares tools) the
native protocol passed no task the JSON one failed on the tasks measured, and cost ~1.9× the
prompt tokens (the template's `<tools>` JSON schemas) and ~1.4× the seconds per task; see
docs/providers.md, "The embedded model". `bench/tasks.py --protocol native` measures it again."""

CALL_OPEN = "<tool_call>\n"
CALL_CLOSE = "\n</tool_call>"

NATIVE_PROTOCOL = """You are an agent that does tasks in the current folder by calling tools.
To call a tool, reply with exactly one <tool_call> block. You see its result in a
<tool_response> before your next reply, so take one step at a time: look first (ls, glob, grep,
read), then act (write, edit, bash), then answer. A task often needs 2-4 calls.
If a result is an error, read it and call again with corrected arguments.
Paths are relative to the current folder, spelled as the user wrote them.
When the task is done, reply in plain text with the facts you found (names, numbers, text) or
what you did, not with a plan."""

NATIVE_NEXT_STEP = (
    "If the task needs another step, call the next tool. If it is done, answer in plain text "
    "with what you found or did."
)


def declares_hermes_tools(template: str | None) -> bool:
    """True when a chat template renders `tools` and Hermes-style `<tool_call>` blocks."""
    return template is not None and "<tool_call>" in template and "tools" in template


def choose_protocol(
    forced: Protocol | None, template: str | None, architecture: str | None
) -> Protocol:
    """The protocol for a loaded model: `forced` when given (and possible), else native for a
    family in `NATIVE_FAMILIES` whose template declares Hermes-style tools, else json."""
    native_ok = declares_hermes_tools(template)
    if forced is not None:
        return forced if forced == "json" or native_ok else "json"
    return "native" if native_ok and architecture in NATIVE_FAMILIES else "json"


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """One native call block, exactly as the Qwen2.5 template renders past calls."""
    return f'{CALL_OPEN}{{"name": "{name}", "arguments": {json.dumps(arguments)}}}{CALL_CLOSE}'


_CALL = re.compile(r"\s*<tool_call>\s*(\{.*\})\s*</tool_call>\s*\Z", re.DOTALL)
_CUT_CALL = re.compile(r'\s*<tool_call>\s*(?:\{\s*"name"\s*:\s*"([^"]*)")?')


def parse_native_call(raw: str) -> dict[str, Any] | None:
    """`{"tool": NAME, "arguments": {...}}` for a complete call block, else None."""
    match = _CALL.match(raw)
    if not match:
        return None
    try:
        call: Any = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    if not isinstance(call, dict) or not isinstance(cast(dict[str, Any], call).get("name"), str):
        return None
    obj = cast(dict[str, Any], call)
    args = obj.get("arguments", {})
    return {"tool": obj["name"], "arguments": args}


def cut_call_name(raw: str) -> str | None:
    """The tool name of a started but unfinished call block ("" when the name was not reached);
    None when `raw` is not a call block at all."""
    match = _CUT_CALL.match(raw)
    return (match.group(1) or "") if match else None


def is_answer_start(raw: str) -> bool | None:
    """Whether a reply so far is a plain-text answer (None: too early to tell). Only the
    whitespace the grammar lets precede a call block is skipped (`str.lstrip()` would also
    skip characters such as `\x1f` that can start an answer, which then never streamed)."""
    stripped = raw.lstrip(" \t\n\r")
    if not stripped:
        return None
    return not stripped.startswith("<")


def call_schema(tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
    """The JSON schema of the object inside `<tool_call>`: `name` first, then `arguments`."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "name": {"const": t.name},
                    "arguments": arguments_schema(t.parameters),
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for t in tools
        ]
    }


ANSWER_RULE = r"[^<{` \t\n\x00] [^\x00]*"
"""A plain-text answer: anything not starting like a call — `<`, `{`, or a code fence (this
family writes calls as a fenced JSON block when not held to the tags) — or with whitespace."""


def native_grammar(tools: tuple[ToolSpec, ...], *, answer: bool = True) -> str:
    """GBNF for one reply: a `<tool_call>` block whose JSON validates against one offered tool's
    schema, or (with `answer`, or when no tool is offered) a plain-text answer (`ANSWER_RULE`).

    Raises:
        ConfigError: llama-cpp-python is missing or a schema cannot be converted.
    """
    if not tools:
        return f"root ::= {ANSWER_RULE}\n"
    inner = schema_grammar(call_schema(tools))
    lines = [
        ("call-json ::=" + line.removeprefix("root ::=")) if line.startswith("root ::=") else line
        for line in inner.splitlines()
    ]
    head = [
        "root ::= call | answer" if answer else "root ::= call",
        f"call ::= {json.dumps(CALL_OPEN)} call-json {json.dumps(CALL_CLOSE)}",
        f"answer ::= {ANSWER_RULE}",
    ]
    return "\n".join(head + lines) + "\n"


def examples_native(tools: tuple[ToolSpec, ...]) -> str:
    """The worked examples (`prompt.EXAMPLES`) whose calls use only offered tools, written
    as native call blocks and responses ("" when none fits)."""
    offered = {t.name for t in tools}
    blocks: list[str] = []
    for task, steps, answer in EXAMPLES:
        if not all(call["tool"] in offered for call, _ in steps):
            continue
        lines = [f"Task: {task}"]
        for call, result in steps:
            lines.append(format_call(call["tool"], call["arguments"]))
            lines.append(f"<tool_response>\n{result}\n</tool_response>")
        lines.append(answer)
        blocks.append("\n".join(lines))
    return "# Examples\n\n" + "\n\n".join(blocks) if blocks else ""


def native_system(tools: tuple[ToolSpec, ...], user_system: str | None) -> str:
    """The system message content (the template appends the `<tools>` catalog after it)."""
    parts = [NATIVE_PROTOCOL]
    examples = examples_native(tools)
    if examples:
        parts.append(examples)
    if user_system:
        parts.append(user_system)
    return "\n\n".join(parts)


def tool_entries(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The `tools` list handed to the template (OpenAI function shape, as Qwen's expects)."""
    out: list[dict[str, Any]] = []
    for t in tools:
        summary = t.description.split(". ")[0].splitlines()[0].rstrip(".") if t.description else ""
        out.append(
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": summary,
                    "parameters": arguments_schema(t.parameters),
                },
            }
        )
    return out


def native_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The wire view as template messages: system, user, assistant (`tool_calls`), tool.

    After tool results a user message with the task and the hint follows (`result_hint`, with
    `NATIVE_NEXT_STEP` for a plain-text answer).
    """
    out: list[dict[str, Any]] = [
        {"role": "system", "content": native_system(request.tools, request.system)}
    ]
    for turn in wire_messages(request, "openai-chat"):
        if turn.role == "assistant":
            out.append(_assistant(turn))
        elif turn.role == "system":
            out.append({"role": "system", "content": turn.text})
        elif turn.tool_results:
            for block in turn.tool_results:
                text = f"ERROR: {block.text}" if block.is_error else block.text
                out.append({"role": "tool", "content": text})
            rest = render_user(turn, results=False)
            if rest:
                out.append({"role": "user", "content": rest})
        else:
            out.append({"role": "user", "content": render_user(turn, results=False)})
    hint = result_hint(request.messages)
    if hint is not None:
        hint = NATIVE_NEXT_STEP if hint == NEXT_STEP else hint
        task = task_text(request)
        out.append({"role": "user", "content": f"Task: {task}\n{hint}" if task else hint})
    return out


def _assistant(turn: Turn) -> dict[str, Any]:
    calls = [b for b in turn.content if isinstance(b, ToolCallBlock)]
    return {
        "role": "assistant",
        "content": turn.text,
        "tool_calls": [
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ],
    }


def _raise_exception(message: str) -> None:
    raise ValueError(message)


@functools.lru_cache(maxsize=8)
def _compiled(template: str) -> Any:
    """The template compiled once (sandboxed, as llama-cpp-python's own formatter does)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template)


def render_native(
    template: str, request: ModelRequest, *, bos_token: str = "", eos_token: str = ""
) -> str:
    """The prompt text: the model's own chat template rendered over `native_messages(request)`
    and `tool_entries(request.tools)`, ending with the assistant generation prompt.

    Raises:
        jinja2.TemplateError: the template cannot be rendered.
    """
    return _compiled(template).render(
        messages=native_messages(request),
        tools=tool_entries(request.tools) or None,
        add_generation_prompt=True,
        bos_token=bos_token,
        eos_token=eos_token,
        raise_exception=_raise_exception,
    )


class NativeStreamer:
    """Streams a plain-text (native protocol) answer as it grows; nothing for a call block."""

    def __init__(self) -> None:
        self.emitted = 0

    def new_text(self, buffer: str) -> str:
        if not is_answer_start(buffer):
            return ""
        chunk = buffer[self.emitted :]
        self.emitted = len(buffer)
        return chunk
