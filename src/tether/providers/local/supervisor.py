"""The embedded model's supervision: one child process per loaded model, in the parent.

Owns: `ModelProcess` (starting `python -m tether.providers.local.child`, a request at a time, the
child's death turned into a `LocalModelCrash` naming the signal and what was tried), `model_process`
(one per (file, n_ctx) in this process, stopped at exit), and self-healing: the first time a model
file runs on a llama.cpp build and a CPU, it is probed (loaded and a few tokens generated) with
llama.cpp's defaults, then with the fallbacks (`models.FALLBACKS`) while the child crashes; the
verdict is kept in the user cache (`verdicts`) and reused by later processes. Each time a
child becomes ready, a `ModelLoad` (file, seconds, configuration, what was tried, the crash it
follows) waits in `Supervisor.loads` until a reply's items carry it to the provider, which
turns it into an `env` notice for the agent (the channel from here to the host's events: no
listener, no import of the agent layer).
Does not own: generation (`engine`, in the child), events (`provider`).

Why a child started with `subprocess` (`python -m …`), not `multiprocessing`: a fresh
interpreter imports only tether's model code and llama.cpp (no fork of a process holding threads,
an event loop, a Textual app or a Jobs runner; no re-import of the parent's `__main__`, which
spawn does); its stdout goes to /dev/null (an ACP server's stdout is the protocol) and its stderr
to a pipe kept as a tail (a TUI's terminal is never written to).
Why a socket watch rather than PR_SET_PDEATHSIG: the death signal fires when the *thread* that
started the child exits, and the child is started from a short-lived generation thread; the
child's reader thread sees EOF on its socket when the parent exits for any reason (SIGKILL
included) and the child exits then.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from tether.errors import ConfigError, LocalModelCrash
from tether.providers.base import ModelRequest
from tether.providers.local.child import FAULT_ENV
from tether.providers.local.engine import GenOptions
from tether.providers.local.models import FALLBACKS, LoadConfig
from tether.providers.local.verdicts import Verdicts, verdict_key

PROBE_TOKENS = 4
"""Tokens the start-up probe generates (after evaluating its prompt in one batch)."""

START_TIMEOUT_S = 600.0
"""Longest wait for a child to load its model."""

STOP_TIMEOUT_S = 3.0
"""Wait for a child to exit after its socket closed, before it is killed."""

@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLoading:
    """A request found no ready child for the model: one is starting now (a `ModelLoad`
    follows, or the request's error when it crashes).

    Attributes:
        path: the GGUF file.
        n_ctx: the context window to allocate, in tokens.
        restart: a child of this model crashed before in this process.
    """

    path: Path
    n_ctx: int
    restart: bool = False

    def facts(self) -> dict[str, object]:
        """The JSON-ready facts (the `env` event's `data`)."""
        size = self.path.stat().st_size if self.path.exists() else None
        return {"file": str(self.path), "size_bytes": size, "n_ctx": self.n_ctx, "restart": self.restart}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLoad:
    """A model's child process became ready (its model loaded, and probed the first time).

    Attributes:
        path: the GGUF file.
        n_ctx: the context window allocated, in tokens.
        config: the configuration it runs with (llama.cpp's defaults, or a fallback).
        load_s: seconds from starting the child to ready (a probe and fallbacks included).
        child_load_s: seconds the child itself took to load the model (the last try).
        probed: whether it was probed now (the first time for this file × llama.cpp build ×
            CPU), else the kept verdict was used.
        tried: the configurations tried, in order (the last one worked).
        restart: a child of this model crashed before in this process; this one replaces it.
        crash: what crashed before (`SIGSEGV while generating`), or the crash a fallback
            healed while probing; None when nothing did.
        verdicts: the file the verdict is kept in.
    """

    path: Path
    n_ctx: int
    config: LoadConfig
    load_s: float
    child_load_s: float
    probed: bool
    tried: tuple[str, ...]
    restart: bool = False
    crash: str | None = None
    verdicts: str = ""

    def facts(self) -> dict[str, object]:
        """The JSON-ready facts of the load (the `env` event's `data`)."""
        size = self.path.stat().st_size if self.path.exists() else None
        return {
            "file": str(self.path),
            "size_bytes": size,
            "n_ctx": self.n_ctx,
            "load_s": round(self.load_s, 3),
            "child_load_s": round(self.child_load_s, 3),
            "config": self.config.label,
            "extra_bufts": self.config.extra_bufts,
            "n_threads": self.config.n_threads,
            "use_mmap": self.config.use_mmap,
            "probed": self.probed,
            "tried": list(self.tried),
            "fallback": self.config != FALLBACKS[0],
            "restart": self.restart,
            "crash": self.crash,
            "verdicts": self.verdicts,
        }

    def line(self) -> str:
        """One line: `loaded in 1.4 s (extra buffer types on)`, what it follows after it."""
        after = ""
        if self.restart:
            after = f"; restarted after a crash ({self.crash})" if self.crash else "; restarted"
        elif self.crash:
            after = f"; fell back after a crash ({self.crash})"
        return f"loaded in {self.load_s:.1f} s ({self.config.label}){after}"


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-returncode).name
        return f"signal {-returncode}"
    return f"exit {returncode}"


class ModelProcess:
    """One child process holding one loaded model; one request at a time (`lock`)."""

    def __init__(self, path: Path, n_ctx: int, config: LoadConfig, *, fault: bool = True) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.config = config
        self.tail: collections.deque[str] = collections.deque(maxlen=20)
        parent, child = socket.socketpair()
        env = dict(os.environ)
        env.pop("PYTHONFAULTHANDLER", None)  # a native fault kills quietly; the parent says it
        if not fault:
            env.pop(FAULT_ENV, None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tether.providers.local.child", str(child.fileno())],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        child.close()
        self.conn = Connection(parent.detach())
        self.load_s = 0.0
        self.drain = threading.Thread(target=self._drain, name="tether-local-stderr", daemon=True)
        self.drain.start()

    def _drain(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for line in stream:
            self.tail.append(line.decode(errors="replace").rstrip())

    def crashed(self, phase: str, tried: list[str]) -> LocalModelCrash:
        """The child died: its exit status as an error (after it is reaped)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(STOP_TIMEOUT_S)
        self.close()
        return LocalModelCrash(_signal_name(self.proc.returncode), phase, tried, "\n".join(self.tail))

    def recv(self, timeout_s: float | None = None) -> tuple[Any, ...] | None:
        """The child's next message; None after `timeout_s`. Raises EOFError when it died."""
        if timeout_s is not None and not self.conn.poll(timeout_s):
            return None
        try:
            return self.conn.recv()
        except (OSError, ConnectionError) as exc:
            raise EOFError from exc

    def load(self) -> None:
        """Load the model. Raises EOFError (died), ConfigError (cannot load)."""
        try:
            self.conn.send(("load", str(self.path), self.n_ctx, self.config))
        except OSError as exc:
            raise EOFError from exc
        message = self.recv(START_TIMEOUT_S)
        if message is None:
            self.close()
            raise ConfigError(f"the embedded model did not load in {START_TIMEOUT_S:.0f} s")
        _raise_error(message)
        self.load_s = float(message[1])

    def run(self, message: tuple[Any, ...], stop: threading.Event | None = None) -> Iterator[str | int]:
        """Send a `probe` or `generate` message and yield its items until it ends; on `stop`,
        the child is told to end the generation, and its last items are still read (the child
        is idle when this returns). Raises EOFError (died), ConfigError, RuntimeError."""
        try:
            self.conn.send(message)
        except OSError as exc:
            raise EOFError from exc
        told = False
        while True:
            if stop is not None and stop.is_set() and not told:
                with contextlib.suppress(OSError):
                    self.conn.send(("stop",))
                told = True
            got = self.recv(0.1 if stop is not None and not told else None)
            if got is None:
                continue
            if got[0] == "items":
                yield from got[1]
            elif got[0] == "end":
                return
            else:
                _raise_error(got)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Stop the child: its socket closed (it exits on EOF), killed if it lingers."""
        with contextlib.suppress(OSError):
            self.conn.close()
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.drain.join(STOP_TIMEOUT_S)
        if self.proc.stderr is not None and not self.drain.is_alive():
            self.proc.stderr.close()


def _raise_error(message: tuple[Any, ...]) -> None:
    if message[0] != "error":
        return
    if message[1] == "config":
        raise ConfigError(message[2])
    raise RuntimeError(message[2])


class Supervisor:
    """The child process of one (model file, n_ctx): started on demand (probing the first time
    per model file × llama.cpp build × CPU), started afresh after a crash."""

    def __init__(self, path: Path, n_ctx: int) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.lock = threading.Lock()
        self.process: ModelProcess | None = None
        self.probes = 0
        self.crashes = 0
        self.last_crash: str | None = None
        """The last crash of this model's child (`SIGSEGV while generating`), None before any."""
        self.loads: list[ModelLoad] = []
        """Loads not yet reported: `generate` hands them out before a reply's items."""

    def _fault(self) -> bool:
        """Whether a new child gets `TETHER_LOCAL_FAULT`: not once a child crashed when it
        says `once` (a test's host then sees a healthy model again)."""
        return not (self.crashes and "once" in os.environ.get(FAULT_ENV, "").split(","))

    def _start(self) -> ModelProcess:
        """A ready child (caller holds `lock`). Raises LocalModelCrash, ConfigError."""
        if self.process is not None and self.process.alive():
            return self.process
        self.process = None
        size_mb = self.path.stat().st_size / 2**20
        _say(f"tether: loading {self.path.name} ({size_mb:.0f} MB)…")
        started = time.monotonic()
        store = Verdicts()
        key, facts = verdict_key(self.path)
        known = store.get(key)
        if known is not None:
            config = next((c for c in FALLBACKS if c.label == known), FALLBACKS[0])
            process = ModelProcess(self.path, self.n_ctx, config, fault=self._fault())
            try:
                process.load()
            except EOFError:
                self.crashes += 1
                crash = process.crashed("loading", [config.label])
                self.last_crash = f"{crash.signal_name} while loading"
                raise crash from None
            tried = (config.label,)
            probed = False
            healed: str | None = None
            if config != FALLBACKS[0]:
                _say(
                    f"tether: the embedded model crashed with llama.cpp's defaults on this CPU "
                    f"earlier; using {config.label} (kept in {store.path})"
                )
        else:
            try:
                process, tried, healed = self._probe(store, key, facts)
            except LocalModelCrash as crash:
                self.crashes += 1
                self.last_crash = f"{crash.signal_name} while loading"
                raise
            probed = True
        took = time.monotonic() - started
        _say(f"tether: model loaded in {took:.1f} s")
        restart = self.crashes > 0
        self.loads.append(
            ModelLoad(
                path=self.path,
                n_ctx=self.n_ctx,
                config=process.config,
                load_s=took,
                child_load_s=process.load_s,
                probed=probed,
                tried=tried,
                restart=restart,
                crash=self.last_crash if restart else healed,
                verdicts=str(store.path),
            )
        )
        self.process = process
        return process

    def _probe(
        self, store: Verdicts, key: str, facts: dict[str, str]
    ) -> tuple[ModelProcess, tuple[str, ...], str | None]:
        """Try each configuration until one loads and generates; keep the verdict. Returns the
        process, the configurations tried, and the crash a fallback healed (None: none)."""
        _say("tether: checking the embedded model on this machine (once per model, llama.cpp build and CPU)…")
        self.probes += 1
        tried: list[str] = []
        last: LocalModelCrash | None = None
        for config in FALLBACKS:
            tried.append(config.label)
            process = ModelProcess(self.path, self.n_ctx, config, fault=self._fault())
            try:
                process.load()
                for _ in process.run(("probe", PROBE_TOKENS)):
                    pass
            except EOFError:
                last = process.crashed("loading", list(tried))
                continue
            except BaseException:
                process.close()
                raise
            store.put(key, config.label, tried, facts)
            if config != FALLBACKS[0]:
                _say(
                    f"tether: the embedded model crashed in llama.cpp ({last.signal_name if last else '?'}) "
                    f"with {tried[0]} on this CPU; using {config.label} (kept in {store.path})"
                )
            healed = f"{last.signal_name} with {tried[0]}" if last is not None else None
            return process, tuple(tried), healed
        assert last is not None
        raise last

    def warm(self) -> ModelLoad | None:
        """Start the child now (load and, the first time, probe); the load it made (None: the
        child was running). The load is still reported by the next reply (`loads`). Raises
        LocalModelCrash, ConfigError (the next request tries again)."""
        with self.lock:
            before = len(self.loads)
            self._start()
            return self.loads[-1] if len(self.loads) > before else None

    def config(self) -> LoadConfig:
        """The configuration the model runs with on this machine (starting its child, and
        probing the first time). Raises LocalModelCrash, ConfigError."""
        with self.lock:
            return self._start().config

    def generate(
        self, request: ModelRequest, options: GenOptions, stop: threading.Event
    ) -> Iterator[str | int | ModelLoading | ModelLoad]:
        """One reply's items from the child (see `engine.generate`), after `ModelLoading` when
        no child is ready (one starts now) and the loads not yet reported (`ModelLoad`: the
        one this request started, or a `warm`'s). Raises LocalModelCrash (the child died: the
        next request starts a fresh one), ConfigError, RuntimeError."""
        with self.lock:
            if self.process is None or not self.process.alive():
                yield ModelLoading(path=self.path, n_ctx=self.n_ctx, restart=self.crashes > 0)
            process = self._start()
            loads, self.loads = self.loads, []
            yield from loads
            try:
                yield from process.run(("generate", request, options), stop)
            except EOFError:
                self.process = None
                self.crashes += 1
                crash = process.crashed("generating", [process.config.label])
                self.last_crash = f"{crash.signal_name} while generating"
                raise crash from None

    def close(self) -> None:
        with self.lock:
            if self.process is not None:
                self.process.close()
                self.process = None


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_SUPERVISORS: dict[tuple[str, int], Supervisor] = {}
_REGISTRY_LOCK = threading.Lock()


def supervisor_for(path: Path, n_ctx: int) -> Supervisor:
    """The supervisor of (path, n_ctx) in this process (subagents share it)."""
    with _REGISTRY_LOCK:
        return _SUPERVISORS.setdefault((str(path), n_ctx), Supervisor(path, n_ctx))


@atexit.register
def stop_all() -> None:
    """Stop every model child of this process and forget its supervisors (at exit; tests call
    it too): the next request starts a new supervisor, whose crash count, and so a `once`
    fault switch, starts from nothing."""
    with _REGISTRY_LOCK:
        supervisors = list(_SUPERVISORS.values())
        _SUPERVISORS.clear()
    for sup in supervisors:
        process = sup.process
        if process is not None:
            process.close()
            sup.process = None

