"""Generation speed of the embedded model: tether's LocalProvider vs llama-cpp-python alone.

Both sides get the same prompt (tether's rendering of one user request: chat messages for the json
protocol, the model's own template text for the native one), the same grammar,
the same sampling settings and the same token cap, on the same loaded `Llama` object; runs
alternate (raw, tether, raw, tether, ...) after one warm-up each, so the prompt prefix is cached
equally for both. Prints tokens/s (median of the runs) for each and the ratio tether/raw.

    python bench/local_speed.py [--model local|local/qwen2.5-coder-0.5b|local/PATH.gguf]
                                [--tokens 256] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from tether.messages import text_turn
from tether.providers.base import ModelRequest, TextDelta, UsageEvent
from tether.providers.local.models import load_model
from tether.providers.local.native import render_native
from tether.providers.local.prompt import render_messages
from tether.providers.local.provider import LocalProvider, model_protocol
from tether.providers.local.provider import _grammar as tether_grammar  # pyright: ignore[reportPrivateUsage]

PROMPT = "Write a long, detailed story about a lighthouse keeper and a storm. Use many paragraphs."


def raw_run(
    llm: Any, request: ModelRequest, tokens: int, grammar: Any, native: bool
) -> tuple[int, float]:
    started = time.perf_counter()
    n = 0
    options: dict[str, Any] = {
        "temperature": 0.0,
        "max_tokens": tokens,
        "repeat_penalty": 1.1,
        "grammar": grammar,
        "stream": True,
    }
    if native:
        template = llm.metadata["tokenizer.chat_template"]
        stream = llm.create_completion(prompt=render_native(template, request), **options)
    else:
        stream = llm.create_chat_completion(messages=render_messages(request), **options)
    for chunk in stream:
        choice = chunk["choices"][0]
        if choice["text"] if "text" in choice else choice["delta"].get("content"):
            n += 1
    return n, time.perf_counter() - started


async def tether_run(provider: LocalProvider, request: ModelRequest) -> tuple[int, float]:
    started = time.perf_counter()
    n = 0
    text = 0
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            text += len(event.text)
        if isinstance(event, UsageEvent):
            n = event.usage.output_tokens
    return n, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    name = args.model.partition("/")[2]
    provider = LocalProvider(Path(name) if name else None, max_output_tokens=args.tokens)
    llm = load_model(provider.model_path, provider.n_ctx)
    request = ModelRequest(
        model=provider.model,
        messages=(text_turn("u", "user", PROMPT),),
        tools=(),
        temperature=0.0,
        max_output_tokens=args.tokens,
    )
    protocol = model_protocol(llm)
    grammar = tether_grammar((), protocol)
    native = protocol == "native"
    raw_rates: list[float] = []
    tether_rates: list[float] = []
    raw_run(llm, request, args.tokens, grammar, native)  # warm-up: prompt cached for both sides
    asyncio.run(tether_run(provider, request))
    for _ in range(args.runs):
        n, s = raw_run(llm, request, args.tokens, grammar, native)
        raw_rates.append(n / s)
        n, s = asyncio.run(tether_run(provider, request))
        tether_rates.append(n / s)
    raw, teth = statistics.median(raw_rates), statistics.median(tether_rates)
    print(f"model {provider.model} ({protocol} protocol): {args.tokens} tokens x {args.runs} runs")
    print(f"llama-cpp-python alone: {raw:6.1f} tokens/s")
    print(f"tether LocalProvider:   {teth:6.1f} tokens/s")
    print(f"ratio tether/raw:       {teth / raw:6.3f}")


if __name__ == "__main__":
    main()
