"""The embedded model's prompt cache on disk: the evaluated state (llama.cpp's KV cache) of
earlier prompts, so a new process — a second `tether run`, a `--resume`, a Jobs run, a TUI
started again — skips evaluating the prefix its prompt shares with one of them.

Why: evaluating a prompt is most of what the embedded model costs. On a 2-core machine the
~1,000-token system prompt (protocol, tool catalog, worked examples) takes SmolLM2-135M about
20 s, once per process; its saved state (~23 KB per token) loads in a few milliseconds. In one
process llama-cpp-python already reuses the prefix the last prompt shares with the next one;
this module carries that across processes, and back after a prompt with another prefix (a
compaction summary) has replaced it in memory.

Owns: `PromptCache`: the folder of saved states for one model build (`build_digest`), the
lookup llama-cpp-python calls with a prompt's tokens (its `BaseLlamaCache` hook, consulted once
per armed generation), and `save` after a generation. Does not own: the model (`models`),
generation (`provider`).

Rules:
- A folder per model file (resolved path, size, mtime), `n_ctx`, llama-cpp-python version and
  llama.cpp build flags: a state is only ever loaded into the build that wrote it.
- An entry is `<sha>.state` (the raw `llama_state_get_data` bytes) and `<sha>.tokens` (the
  state's sha256, then its tokens as int32), each written to a temporary name and renamed, the
  tokens last: an entry without its `.tokens` file does not exist. A file another process
  removes is a miss; a state whose sha256 differs is removed unread (llama.cpp would load a
  state cut short without a word); one llama.cpp refuses drops the folder (`clear`).
- A lookup loads the entry sharing the longest prefix with the prompt when that prefix is at
  least `MIN_REUSE` tokens and longer than what the model holds in memory; at most all but the
  prompt's last token is reused, so the reply is always sampled from freshly computed logits.
- `save` keeps a state once it holds `MIN_SAVE` tokens and half again as many as the stored
  entry sharing most with it (a long session saves a few times per window, not every turn);
  entries it continues (`SUPERSEDED`) are removed; the least recently used entries go when the
  folder exceeds `max_bytes`.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from llama_cpp.llama_cache import BaseLlamaCache

from tether.atomic import write_atomic

ORPHAN_S = 600.0
"""Age in seconds after which a state without its tokens file, or a temporary file, is a
killed writer's leftover."""
DIGEST = 32
"""Bytes of the sha256 of the state at the start of a `.tokens` file."""
MIN_REUSE = 64
"""Fewest shared tokens worth loading a saved state for."""
MIN_SAVE = 256
"""Fewest evaluated tokens worth saving."""
GROWTH = 1.5
"""A state is saved when it holds this many times the tokens of the entry sharing most with it."""
SUPERSEDED = 0.9
"""A saved entry sharing this share of its tokens with a newly saved state is removed: its
tail is most likely the reply of a turn the new state continues."""


def build_digest(llm: Any, model_path: Path, n_ctx: int) -> str:
    """The name of one model build's folder (see the module's rules): 24 hex digits."""
    import llama_cpp

    st = model_path.stat()
    ident = "\n".join(
        [
            str(model_path.resolve()),
            str(st.st_size),
            str(st.st_mtime_ns),
            str(n_ctx),
            str(getattr(llama_cpp, "__version__", "")),
            llama_cpp.llama_print_system_info().decode(errors="replace"),
            str(llm.n_vocab()),
        ]
    )
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


