"""Generation speed of the embedded model: tether's LocalProvider (the model in its supervised
child process) vs llama-cpp-python alone (a `Llama` in this process), extra buffer types on and off.

Both sides get the same prompt (tether's rendering of one user request: chat messages for the json
protocol, the model's own template text for the native one), the same grammar, the same sampling
settings and the same token cap, and load the model with the same `LoadConfig`; runs alternate
(bare, tether, bare, tether, ...) after one warm-up each, so the prompt prefix is held in memory
equally by both (tether's prompt cache on disk is off). Prints, per configuration, the median over
the runs of time to first token (the prompt prefix held, so mostly its last token and the
grammar's set-up) and of tokens/s after the first token, for each side, and the ratios
tether/bare (tokens/s: ≥ 0.95 is the goal; TTFT: ≤ 1.05).

    python bench/local_speed.py [--model local|local/qwen2.5-coder-0.5b|local/PATH.gguf]
                                [--tokens 128] [--runs 5] [--extra-bufts on|off|both]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tether.messages import text_turn
from tether.providers.base import ModelRequest, UsageEvent
from tether.providers.local.engine import grammar_for, model_protocol
from tether.providers.local.models import FALLBACKS, LoadConfig, _model_params  # pyright: ignore[reportPrivateUsage]
from tether.providers.local.native import render_native
from tether.providers.local.prompt import render_messages
from tether.providers.local.provider import LocalProvider
from tether.providers.local.supervisor import (
    ModelLoad,
    ModelLoading,
    ModelProcess,
    stop_all,
    supervisor_for,
)

PROMPT = "Write a long, detailed story about a lighthouse keeper and a storm. Use many paragraphs."


def bare_model(path: Path, n_ctx: int, config: LoadConfig) -> Any:
    from llama_cpp import Llama

    extra: dict[str, Any] = {"use_mmap": config.use_mmap}
    if config.n_threads is not None:
        extra["n_threads"] = extra["n_threads_batch"] = config.n_threads
    with _model_params(config):
        return Llama(model_path=str(path), n_ctx=n_ctx, verbose=False, **extra)


def bare_run(llm: Any, request: ModelRequest, tokens: int) -> tuple[int, float, float]:
    """(pieces, seconds to the first, seconds from the first to the last)."""
    protocol = model_protocol(llm)
    options: dict[str, Any] = {
        "temperature": 0.0,
        "max_tokens": tokens,
        "repeat_penalty": 1.1,
        "grammar": grammar_for((), protocol),
        "stream": True,
    }
    started = time.perf_counter()
    if protocol == "native":
        template = llm.metadata["tokenizer.chat_template"]
        stream = llm.create_completion(prompt=render_native(template, request), **options)
    else:
        stream = llm.create_chat_completion(messages=render_messages(request), **options)
    n, first, last = 0, 0.0, 0.0
    for chunk in stream:
        choice = chunk["choices"][0]
        if choice["text"] if "text" in choice else choice["delta"].get("content"):
            n += 1
            last = time.perf_counter() - started
            first = first or last
    return n, first, last - first


async def tether_run(provider: LocalProvider, request: ModelRequest) -> tuple[int, float, float]:
    """(tokens, seconds to the first token's arrival in this process, seconds from it to the
    usage event). The first token is taken where the child's items arrive (the provider holds
    the first words of an answer back while they could still be one of its hints, on purpose:
    not a cost of the child)."""
    real = provider._generate  # pyright: ignore[reportPrivateUsage]
    first = 0.0
    started = time.perf_counter()

    def timed(
        request: ModelRequest, stop: threading.Event
    ) -> Iterator[str | int | ModelLoading | ModelLoad]:
        nonlocal first
        for item in real(request, stop):
            if not first and isinstance(item, str) and not item.startswith("\x00"):
                first = time.perf_counter() - started
            yield item

    provider._generate = timed  # pyright: ignore[reportPrivateUsage]
    n, last = 0, 0.0
    try:
        async for event in provider.stream(request):
            if isinstance(event, UsageEvent):
                n = event.usage.output_tokens
                last = time.perf_counter() - started
    finally:
        del provider._generate  # pyright: ignore[reportPrivateUsage]
    return n, first, last - first


def measure(provider: LocalProvider, config: LoadConfig, request: ModelRequest, tokens: int, runs: int) -> None:
    llm = bare_model(provider.model_path, provider.n_ctx, config)
    stop_all()
    sup = supervisor_for(provider.model_path, provider.n_ctx)
    started = time.perf_counter()
    process = ModelProcess(provider.model_path, provider.n_ctx, config)
    process.load()
    spawn_s = time.perf_counter() - started
    sup.process = process  # this configuration, whatever the verdict on this machine
    bare_run(llm, request, tokens)  # warm-up: the prompt held in memory by both
    asyncio.run(tether_run(provider, request))
    rows: dict[str, list[tuple[int, float, float]]] = {"bare": [], "tether": []}
    for _ in range(runs):
        rows["bare"].append(bare_run(llm, request, tokens))
        rows["tether"].append(asyncio.run(tether_run(provider, request)))
    figures: dict[str, tuple[float, float]] = {}
    for side, got in rows.items():
        ttft = statistics.median(r[1] for r in got)
        rate = statistics.median((r[0] - 1) / r[2] for r in got if r[2] > 0)
        figures[side] = (ttft, rate)
    (b_ttft, b_rate), (t_ttft, t_rate) = figures["bare"], figures["tether"]
    print(f"{config.label}: {tokens} tokens x {runs} runs; child start + load {spawn_s:.2f} s")
    print(f"  llama-cpp-python alone: TTFT {b_ttft * 1000:7.0f} ms  {b_rate:6.1f} tokens/s")
    print(f"  tether LocalProvider:   TTFT {t_ttft * 1000:7.0f} ms  {t_rate:6.1f} tokens/s")
    print(f"  ratio tether/bare:      TTFT {t_ttft / b_ttft:7.3f}     {t_rate / b_rate:6.3f}")
    del llm
    stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--extra-bufts", choices=("on", "off", "both"), default="both")
    args = parser.parse_args()
    name = args.model.partition("/")[2]
    provider = LocalProvider(
        Path(name) if name else None, max_output_tokens=args.tokens, prompt_cache_bytes=0
    )
    request = ModelRequest(
        model=provider.model,
        messages=(text_turn("u", "user", PROMPT),),
        tools=(),
        temperature=0.0,
        max_output_tokens=args.tokens,
    )
    configs = {"on": FALLBACKS[:1], "off": FALLBACKS[1:2], "both": FALLBACKS[:2]}[args.extra_bufts]
    print(f"model {provider.model}")
    for config in configs:
        measure(provider, config, request, args.tokens, args.runs)


if __name__ == "__main__":
    main()
