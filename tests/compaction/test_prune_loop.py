"""Pruning and idle compaction in the agent loop: stubs on the wire, full text in the store,
`recall` brings every pruned needle back (fidelity); the idle trigger with an injected clock;
the session's cache hit rate in the usage line and `/context`."""

from __future__ import annotations

import re
from pathlib import Path

from kit.agents import make_agent
from tether.agent.agent import Agent
from tether.agent.assembly.build import auto_compaction
from tether.agent.events import AgentEvent, CompactionStartEvent
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.idle import IdlePolicy, cache_lifetime_s, idle_compaction_due
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits, estimate_tokens
from tether.compaction.prune import PRUNE_TAG, PrunePolicy
from tether.compaction.recall import recall_text
from tether.messages import TextBlock, Turn, Usage
from tether.providers.base import ModelRequest
from tether.settings import AgentConfig
from tether.testing import Reply, Response, ScriptedProvider, call
from tether.tools.base import tool
from tether.tui.context_view import cache_line
from tether.tui.panels import context_rows_of

STEPS = 40
LIMITS = ModelLimits(context_window=60_000, max_output_tokens=4_000)
POLICY = CompactionPolicy(output_reserve=4_000)  # effective window 56,000
PRUNE = PrunePolicy(trigger=0.6, target=0.4, min_chunk=0.1, keep_recent_turns=6)
STUB_RE = re.compile(re.escape(PRUNE_TAG) + r" dump \{\"n\": (\d+)\}[^\]]*recall turn (\S+) ")


def needle(n: int) -> str:
    return f"NEEDLE-{n}-{(n * 7919) % 10007:05d}"


@tool(safe=True, inline=True)
def dump(n: int) -> str:
    """Dump record n.

    Args:
        n: the record number.
    """
    rows = [f"{n:04d}:{i:03d} " + "d" * 90 for i in range(40)]
    rows.insert(17, needle(n))
    return "\n".join(rows)


class Model:
    """Dumps STEPS records, then (asked) recalls every pruned record named by a stub and
    answers with the needles it read."""

    def __init__(self) -> None:
        self.dumps = 0
        self.recalled = False
        self.provider = ScriptedProvider(self.answer)

    def answer(self, request: ModelRequest) -> Response:
        usage = Usage(
            input_tokens=100,
            cache_read_tokens=max(0, estimate_tokens(request.messages) - 100),
            output_tokens=10,
        )
        if self.dumps < STEPS:
            self.dumps += 1
            return Reply(blocks=(call("dump", n=self.dumps),), usage=usage)
        last = request.messages[-1]
        if "needles" not in last.text and not self.recalled and not last.tool_results:
            return Reply(blocks=(TextBlock(text="dumped"),), usage=usage)
        text = "\n".join(r.text for t in request.messages for r in t.tool_results) + "\n".join(
            t.text for t in request.messages
        )
        if not self.recalled:
            self.recalled = True
            stubs = STUB_RE.findall(text)
            return Reply(
                blocks=tuple(call("recall", turn_id=turn) for _, turn in stubs), usage=usage
            )
        found = sorted(set(re.findall(r"NEEDLE-\d+-\d{5}", text)))
        return Reply(blocks=(TextBlock(text=" ".join(found)),), usage=usage)


def _agent(
    tmp_path: Path, model: Model, events: list[AgentEvent], prune: bool = True, **kw: object
) -> Agent:
    manager = AutoCompaction(
        ContextMonitor(LIMITS, POLICY),
        prune=PRUNE if prune else None,
        **kw,  # type: ignore[arg-type]
    )
    return make_agent(
        model.provider,
        tmp_path,
        tools=[dump],
        events=events,
        exact=False,
        compaction=manager,
        settings={"run": {"max_turns": STEPS + 10}},
    )


async def test_pruned_needles_come_back_through_recall(tmp_path: Path) -> None:
    """Fidelity: early results are pruned on the wire (stubs), the store keeps them whole, and
    the model gets every needle back with `recall` on the turn each stub names."""
    model = Model()
    events: list[AgentEvent] = []
    agent = _agent(tmp_path, model, events)
    await agent.run("dump the records")
    requests = model.provider.requests
    last_dump = requests[STEPS - 1]
    stubs = STUB_RE.findall("\n".join(r.text for t in last_dump.messages for r in t.tool_results))
    assert len(stubs) >= 10  # the early results were pruned on the wire ...
    assert not [e for e in events if isinstance(e, CompactionStartEvent)]  # ... before any summary
    assert estimate_tokens(last_dump.messages) < PRUNE.trigger * 56_000 + 1_500
    history: list[Turn] = agent.history
    for n, turn in stubs:
        assert needle(int(n)) in recall_text(history, turn)  # the store holds the full text
    # recall is offered once something was pruned, not before
    offered = ["recall" in {t.name for t in r.tools} for r in requests]
    assert not offered[0] and offered[-1]
    await agent.run("what were the needles?")
    answer = agent.history[-1].text
    for n, _ in stubs:
        assert needle(int(n)) in answer  # every pruned needle answered through recall


