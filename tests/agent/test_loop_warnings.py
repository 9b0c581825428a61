"""A provider `WarningEvent` (e.g. Ollama's silent prompt truncation) reaches the agent's
event stream as a `warning` event; the run goes on."""

from __future__ import annotations

from pathlib import Path

from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, WarningEvent, event_to_dict
from tether.agent.host import Host
from tether.providers.base import StreamDone, TextDelta, TextEnd, TextStart
from tether.providers.base import StreamWarning as ProviderWarning
from tether.testing import ScriptedProvider


async def test_provider_warning_is_emitted(tmp_path: Path) -> None:
    warning = ProviderWarning(
        kind="truncated_prompt",
        message="cut",
        estimated_prompt_tokens=9000,
        reported_prompt_tokens=2048,
    )
    provider = ScriptedProvider(
        [
            [
                TextStart(index=0),
                TextDelta(index=0, text="ok"),
                TextEnd(index=0),
                warning,
                StreamDone(stop_reason="end_turn"),
            ]
        ]
    )
    events: list[AgentEvent] = []
    result = await Agent(
        provider,
        tools=[],
        root=tmp_path,
        host=Host(on_event=events.append),
    ).run("hi")
    assert result.text == "ok"
    (w,) = [e for e in events if isinstance(e, WarningEvent) and e.kind == "truncated_prompt"]
    assert event_to_dict(w) == {"type": "warning", "kind": "truncated_prompt", "message": "cut"}
