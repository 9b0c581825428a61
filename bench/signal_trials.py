"""Signal trials: SIGKILL / SIGTERM / SIGINT at random instants of real `tether run` processes.

Each trial starts `python -m tether.cli run` (the `tether` script's entry) against a loopback
OpenAI-compatible server that streams, slowly enough for a signal to land anywhere: a reply
with three parallel `bash` calls, then a reply with one more, then a final answer streamed in
chunks. Every call's command has a side effect on disk: after its sleep it appends
`<call id> <time>` to `effects.log` (the last thing it does). At a random instant the process gets
SIGKILL, SIGTERM or SIGINT (one third each): a fifth of the trials during start-up (uniform
over the time to its first line of output: imports included), the rest after a random line of
its stdout (events) or stderr (notes, the closing usage and session lines) plus 0-0.3 s, so
every phase gets trials (streaming, the calls, the final answer, closing). Then the trial is judged:

    exit         TERM / INT: the exit code must be 130 (a process that had already exited
                 before the signal is not counted); KILL: not judged
    traceback    "Traceback" on stderr (any signal)
    lost result  a call whose effect was on disk at least `--margin` seconds before the signal
                 was stored with an is_error "interrupted" / "cancelled" result instead of
                 its output (TERM / INT only: SIGKILL cannot save anything)
    unanswered   a stored call without a stored result (TERM / INT: the session must be
                 well-formed without a resume)
    double       a call id appearing twice in `effects.log` (after the trial and, for KILL
                 trials, after `--resume` of the session)
    resume       for KILL trials, `tether run --resume <id> continue` must exit 0

Prints one line per failing trial and the counts. No network: loopback only.

Run: .venv/bin/python bench/signal_trials.py [--trials 300] [--seed 1] [--margin 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tether.session import SessionStore

SLEEPS = {"a": 0.1, "b": 0.4, "c": 0.8, "d": 0.2}
"""Seconds each call's command sleeps before its side effect."""
CHUNK_DELAY_S = 0.01
ANSWER_CHUNKS = 25


def _command(call_id: str, sleep_s: float) -> str:
    return (
        f"sleep {sleep_s}; printf '%s %s\\n' {call_id} \"$(date +%s.%N)\" >> effects.log; "
        f"echo finished {call_id}"
    )


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-trial",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return "data: " + json.dumps(body) + "\n\n"


def _reply(messages: list[dict[str, Any]]) -> list[str]:
    """The SSE events for a request, decided from its messages alone (the server is
    stateless, so every trial and every resume gets the same script)."""
    prompt = next(m for m in messages if m.get("role") == "user")
    token = str(prompt.get("content", "")).split()[-1]
    rounds = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    last = messages[-1]
    resumed = last.get("role") == "user" and last.get("content") == "continue"
    if not resumed and rounds < 2 and (rounds == 0 or last.get("role") == "tool"):
        names = ("a", "b", "c") if rounds == 0 else ("d",)
        events = [_chunk({"role": "assistant", "content": ""})]
        for k, name in enumerate(names):
            call_id = f"call_{token}_{name}"
            args = json.dumps({"command": _command(call_id, SLEEPS[name])})
            events.append(
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": k,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "bash", "arguments": ""},
                            }
                        ]
                    }
                )
            )
            events.append(_chunk({"tool_calls": [{"index": k, "function": {"arguments": args}}]}))
        events.append(_chunk({}, "tool_calls"))
        return events
    words = [f"word{k} " for k in range(ANSWER_CHUNKS)]
    return [
        _chunk({"role": "assistant", "content": ""}),
        *(_chunk({"content": w}) for w in words),
        _chunk({}, "stop"),
    ]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        events = _reply(body["messages"])
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        try:
            for data in [*events, "data: [DONE]\n\n"]:
                self.wfile.write(data.encode())
                self.wfile.flush()
                time.sleep(CHUNK_DELAY_S)
        except OSError:
            pass  # the client was killed


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@dataclass
class Tally:
    trials: Counter[str] = field(default_factory=lambda: Counter[str]())
    exits: Counter[tuple[str, int]] = field(default_factory=lambda: Counter[tuple[str, int]]())
    faults: Counter[str] = field(default_factory=lambda: Counter[str]())
    finished_calls: int = 0
    lines: list[str] = field(default_factory=lambda: list[str]())


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC"))}
    env["TETHER_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _argv(url: str, *rest: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tether.cli",
        "run",
        "--model",
        "openai/m",
        "--base-url",
        url,
        *rest,
    ]


def _effects(folder: Path) -> list[tuple[str, float]]:
    log = folder / "effects.log"
    if not log.exists():
        return []
    out: list[tuple[str, float]] = []
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            out.append((parts[0], float(parts[1])))
    return out


def _session(home: Path) -> Any:
    store = SessionStore(home / "sessions")
    listed = store.list()
    if not listed:
        return None, store
    return store.load(listed[0].id), store


Anchor = tuple[str, int, float]
"""Where a signal lands: after the n-th line of `stdout` / `stderr` (n = -1: after the
process started) plus a delay in seconds."""