async def test_prefix_changes_only_in_chunks(tmp_path: Path) -> None:
    """Consecutive requests repeat the previous one as an exact prefix except at a few prune
    steps."""
    model = Model()
    agent = _agent(tmp_path, model, [])
    await agent.run("dump the records")
    reqs = list(model.provider.requests)[:STEPS]
    changed = [
        i
        for i in range(1, len(reqs))
        if reqs[i].messages[: len(reqs[i - 1].messages)]
        != reqs[i - 1].messages[: len(reqs[i].messages)]
    ]
    assert 1 <= len(changed) <= 4


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def _idle_run(
    tmp_path: Path, pause: float, *, prune: bool = False, **idle: object
) -> tuple[list[str], int]:
    """12 dumps (~12,000 tokens, below the prune trigger), a pause of `pause` seconds on the
    injected clock, a second prompt: (compaction reasons, stubs in its first request)."""
    model = Model()
    events: list[AgentEvent] = []
    clock = Clock()
    agent = _agent(
        tmp_path,
        model,
        events,
        prune=prune,
        idle=IdlePolicy(min_tokens=5_000, **idle),  # type: ignore[arg-type]
        clock=clock,
    )
    model.dumps = STEPS - 12
    await agent.run("dump the records")
    assert not [e for e in events if isinstance(e, CompactionStartEvent)]
    first = len(model.provider.requests)
    assert not STUB_RE.search(_results(model.provider.requests[first - 1]))
    clock.now += pause
    model.recalled = True  # the second prompt just answers
    await agent.run("and now?")
    stubs = len(STUB_RE.findall(_results(model.provider.requests[first])))
    return [e.reason for e in events if isinstance(e, CompactionStartEvent)], stubs


def _results(request: ModelRequest) -> str:
    return "\n".join(r.text for t in request.messages for r in t.tool_results)


async def test_idle_longer_than_the_cache_compacts_first(tmp_path: Path) -> None:
    assert await _idle_run(tmp_path, 301.0) == (["idle"], 0)


async def test_idle_longer_than_the_cache_prunes_first(tmp_path: Path) -> None:
    """With pruning on, the cold request prunes every old result (no cache is left to keep),
    which brings the view under the threshold: no summary needed."""
    assert await _idle_run(tmp_path, 301.0, prune=True) == ([], 10)


async def test_idle_within_the_cache_lifetime_does_nothing(tmp_path: Path) -> None:
    assert await _idle_run(tmp_path, 299.0) == ([], 0)
    assert await _idle_run(tmp_path, 299.0, prune=True) == ([], 0)


async def test_idle_lifetime_override(tmp_path: Path) -> None:
    assert await _idle_run(tmp_path, 301.0, lifetime_s=3_600.0) == ([], 0)


def test_idle_rule_and_lifetimes() -> None:
    policy = IdlePolicy(min_tokens=1_000)
    assert cache_lifetime_s("anthropic", "anthropic") == 300
    assert cache_lifetime_s("anthropic", "anthropic", extended=True) == 3_600
    assert cache_lifetime_s("openai", "openai-responses", extended=True) == 86_400
    assert cache_lifetime_s("local", "openai-chat") is None  # the local KV cache stays
    assert cache_lifetime_s("ollama", "ollama") is None
    assert idle_compaction_due(idle_s=301, lifetime_s=300, tokens=1_001, policy=policy)
    assert not idle_compaction_due(idle_s=301, lifetime_s=300, tokens=1_000, policy=policy)
    assert not idle_compaction_due(idle_s=None, lifetime_s=300, tokens=9_999, policy=policy)
    assert not idle_compaction_due(idle_s=10**6, lifetime_s=None, tokens=9_999, policy=policy)


def test_settings_build_the_driver() -> None:
    on = auto_compaction(
        LIMITS, AgentConfig.model_validate({"context": {"idle_compact": True, "cache_ttl_s": 60}})
    )
    assert on is not None and on.pruner is not None and on.idle is not None
    assert on.idle.policy.lifetime_s == 60 and on.idle.policy.min_tokens == 50_000
    off = auto_compaction(LIMITS, AgentConfig.model_validate({"context": {"prune": False}}))
    assert off is not None and off.pruner is None and off.idle is None


def test_cache_hit_rate_in_the_usage_line_and_context() -> None:
    u = Usage(input_tokens=100, cache_read_tokens=850, cache_write_tokens=50, output_tokens=7)
    assert u.cache_hit_rate == 0.85
    assert u.summary_line() == "in 1000 (cache 900, 85 % hit) / 7 out"
    assert Usage(input_tokens=5).summary_line() == "in 5 / 0 out"
    assert Usage().cache_hit_rate is None
    turns = [
        Turn(id="a1", role="assistant", usage=Usage(input_tokens=1_000, cache_write_tokens=0)),
        Turn(id="a2", role="assistant", usage=Usage(input_tokens=100, cache_read_tokens=900)),
    ]
    assert cache_line(turns).startswith("prompt cache: 45 % hit (900 of 2,000 prompt tokens")
    assert cache_line([]) == "prompt cache: no usage reported yet"


async def test_context_rows_show_the_view_as_sent(tmp_path: Path) -> None:
    """`/context` counts the pruned view (what is sent), and says which results are pruned."""
    model = Model()
    agent = _agent(tmp_path, model, [])
    await agent.run("dump the records")
    rows = context_rows_of(agent)  # type: ignore[arg-type]
    pruned = [r for r in rows if "pruned (recall brings them back)" in r.label]
    assert len(pruned) >= 10
    sent = estimate_tokens(model.provider.requests[-1].messages)
    assert sum(r.tokens for r in rows if r.index is not None) < sent + 2_000
