"""Per-turn overhead of tether's tool loop, by the protocol of ../shared/bench-peers/_common.py.

The scripted provider answers turns 1..N-1 with one `echo(text="turn k")` call and turn N with
"done"; `echo` returns 2,048 bytes; the session is persisted to a temporary JSONL file. Prints the
protocol's `RESULT {json}` line (so it runs beside the peers in run_all.py) and a readable summary.

    python bench/turn_overhead.py [--turns 200] [--window 20]
    TETHER_BENCH_TOOL=thread python bench/turn_overhead.py   # echo as a default (worker-thread) tool
    BENCH_PEERS_EXTRA="tether=$PWD/.venv/bin/python:$PWD/bench/turn_overhead.py" ... run_all.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_PEERS = Path(
    os.environ.get("BENCH_PEERS_DIR", Path(__file__).resolve().parents[2] / "shared" / "bench-peers")
)
sys.path.insert(0, str(_PEERS))

import asyncio  # noqa: E402
import tempfile  # noqa: E402

import _common  # noqa: E402  # pyright: ignore[reportMissingImports]

from tether import AgentConfig  # noqa: E402
from tether.agent.loop import Agent  # noqa: E402
from tether.messages import ToolCallBlock, turn_to_json  # noqa: E402
from tether.providers.base import ModelRequest  # noqa: E402
from tether.session import SessionStore  # noqa: E402
from tether.testing import Response, ScriptedProvider  # noqa: E402
from tether.tools.base import tool  # noqa: E402

THREAD_TOOL = os.environ.get("TETHER_BENCH_TOOL") == "thread"
"""Run echo as a default sync tool (in a worker thread) instead of an `inline=True` one."""


def echo(text: str) -> str:
    """Echo a 2 KB string."""
    return _common.echo_impl(text)


def main() -> None:
    args = _common.parse_args()
    clock = _common.Clock(args.turns)

    def model(_request: ModelRequest) -> Response:
        k = clock.tick()
        if clock.is_last(k):
            return _common.FINAL_TEXT
        return ToolCallBlock(id=f"call_{k}", name="echo", arguments={"text": f"turn {k}"})

    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        writer = store.create(cwd=tmp)
        agent = Agent(
            ScriptedProvider(model),
            tools=[tool(echo, inline=not THREAD_TOOL)],
            root=tmp,
            session=writer,
            config=AgentConfig(run={"max_turns": args.turns + 1}),
        )
        clock.start()
        result = asyncio.run(agent.run("Call echo until told otherwise."))
        clock.stop()
        writer.close()
        assert result.text == _common.FINAL_TEXT, result.text
        history = agent.history
        json_bytes = sum(len(turn_to_json(t)) for t in history)
        _common.report(
            "tether",
            "0.1.0",
            clock,
            history,
            len(history),
            json_bytes,
            args.window,
            notes=f"scripted provider, {'worker-thread' if THREAD_TOOL else 'inline'} sync echo "
            "tool, session persisted to JSONL",
        )
        ivals = [(b - a) * 1e3 for a, b in zip(clock.calls, clock.calls[1:], strict=False)]
        w = args.window
        early = sorted(ivals[:w])[len(ivals[:w]) // 2]
        late = sorted(ivals[-w:])[len(ivals[-w:]) // 2]
        size_kib = writer.path.stat().st_size // 1024
        print(
            f"tether turn overhead: {len(clock.calls)} turns; median ms/turn "
            f"turns 1-{w}: {early:.3f}, turns {len(ivals) - w + 1}-{len(ivals)}: {late:.3f} "
            f"(late/early {late / early:.2f}x); session file {size_kib} KiB"
        )


if __name__ == "__main__":
    main()