def _common(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> int:
    """The length of the longest common prefix of two token arrays."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class PromptCache(BaseLlamaCache):
    """Saved prompt states of one loaded model in `folder` (see the module's rules).

    llama-cpp-python calls `__getitem__` with a prompt's tokens at the start of a completion
    when the cache is truthy; `arm` makes it truthy for exactly that one lookup, so the
    library's own save at the end of the completion (a copy of every logit row) never runs:
    `save` does it, when the rules say so.
    """

    def __init__(self, folder: Path, llm: Any, max_bytes: int) -> None:
        super().__init__(capacity_bytes=max_bytes)
        self.folder = folder
        self.llm = llm
        self.max_bytes = max_bytes
        self._armed = False
        self.loaded_tokens = 0
        """Tokens reused by the last lookup (0: none)."""

    def __bool__(self) -> bool:
        return self._armed

    def arm(self) -> None:
        """Let the next completion look its prompt up here."""
        self._armed = True
        self.loaded_tokens = 0

    def disarm(self) -> None:
        self._armed = False

    @property
    def cache_size(self) -> int:
        return sum(p.stat().st_size for p in self._files())

    def _files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return [p for p in self.folder.iterdir() if p.suffix in (".state", ".tokens")]

    def _entries(self) -> list[tuple[Path, np.ndarray[Any, Any]]]:
        out: list[tuple[Path, np.ndarray[Any, Any]]] = []
        if not self.folder.is_dir():
            return out
        for tokens_file in self.folder.glob("*.tokens"):
            try:
                out.append((tokens_file, np.fromfile(tokens_file, dtype="<i4", offset=DIGEST)))
            except (OSError, ValueError):
                continue
        return out

    def _best(
        self,
        tokens: np.ndarray[Any, Any],
        entries: list[tuple[Path, np.ndarray[Any, Any]]] | None = None,
    ) -> tuple[Path | None, int]:
        """The entry sharing the longest prefix with `tokens`, and that prefix's length, among
        `entries` (read from the folder when not given)."""
        best: tuple[Path | None, int] = (None, 0)
        for path, stored in self._entries() if entries is None else entries:
            shared = _common(stored, tokens)
            if shared > best[1]:
                best = (path, shared)
        return best

    def __contains__(self, key: Any) -> bool:
        return self._best(np.asarray(key, dtype="<i4"))[1] >= MIN_REUSE

    def __getitem__(self, key: Any) -> Any:
        """The saved state sharing the longest prefix with the prompt `key` (token ids), cut
        to that prefix (at most all but the last token). Raises KeyError when none shares
        `MIN_REUSE` tokens or more than the model already holds."""
        from llama_cpp.llama import LlamaState

        self._armed = False  # one lookup per armed completion; no save at its end
        prompt = np.asarray(key, dtype="<i4")
        held = _common(np.asarray(self.llm.input_ids[: self.llm.n_tokens], dtype="<i4"), prompt)
        path, shared = self._best(prompt)
        usable = min(shared, len(prompt) - 1)
        if path is None or usable < MIN_REUSE or usable <= held:
            raise KeyError("no saved prompt state")
        try:
            blob = path.with_suffix(".state").read_bytes()
            with path.open("rb") as f:
                digest = f.read(DIGEST)
            os.utime(path)
        except OSError:
            raise KeyError("saved prompt state gone") from None
        if hashlib.sha256(blob).digest() != digest:  # cut short or damaged: never loaded
            _remove(path)
            raise KeyError("saved prompt state damaged")
        ids = np.zeros(self.llm.n_ctx(), dtype=np.intc)
        ids[:usable] = prompt[:usable]
        self.loaded_tokens = usable
        return LlamaState(
            input_ids=ids,
            scores=np.zeros((1, self.llm.n_vocab()), dtype=np.single),
            n_tokens=usable,
            llama_state=blob,
            llama_state_size=len(blob),
            seed=int(getattr(self.llm, "_seed", 0)),
        )

    def __setitem__(self, key: Any, value: Any) -> None:
        """Unused: `save` writes states (the library's save copies every logit row)."""

    def save(self) -> bool:
        """Save the model's evaluated state when the rules say so; True when written. Never
        raises on a full or read-only disk (the cache is an optimization)."""
        import llama_cpp

        n = int(self.llm.n_tokens)
        if n < MIN_SAVE:
            return False
        tokens = np.asarray(self.llm.input_ids[:n], dtype="<i4")
        entries = self._entries()  # read once: the folder is read after every reply
        _, shared = self._best(tokens, entries)
        if n < GROWTH * shared:
            return False
        extended = [
            p for p, stored in entries if _common(stored, tokens) >= SUPERSEDED * len(stored)
        ]
        try:
            size = llama_cpp.llama_state_get_size(self.llm.ctx)
            buf = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_get_data(self.llm.ctx, buf, size)
            self.folder.mkdir(parents=True, exist_ok=True)
            name = hashlib.sha256(tokens.tobytes()).hexdigest()[:24]
            state = memoryview(buf)[:written]
            tokens_data = hashlib.sha256(state).digest() + tokens.tobytes()
            write_atomic(self.folder / f"{name}.state", state, durable=False, mode=0o600)
            write_atomic(self.folder / f"{name}.tokens", tokens_data, durable=False, mode=0o600)
        except OSError:
            return False
        for old in extended:
            if old.stem != name:
                _remove(old)
        self._evict()
        return True

    def clear(self) -> None:
        """Remove every saved state of this model build (after one failed to load); the last
        lookup reused nothing after all."""
        self.loaded_tokens = 0
        shutil.rmtree(self.folder, ignore_errors=True)

    def _evict(self, now: float | None = None) -> None:
        """Remove what a killed writer left (a state without its tokens, a temporary file:
        after `ORPHAN_S`, so a writer between its two renames is not robbed), then the least
        recently used entries while the folder exceeds `max_bytes`."""
        now = time.time() if now is None else now
        for p in self.folder.iterdir():
            orphan = p.suffix == ".state" and not p.with_suffix(".tokens").exists()
            if (orphan or p.name.endswith(".tmp")) and now - _mtime(p) > ORPHAN_S:
                with contextlib.suppress(OSError):
                    p.unlink()
        entries = sorted(self._entries(), key=lambda e: _mtime(e[0]))
        total = self.cache_size
        for path, _tokens in entries[:-1]:  # the newest stays, however large
            if total <= self.max_bytes:
                break
            total -= _size(path) + _size(path.with_suffix(".state"))
            _remove(path)


def _remove(tokens_file: Path) -> None:
    """Remove an entry: its tokens first (the entry is gone), then its state."""
    for p in (tokens_file, tokens_file.with_suffix(".state")):
        with contextlib.suppress(OSError):
            p.unlink()


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0