def _lines(
    proc: subprocess.Popen[bytes], events: queue.Queue[tuple[str, float]]
) -> dict[str, list[bytes]]:
    """Read both streams in threads: each line is kept and announced on `events`."""
    kept: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
    readers: list[threading.Thread] = []

    def read(name: str, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            kept[name].append(line)
            events.put((name, time.time()))
        events.put((name + ":eof", time.time()))

    for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        thread = threading.Thread(target=read, args=(name, stream), daemon=True)
        thread.start()
        readers.append(thread)
    kept["_threads"] = readers  # type: ignore[assignment]
    return kept


def _wait_for(events: queue.Queue[tuple[str, float]], anchor: Anchor, deadline: float) -> None:
    stream, index, _ = anchor
    seen: Counter[str] = Counter()
    while index >= 0 and seen[stream] <= index:
        try:
            name, _when = events.get(timeout=max(0.01, deadline - time.time()))
        except queue.Empty:
            return
        seen[name] += 1
        if name.endswith(":eof") and name.startswith(stream):
            return


def trial(n: int, url: str, sig: signal.Signals, anchor: Anchor, margin: float, t: Tally) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "work"
        folder.mkdir()
        home = Path(tmp) / "home"
        env = _env(home)
        proc = subprocess.Popen(
            _argv(url, f"go t{n}"),
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        events: queue.Queue[tuple[str, float]] = queue.Queue()
        kept = _lines(proc, events)
        _wait_for(events, anchor, time.time() + 300)
        time.sleep(anchor[2])
        alive = proc.poll() is None
        sent_at = time.time()
        if alive:
            proc.send_signal(sig)
        code = proc.wait(timeout=120)
        for thread in kept["_threads"]:  # type: ignore[union-attr]
            thread.join(timeout=30)  # type: ignore[union-attr]
        stderr = b"".join(kept["stderr"]).decode("utf-8", "replace")
        name = sig.name
        where = f"{anchor[0]}#{anchor[1]}+{anchor[2]:.3f}s"
        if not alive:
            t.trials["finished before the signal"] += 1
            return
        t.trials[name] += 1
        t.exits[(name, code)] += 1
        problems: list[str] = []
        if "Traceback" in stderr:
            problems.append("traceback")
        if sig != signal.SIGKILL and code != 130:
            problems.append(f"exit {code}")
        effects = _effects(folder)
        loaded, _store = _session(home)
        if loaded is not None and sig != signal.SIGKILL:
            results = {r.tool_call_id: r for turn in loaded.turns for r in turn.tool_results}
            calls = [c for turn in loaded.turns for c in turn.tool_calls]
            for call in calls:
                if call.id not in results:
                    problems.append(f"unanswered {call.id}")
            for call_id, when in effects:
                if when > sent_at - margin:
                    continue
                t.finished_calls += 1
                result = results.get(call_id)
                if result is None:
                    problems.append(f"lost {call_id} (no result)")
                elif result.is_error and f"finished {call_id}" not in result.text:
                    problems.append(f"lost {call_id}: {result.text[:60]!r}")
        if sig == signal.SIGKILL and loaded is not None:
            again = subprocess.run(
                _argv(url, "--resume", loaded.header.id, "continue"),
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=300,
            )
            if again.returncode != 0:
                tail = again.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
                problems.append(f"resume exit {again.returncode} {tail}")
            effects = _effects(folder)
        seen = Counter(call_id for call_id, _ in effects)
        problems.extend(f"double {c}" for c, k in seen.items() if k > 1)
        for p in problems:
            t.faults[p.split()[0]] += 1
        if problems:
            tail = stderr.strip().splitlines()[-1:] if "Traceback" in stderr else []
            t.lines.append(f"trial {n}: {name} at {where} exit {code}: {problems} {tail}")


def calibrate(url: str) -> tuple[float, dict[str, int]]:
    """The start-up time (first stderr or stdout line) and the lines each stream writes in an
    undisturbed run (the fewest of three; the first run may compile the bytecode)."""
    startup = float("inf")
    counts: dict[str, int] = {}
    for k in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "work"
            folder.mkdir()
            t0 = time.time()
            proc = subprocess.Popen(
                _argv(url, f"go cal{k}"),
                cwd=folder,
                env=_env(Path(tmp) / "home"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            events: queue.Queue[tuple[str, float]] = queue.Queue()
            _lines(proc, events)
            seen: Counter[str] = Counter()
            first: float | None = None
            while not (seen["stdout:eof"] and seen["stderr:eof"]):
                name, when = events.get(timeout=300)
                seen[name] += 1
                if first is None:
                    first = when - t0
            if proc.wait() != 0:
                raise SystemExit("an undisturbed run failed")
            startup = min(startup, first or 0.0)
            for stream in ("stdout", "stderr"):
                counts[stream] = min(counts.get(stream, 1 << 30), seen[stream])
            effects = [c for c, _ in _effects(folder)]
            if sorted(effects) != sorted(f"call_cal{k}_{x}" for x in "abcd"):
                raise SystemExit(f"an undisturbed run left effects {effects}")
    return startup, counts


def anchor_for(rng: random.Random, startup: float, counts: dict[str, int]) -> Anchor:
    """A random instant: during start-up (a fifth of the trials), else after a random line of
    either stream plus up to 0.3 s."""
    if rng.random() < 0.2:
        return ("stdout", -1, rng.uniform(0, startup))
    stream = "stdout" if rng.random() < 0.8 else "stderr"
    return (stream, rng.randrange(counts[stream]), rng.uniform(0, 0.3))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--margin", type=float, default=0.05)
    args = parser.parse_args()
    server = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    startup, counts = calibrate(url)
    print(f"start-up {startup:.2f} s; lines of an undisturbed run: {counts}")
    rng = random.Random(args.seed)
    tally = Tally()
    sigs = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
    for n in range(args.trials):
        trial(n, url, rng.choice(sigs), anchor_for(rng, startup, counts), args.margin, tally)
    server.shutdown()
    for line in tally.lines:
        print(line)
    print(f"trials: {dict(tally.trials)}")
    print(f"exit codes: {dict(sorted(tally.exits.items()))}")
    print(f"calls finished >= {args.margin}s before a TERM/INT: {tally.finished_calls}")
    print(f"faults: {dict(tally.faults)}")
    failing = len(tally.lines)
    print(f"RESULT failing trials: {failing} of {sum(tally.trials.values())}")


if __name__ == "__main__":
    main()
