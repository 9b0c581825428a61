"""The embedded model's child process: `python -m tether.providers.local.child FD`.

Owns: loading one GGUF with a `LoadConfig` and generating replies (`engine.generate`) for the
parent (`tether.providers.local.supervisor`), over one socket (the inherited descriptor FD,
`multiprocessing.connection` framing: pickled tuples). llama.cpp runs only here, so a native fault
(SIGSEGV, SIGILL, SIGBUS, an abort) kills this process, never tether.

The conversation, parent → child:
    ("load", path, n_ctx, config)      → ("ready", seconds) or ("error", kind, message)
    ("probe", tokens)                  → ("items", [...])…, ("end",)  (a short generation)
    ("generate", request, options)     → ("items", [...])…, ("end",) or ("error", kind, message)
    ("stop",)                          the generation in progress ends at its next token
A reader thread takes every message; when the socket reaches EOF (the parent exited or was
killed, even by SIGKILL), the process exits at once: the child never outlives tether.

Fault injection for tests, `TETHER_LOCAL_FAULT` (comma-separated, see docs/providers.md):
    load          kill this process right after the model loaded
    after:N       kill it when a generation (the start-up probe included) has produced N pieces
    signal=NAME   the signal (SIGSEGV by default; SIGILL, SIGBUS, SIGABRT…)
    extra_bufts   only while extra buffer types are on (a crash the fallback heals)
    once          (read by the parent) only children started before the first crash get it
"""

from __future__ import annotations

import os
import queue
import resource
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

FAULT_ENV = "TETHER_LOCAL_FAULT"

PROBE_PROMPT = (
    "The lighthouse keeper climbed the stairs every evening to light the lamp, and the ships "
    "passed the rocks safely. One night a storm came from the sea and"
)
"""The probe's prompt: long enough for a batched prompt evaluation, then single-token decodes."""


@dataclass(frozen=True, slots=True)
class Fault:
    """An injected fault (`TETHER_LOCAL_FAULT`)."""

    at_load: bool = False
    after: int | None = None
    signum: int = signal.SIGSEGV
    only_extra_bufts: bool = False


def parse_fault(spec: str) -> Fault | None:
    """The fault `spec` asks for; None when empty.

    Raises:
        ValueError: an unknown part.
    """
    at_load, after, signum, only = False, None, int(signal.SIGSEGV), False
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        return None
    for part in parts:
        if part == "load":
            at_load = True
        elif part.startswith("after:"):
            after = int(part.removeprefix("after:"))
        elif part.startswith("signal="):
            name = part.removeprefix("signal=").upper()
            signum = int(signal.Signals[name if name.startswith("SIG") else "SIG" + name])
        elif part == "extra_bufts":
            only = True
        elif part == "once":
            pass
        else:
            raise ValueError(f"unknown {FAULT_ENV} part {part!r}")
    return Fault(at_load=at_load, after=after, signum=signum, only_extra_bufts=only)


def _die(signum: int) -> None:
    """Kill this process with `signum`, as a native fault would (no core file)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    time.sleep(10)  # the signal is delivered before this returns
    os._exit(128 + signum)


def main(fd: int) -> None:
    conn = Connection(fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a reply stops
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing native ever writes to a protocol
    inbox: queue.Queue[tuple[Any, ...]] = queue.Queue()
    stop = threading.Event()

    def reader() -> None:
        while True:
            try:
                message: tuple[Any, ...] = conn.recv()
            except (EOFError, OSError):
                os._exit(0)  # the parent is gone: never outlive it
            if message[0] == "stop":
                stop.set()
            else:
                inbox.put(message)

    threading.Thread(target=reader, name="tether-child-reader", daemon=True).start()
    try:
        fault = parse_fault(os.environ.get(FAULT_ENV, ""))
    except (ValueError, KeyError) as exc:
        conn.send(("error", "config", f"bad {FAULT_ENV}: {exc}"))
        return
    from tether.errors import ConfigError
    from tether.providers.local.engine import generate
    from tether.providers.local.models import LoadConfig, load_model

    _, path_s, n_ctx, config = inbox.get()
    assert isinstance(config, LoadConfig)
    path = Path(path_s)
    armed = fault is not None and (config.extra_bufts or not fault.only_extra_bufts)
    started = time.monotonic()
    try:
        llm = load_model(path, int(n_ctx), config)
    except ConfigError as exc:
        conn.send(("error", "config", str(exc)))
        return
    if armed and fault is not None and fault.at_load:
        _die(fault.signum)
    conn.send(("ready", time.monotonic() - started))
    limit = fault.after if armed and fault is not None else None
    while True:
        message = inbox.get()
        stop.clear()
        count = 0
        try:
            if message[0] == "probe":
                stream: Any = _probe(llm, int(message[1]))
            else:
                stream = generate(llm, path, int(n_ctx), message[1], message[2], stop)
            for item in stream:
                if isinstance(item, str) and not item.startswith("\x00"):
                    count += 1
                conn.send(("items", [item]))
                if limit is not None and count >= limit and fault is not None:
                    _die(fault.signum)
        except ConfigError as exc:
            conn.send(("error", "config", str(exc)))
            continue
        except Exception as exc:  # a value for the parent, classified there
            conn.send(("error", "runtime", str(exc) or type(exc).__name__))
            continue
        conn.send(("end",))


def _probe(llm: Any, tokens: int) -> Any:
    """A short generation: the prompt evaluated in a batch, then `tokens` single-token decodes."""
    llm.reset()
    for chunk in llm.create_completion(
        prompt=PROBE_PROMPT, max_tokens=tokens, temperature=0.0, stream=True
    ):
        text = chunk["choices"][0]["text"]
        if text:
            yield text
    llm.reset()


if __name__ == "__main__":
    main(int(sys.argv[1]))
