"""Generation on a loaded model: what runs inside the model's child process.

Owns: one reply generated on a loaded `llama_cpp.Llama` (`generate`): the protocol chosen per
model family, the prompt rendered (JSON protocol, or the model's own chat template), the
grammar that constrains it, the second pass when a reply repeats the last call or echoes a hint,
and the prompt cache (`prompt_cache`) consulted before and saved after. Yields the items the
parent turns into events (see `generate`). Does not own: loading the model (`models`), the child
process and its supervision (`child`, `supervisor`), events (`provider`).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tether.providers.base import ModelRequest
from tether.providers.local.grammar import action_grammar
from tether.providers.local.models import attach_cache
from tether.providers.local.native import (
    Protocol,
    choose_protocol,
    native_grammar,
    parse_native_call,
    render_native,
)
from tether.providers.local.penalty import CopyPenalty, exempt_tokens, latest_results_text
from tether.providers.local.prompt import (
    answer_of,
    echoes_hint,
    gave_up_answer,
    must_call,
    render_messages,
    repeats_last_call,
)

if TYPE_CHECKING:
    from tether.providers.local.prompt_cache import PromptCache


@dataclass(frozen=True, slots=True)
class GenOptions:
    """A request's settings from the provider (sent to the child with the request).

    Attributes:
        max_output_tokens: the cap when the request has none.
        repeat_penalty: llama.cpp repetition penalty.
        protocol: the forced protocol, or None (per model family).
        prompt_cache_bytes: the prompt cache's size cap (0: none).
        cache_root: the prompt cache's parent folder as the parent process sees it
            (`default_cache_dir()/prompts`, under TETHER_HOME as it is at the request).
    """

    max_output_tokens: int
    repeat_penalty: float
    protocol: Protocol | None
    prompt_cache_bytes: int
    cache_root: str


_GRAMMARS: dict[str, Any] = {}


def grammar_for(tools: tuple[Any, ...], protocol: Protocol = "json", *, answer: bool = True) -> Any:
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
        return grammar_for(others, protocol, answer=False)
    return grammar_for((), protocol)


def model_protocol(llm: Any, forced: Protocol | None = None) -> Protocol:
    """The reply protocol for a loaded `llama_cpp.Llama` (see `native.choose_protocol`):
    from its GGUF metadata `tokenizer.chat_template` and `general.architecture`."""
    meta = cast(dict[str, str], getattr(llm, "metadata", None) or {})
    return choose_protocol(forced, meta.get("tokenizer.chat_template"), meta.get("general.architecture"))


def generate(
    llm: Any,
    model_path: Path,
    n_ctx: int,
    request: ModelRequest,
    options: GenOptions,
    stop: threading.Event,
) -> Iterator[str | int]:
    """One reply on the loaded model: yields `\x00protocol:<json|native>`, text pieces,
    `\x00finish:<reason>`, `\x00reset` (drop what came before), `\x00cached:<n>` (prompt tokens
    loaded from the prompt cache), then the prompt+completion token count.

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
    cache = attach_cache(
        llm, model_path, n_ctx, options.prompt_cache_bytes, Path(options.cache_root)
    )
    yield from _generate_on(llm, request, options, stop, cache)
    if cache is not None and not stop.is_set():
        cache.save()


def _generate_on(
    llm: Any,
    request: ModelRequest,
    options: GenOptions,
    stop: threading.Event,
    cache: PromptCache | None,
) -> Iterator[str | int]:
    protocol = model_protocol(llm, options.protocol)
    yield f"\x00protocol:{protocol}"
    if protocol == "native":
        template = cast(dict[str, str], llm.metadata)["tokenizer.chat_template"]
        prompt: str | list[dict[str, str]] = render_native(template, request)
    else:
        prompt = render_messages(request)
    grammar = grammar_for(request.tools, protocol, answer=not must_call(request.messages))
    for again in (False, True):
        pieces: list[str] = []
        for item in _pass(llm, prompt, request, options, grammar, stop, cache):
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
            grammar = grammar_for(request.tools, protocol, answer=False)
        else:
            break
        yield "\x00reset"
    yield int(llm.n_tokens)


def _pass(
    llm: Any,
    prompt: str | list[dict[str, str]],
    request: ModelRequest,
    settings: GenOptions,
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
        "max_tokens": request.max_output_tokens or settings.max_output_tokens,
        "repeat_penalty": settings.repeat_penalty,
        "grammar": grammar,
        "stream": True,
    }
    exempt = exempt_tokens(llm, [latest_results_text(request.messages)])
    if exempt and settings.repeat_penalty != 1.0:  # quoting a tool result is not a loop
        from llama_cpp import LogitsProcessorList

        options["repeat_penalty"] = 1.0
        options["logits_processor"] = LogitsProcessorList(
            [CopyPenalty(settings.repeat_penalty, exempt)]
        )

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
    finally:
        stream.close()
