
"""The TUI's speed: time to first paint, time to open a 10,000-turn session, and
keystroke-to-echo latency while the model streams; each against a baseline measured in the
same run.

    first paint     TetherApp (scripted agent) vs a bare Textual App with the same screen
                    size, from construction to the first refresh (headless Pilot).
    open session    resuming a session of `--turns` stored turns (the transcript mounts its
                    last page and, once painted, the page before) vs an empty session;
                    includes reading the file and building the agent over the history.
    keystroke echo  a key sent to the app until the first frame drawn after the prompt editor
                    holds it (the screen update the terminal would get), while a scripted model
                    streams ~100 deltas a second, vs the same with the app idle.
    Pilot.press     the same key through `Pilot.press`, which also waits (twice) for the whole
                    process to be idle for 20 ms (`textual._wait.wait_for_idle`): while the
                    model streams this measures how busy the process is more than the echo.

Run: .venv/bin/python bench/tui.py [--turns 10000] [--keys 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import cast

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Static

from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.messages import text_turn
from tether.providers.base import ModelRequest, StreamEvent
from tether.session import SessionStore
from tether.testing import deterministic, events_for
from tether.tui.app import TetherApp
from tether.tui.opening import Opened
from tether.tui.widgets import PromptInput

SIZE = (120, 40)


class Streaming:
    """A provider streaming `n` text deltas, `gap_s` apart."""

    name = "bench"
    model = "stream"
    target = "anthropic"
    supports_prefill = False
    context_window = 200_000
    max_output_tokens = 32_000

    def __init__(self, n: int, gap_s: float) -> None:
        self.n, self.gap_s = n, gap_s

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        events = events_for("x")
        start, delta, *rest = events
        yield start
        for i in range(self.n):
            await asyncio.sleep(self.gap_s)
            yield type(delta)(index=0, text=f"word {i} ")  # type: ignore[call-arg]
        for e in rest:
            yield e


def app_for(root: Path, provider: object, store: SessionStore | None, resume: str | None) -> TetherApp:
    def factory(host: Host, resume_id: str | None) -> Opened:
        history = store.load(resume_id).turns if store and resume_id else ()
        agent = Agent(
            provider,  # type: ignore[arg-type]
            root=root,
            host=replace(host, note=None),
            session=AgentSession(history=history),
            runtime=deterministic(),
        )
        return Opened(agent)

    return TetherApp(factory, resume=resume)


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("hello")


async def first_paint(make: type[App[None]] | object) -> float:
    t0 = time.perf_counter()
    app = cast("App[None]", make() if callable(make) else make)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        return time.perf_counter() - t0


async def keystrokes(app: TetherApp, n: int, stream: bool) -> tuple[list[float], list[float]]:
    """(key → first frame after the editor holds it, Pilot.press round trip), seconds."""
    echo: list[float] = []
    press: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        frames: list[float] = []
        display = app._display  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType, reportUnknownVariableType]  # textual's own, timed here

        def timed(screen: object, renderable: object) -> None:
            if renderable is not None:
                frames.append(time.perf_counter())
            display(screen, renderable)  # type: ignore[arg-type]

        app._display = timed  # type: ignore[method-assign]
        prompt = app.query_one(PromptInput)
        driver = app._driver  # pyright: ignore[reportPrivateUsage]
        assert driver is not None
        if stream:
            app.start_run("go")
            await asyncio.sleep(0.2)
        for i in range(n):
            before = len(prompt.text)
            t0 = time.perf_counter()
            driver.send_message(events.Key("a", "a"))
            while len(prompt.text) == before:
                await asyncio.sleep(0.0005)
            seen = len(frames)
            while len(frames) == seen:
                await asyncio.sleep(0.0005)
            echo.append(frames[seen] - t0)
            await asyncio.sleep(0.01 + (i % 3) * 0.003)
            before = len(prompt.text)
            t0 = time.perf_counter()
            await pilot.press("a")
            while len(prompt.text) == before:
                await asyncio.sleep(0)
            press.append(time.perf_counter() - t0)
            await asyncio.sleep(0.01 + (i % 3) * 0.003)
        if app.worker is not None:
            app.worker.cancel()
    return echo, press


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(len(xs) * 0.95) - 1)]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = SessionStore(root / "sessions")
        store.create("empty", cwd=tmp).close()
        with store.create("long", cwd=tmp) as w:
            for i in range(args.turns // 2):
                w.append(text_turn(f"u{i}", "user", f"question {i}: " + "lorem ipsum " * 8))
                w.append(text_turn(f"a{i}", "assistant", f"answer {i}: " + "dolor sit " * 12))
        idle = Streaming(0, 0)
        bare = min([await first_paint(Bare) for _ in range(3)])
        ours = min([await first_paint(app_for(root, idle, None, None)) for _ in range(3)])
        print(f"first paint: tether {ours * 1000:.0f} ms, bare Textual app {bare * 1000:.0f} ms "
              f"(ratio {ours / bare:.2f})")
        empty = await first_paint(app_for(root, idle, store, "empty"))
        long = await first_paint(app_for(root, idle, store, "long"))
        print(f"open a {args.turns}-turn session: {long * 1000:.0f} ms, empty session "
              f"{empty * 1000:.0f} ms (ratio {long / empty:.2f})")
        quiet, quiet_press = await keystrokes(app_for(root, Streaming(0, 0), None, None), args.keys, False)
        busy, busy_press = await keystrokes(
            app_for(root, Streaming(100_000, 0.01), None, None), args.keys, True
        )
        for label, b, q in (("keystroke to echo", busy, quiet), ("Pilot.press", busy_press, quiet_press)):
            mb, mq = statistics.median(b), statistics.median(q)
            print(f"{label}: median {mb * 1000:.1f} ms while streaming (p95 {p95(b) * 1000:.1f} ms),"
                  f" {mq * 1000:.1f} ms idle (ratio {mb / mq:.2f})")


if __name__ == "__main__":
    asyncio.run(main())
