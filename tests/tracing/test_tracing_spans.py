"""Tracing (issue 16): the span tree of a run with the SDK's in-memory exporter: a run span,
a `chat` span per request with the GenAI attributes, an `execute_tool` span per call, a
`compaction` span with its summary request inside, a subagent's run nested under the tool call
that started it, and the W3C trace context in a `bash` call's environment (`TRACEPARENT`)
under both OS sandboxes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tether import AgentConfig, Runtime
from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.messages import Turn, Usage, text_turn
from tether.providers.base import StreamError
from tether.sandbox.base import SandboxMechanism
from tether.sandbox.detect import available
from tether.settings.model import TracingSettings
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.base import tool
from tether.tools.builtin.toolset import builtin_tools
from tether.tracing import NO_TRACING, tracing_for
from tether.tracing.otel import OtelTracing

USAGE = Usage(input_tokens=100, output_tokens=20, cache_read_tokens=900, cache_write_tokens=50)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def runtime(exporter: InMemorySpanExporter) -> Runtime:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    base = deterministic()
    return Runtime(
        env=base.env,
        sleep=base.sleep,
        rng=base.rng,
        new_id=base.new_id,
        tracing=OtelTracing(provider),
    )


def _by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def test_span_tree_and_genai_attributes(
    tmp_path: Path, runtime: Runtime, exporter: InMemorySpanExporter
) -> None:
    @tool(safe=True)
    def probe(x: int) -> str:
        """Probe.

        Args:
            x: a number.
        """
        return f"probed {x}"

    provider = ScriptedProvider(
        [call("probe", x=1), call("probe", x=2), "done"], usage=USAGE, model="m-1"
    )
    agent = Agent(
        provider,
        config=AgentConfig.model_validate({"run": {"max_output_tokens": 512, "temperature": 0.2}}),
        tools=[probe],
        root=tmp_path,
        runtime=runtime,
        compaction=False,
    )
    result = await agent.run("go")
    assert result.text == "done"
    spans = exporter.get_finished_spans()
    (run,) = _by_name(spans, "invoke_agent tether")
    chats = _by_name(spans, "chat m-1")
    tools = _by_name(spans, "execute_tool probe")
    assert len(chats) == 3 and len(tools) == 2
    assert run.parent is None
    assert all(_parent_id(s) == _span_id(run) for s in (*chats, *tools))
    assert {s.context.trace_id for s in spans if s.context} == {run.context.trace_id}  # type: ignore[union-attr]
    # order: chat, tool, chat, tool, chat
    ordered = sorted((*chats, *tools), key=lambda s: s.start_time or 0)
    assert [s.name.split()[0] for s in ordered] == [
        "chat",
        "execute_tool",
        "chat",
        "execute_tool",
        "chat",
    ]
    a = chats[0].attributes or {}
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "scripted"
    assert a["gen_ai.request.model"] == "m-1"
    assert a["gen_ai.response.model"] == "m-1"
    assert a["gen_ai.request.max_tokens"] == 512
    assert a["gen_ai.request.temperature"] == 0.2
    assert a["gen_ai.usage.input_tokens"] == 1050  # the whole prompt, cached tokens included
    assert a["gen_ai.usage.output_tokens"] == 20
    assert a["gen_ai.usage.cache_read.input_tokens"] == 900
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 50
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("tool_use",)  # type: ignore[arg-type]
    last = chats[-1].attributes or {}
    assert tuple(last["gen_ai.response.finish_reasons"]) == ("end_turn",)  # type: ignore[arg-type]
    t = tools[0].attributes or {}
    assert t["gen_ai.operation.name"] == "execute_tool"
    assert t["gen_ai.tool.name"] == "probe"
    assert t["gen_ai.tool.call.id"] == result.new_turns[1].tool_calls[0].id
    assert t["tether.tool.is_error"] is False
    r = run.attributes or {}
    assert r["gen_ai.operation.name"] == "invoke_agent"
    assert r["gen_ai.usage.output_tokens"] == 60 and r["tether.turns"] == 3
    assert r["tether.stop_reason"] == "end_turn" and r["tether.subagent"] is False


async def test_a_subagent_run_nests_under_the_tool_call_that_started_it(
    tmp_path: Path, runtime: Runtime, exporter: InMemorySpanExporter
) -> None:
    child_provider = ScriptedProvider([call("probe"), "child answer"], model="child-m")

    @tool(safe=True)
    def probe() -> str:
        """Probe."""
        return "ok"

    @tool(safe=True)
    async def delegate(task: str) -> str:
        """Run a second agent on a task.

        Args:
            task: what the child does.
        """
        child = Agent(child_provider, tools=[probe], root=tmp_path, runtime=runtime)
        return (await child.run(task)).text

    provider = ScriptedProvider([call("delegate", task="look"), "parent answer"], model="parent-m")
    agent = Agent(provider, tools=[delegate], root=tmp_path, runtime=runtime)
    result = await agent.run("go")
    assert result.text == "parent answer"
    spans = exporter.get_finished_spans()
    runs = _by_name(spans, "invoke_agent tether")
    assert len(runs) == 2
    parent_run = next(s for s in runs if s.parent is None)
    child_run = next(s for s in runs if s.parent is not None)
    (delegate_span,) = _by_name(spans, "execute_tool delegate")
    assert _parent_id(delegate_span) == _span_id(parent_run)
    assert _parent_id(child_run) == _span_id(delegate_span)
    assert (child_run.attributes or {})["tether.subagent"] is True
    assert (child_run.attributes or {})["gen_ai.request.model"] == "child-m"
    (child_chat_1, child_chat_2) = _by_name(spans, "chat child-m")
    (child_probe,) = _by_name(spans, "execute_tool probe")
    for s in (child_chat_1, child_chat_2, child_probe):
        assert _parent_id(s) == _span_id(child_run)
    assert len({s.context.trace_id for s in spans if s.context}) == 1


@pytest.mark.parametrize("kind", ["bwrap", "landlock"])
async def test_bash_sees_the_tool_calls_trace_context(
    tmp_path: Path, runtime: Runtime, exporter: InMemorySpanExporter, kind: SandboxMechanism
) -> None:
    if available(kind) is None:
        pytest.skip(f"sandbox {kind} is not available on this machine")
    provider = ScriptedProvider([call("bash", command="echo tp=$TRACEPARENT"), "done"])
    agent = Agent(
        provider,
        config=AgentConfig.model_validate({"tools": {"sandbox": kind}}),
        tools=builtin_tools(),
        root=tmp_path,
        runtime=runtime,
    )
    result = await agent.run("go")
    output = result.new_turns[2].tool_results[0].text
    (bash_span,) = _by_name(exporter.get_finished_spans(), "execute_tool bash")
    ctx = bash_span.context
    assert ctx is not None
    assert re.search(rf"tp=00-{ctx.trace_id:032x}-{ctx.span_id:016x}-[0-9a-f]{{2}}\n?", output), (
        output
    )
    # each call gets its own span's context; the agent's base environment is untouched
    assert "TRACEPARENT" not in agent.tool_context.env


async def test_compaction_span_holds_its_summary_request(
    tmp_path: Path, runtime: Runtime, exporter: InMemorySpanExporter
) -> None:
    history: list[Turn] = []
    for k in range(6):
        history.append(text_turn(f"u{k}", "user", f"step {k}: " + "x" * 400))
        history.append(text_turn(f"a{k}", "assistant", f"did step {k}"))
    provider = ScriptedProvider(
        [
            StreamError(
                kind="context_overflow", message="prompt is too long: 210000 tokens > 200000"
            ),
            "Summary: six steps were done.",
            "final",
        ]
    )
    agent = Agent(
        provider,
        root=tmp_path,
        runtime=runtime,
        session=AgentSession(history=tuple(history)),
    )
    result = await agent.run("next")
    assert result.text == "final"
    spans = exporter.get_finished_spans()
    (comp,) = _by_name(spans, "compaction")
    (run,) = _by_name(spans, "invoke_agent tether")
    assert _parent_id(comp) == _span_id(run)
    a = comp.attributes or {}
    assert a["tether.compaction.reason"] == "overflow"
    assert isinstance(a["tether.compaction.turns_replaced"], int)
    assert a["tether.compaction.turns_replaced"] > 0
    chats = _by_name(spans, "chat scripted")
    inside = [s for s in chats if _parent_id(s) == _span_id(comp)]
    assert len(inside) == 1  # the summary request
    failed = [s for s in chats if s.status.status_code == StatusCode.ERROR]
    assert len(failed) == 1 and (failed[0].attributes or {})["error.type"] == "context_overflow"


async def test_retries_are_span_events_and_failures_set_error_status(
    tmp_path: Path, runtime: Runtime, exporter: InMemorySpanExporter
) -> None:
    provider = ScriptedProvider([StreamError(kind="overloaded", message="busy"), "ok"])
    agent = Agent(provider, root=tmp_path, runtime=runtime, compaction=False)
    assert (await agent.run("go")).text == "ok"
    (chat,) = _by_name(exporter.get_finished_spans(), "chat scripted")
    assert [e.name for e in chat.events] == ["retry"]
    assert (chat.events[0].attributes or {})["error.type"] == "overloaded"
    assert chat.status.status_code != StatusCode.ERROR


async def test_a_traceparent_in_the_environment_parents_the_run(
    tmp_path: Path, exporter: InMemorySpanExporter, runtime: Runtime
) -> None:
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    env = {"PATH": "/usr/bin:/bin", "TRACEPARENT": f"00-{trace_id}-{span_id}-01"}
    rt = Runtime(env=env, tracing=runtime.tracing, new_id=runtime.new_id)
    agent = Agent(ScriptedProvider(["hi"]), root=tmp_path, runtime=rt, compaction=False)
    await agent.run("go")
    (run,) = _by_name(exporter.get_finished_spans(), "invoke_agent tether")
    assert run.context is not None and f"{run.context.trace_id:032x}" == trace_id
    assert run.parent is not None and f"{run.parent.span_id:016x}" == span_id


def test_tracing_is_off_unless_configured() -> None:
    assert tracing_for(None, {}) is NO_TRACING
    assert tracing_for(TracingSettings(), {"PATH": "/bin"}) is NO_TRACING
    on = tracing_for(TracingSettings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert on.enabled
    off = tracing_for(
        TracingSettings(enabled=False), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    )
    assert off is NO_TRACING
    explicit = tracing_for(TracingSettings(enabled=True, endpoint="http://127.0.0.1:9"), {})
    assert explicit.enabled
    # one process-wide exporter per endpoint
    assert tracing_for(TracingSettings(enabled=True, endpoint="http://127.0.0.1:9"), {}) is explicit


def test_agent_takes_tracing_from_its_config(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    on = Agent(ScriptedProvider(["x"]), root=tmp_path, runtime=Runtime(env=env))
    assert on.tracing.enabled
    off = Agent(
        ScriptedProvider(["x"]),
        root=tmp_path,
        config=AgentConfig.model_validate({"tracing": {"enabled": False}}),
        runtime=Runtime(env=env),
    )
    assert off.tracing is NO_TRACING


def test_tracing_off_imports_no_opentelemetry(tmp_path: Path) -> None:
    """Tracing off costs no import: a whole run leaves `opentelemetry` out of sys.modules."""
    program = (
        "import sys\n"
        "from tether import Agent, Runtime\n"
        "from tether.testing import ScriptedProvider, call\n"
        "from tether.tools.builtin.toolset import builtin_tools\n"
        f"a = Agent(ScriptedProvider([call('ls'), 'ok']), tools=builtin_tools(), root={str(tmp_path)!r},"
        " runtime=Runtime(env={'PATH': '/usr/bin:/bin'}))\n"
        "assert a.run_sync('go').text == 'ok'\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_missing_extra_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import tether.tracing as tracing_mod
    from tether.errors import ConfigError

    monkeypatch.setitem(sys.modules, "tether.tracing.otel", None)  # import raises ImportError
    with pytest.raises(ConfigError, match=re.escape("pip install 'tether[tracing]'")):
        tracing_mod.tracing_for(TracingSettings(enabled=True), {})
    notes: list[str] = []
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    assert tracing_mod.tracing_for(None, env, note=notes.append) is NO_TRACING
    assert len(notes) == 1 and "tether[tracing]" in notes[0]
