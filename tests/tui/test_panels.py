"""`/context` per turn, `/timeline` and the settings screen (`/settings`, F2): Pilot tests over
the scripted provider, and property tests of the pure parts (`tether.tui.context_view`,
`tether.tui.settings_view`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.widgets import DataTable, Input, Select, Static, Switch

from kit.tui import SIZE, idle, notes, scripted_app, send, status
from tether.compaction.pressure import estimate_tokens
from tether.messages import (
    CompactSummaryBlock,
    TextBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.session import SessionStore
from tether.settings import settings_path
from tether.testing import Reply, call
from tether.tools.exec.normalize import render_stub
from tether.tui.commands import COMMANDS, KEYS
from tether.tui.context_view import ADDED_LABEL, PART_LABELS, context_parts, context_rows
from tether.tui.panels import ContextScreen, TimelineScreen
from tether.tui.settings_screen import SettingsScreen
from tether.tui.settings_view import flatten, setting_rows
from tether.tui.status import context_figure
from tether.wire import CONTINUE_TEXT, build_view
from tether.wire.markers import render_marker


def _table(screen: Any, selector: str = "DataTable") -> DataTable[str]:
    return cast(DataTable[str], screen.query_one(selector, DataTable))


def _rows(table: DataTable[str]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


# -- /context ---------------------------------------------------------------------------------


def _stored_with_marker_and_stub(tmp_path: Path) -> SessionStore:
    store = SessionStore(tmp_path / "sessions")
    stub = render_stub("x" * 3000, path=str(tmp_path / "big.txt"), size_bytes=60_000, lines=900)
    with store.create("ctx", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "first question"))
        w.append(text_turn("a1", "assistant", "first answer"))
        block = CompactSummaryBlock(
            summary="the user asked a first question", replaces_turn_ids=("u1", "a1")
        )
        w.append(Turn(id="m1", role="user", content=(block,)))
        w.append(text_turn("u2", "user", "list the logs"))
        ls = ToolCallBlock(id="c2", name="bash", arguments={"command": "ls logs"})
        w.append(Turn(id="a2", role="assistant", content=(TextBlock(text="Listing."), ls)))
        w.append(Turn(id="r2", role="user", content=(tool_result("c2", stub),)))
        w.append(text_turn("a3", "assistant", "done"))
    return store


async def test_context_shows_each_turn_with_its_tokens_and_the_bar(tmp_path: Path) -> None:
    store = _stored_with_marker_and_stub(tmp_path)
    app, _ = scripted_app(tmp_path, [], store=store, resume="ctx")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)
        view = app.agent.current_view()
        rows = _rows(_table(app.screen))
        assert len(rows) == 2 + len(view)
        assert [r[1] for r in rows[:2]] == ["system", "tools"]
        turn_rows = rows[2:]
        assert [r[0] for r in turn_rows] == [str(i + 1) for i in range(len(view))]
        figure = context_figure(app.agent)
        assert figure is not None
        # one total (trial5): every row together is the headline's figure
        assert sum(int(r[2].replace(",", "")) for r in rows) == figure[0]
        assert f"{figure[0]:,} tokens" in str(app.screen.query(Static).first().render())
        kinds = [r[1] for r in turn_rows]
        assert kinds[0] == "summary" and "the user asked" in turn_rows[0][4]
        assert "persisted" in kinds
        persisted = turn_rows[kinds.index("persisted")]
        assert "1 persisted (58.6 KB on disk)" in persisted[4]
        text = "\n".join(str(s.render()) for s in app.screen.query(Static))
        assert "-token effective window" in text
        assert "marker summaries" in text and "persisted stubs" in text
        await pilot.press("pagedown", "end")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ContextScreen)


async def test_context_marks_the_turn_tether_added_to_the_request(tmp_path: Path) -> None:
    """The pairing pass's `Continue from where you stopped.` user turn was listed in /context
    as if the user had typed it: it is marked as tether's, the stored turns are not."""
    store = SessionStore(tmp_path / "sessions")
    with store.create("cut", cwd=str(tmp_path)) as w:  # an answer cut short: assistant last
        w.append(text_turn("u1", "user", "write the report"))
        w.append(text_turn("a1", "assistant", "The report starts"))
    app, _ = scripted_app(tmp_path, [], store=store, resume="cut")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)
        assert [t.id for t in app.agent.current_view()][-1] == "a1~continue"
        labels = [r[4] for r in _rows(_table(app.screen))[2:]]
    assert labels == [
        "write the report",
        "The report starts",
        f"{ADDED_LABEL} {CONTINUE_TEXT}",
    ]


def test_context_rows_mark_every_turn_the_wire_passes_add() -> None:
    stored = (
        text_turn("a0", "assistant", "an assistant turn first"),
        Turn(id="a1", role="assistant", content=(ToolCallBlock(id="c1", name="ls", arguments={}),)),
        text_turn("u2", "user", "typed"),
    )
    view = build_view(stored, "anthropic")
    rows = context_rows(view, system_tokens=0, tools_tokens=0)[2:]
    added = [r.turn_id for r in rows if r.label.startswith(ADDED_LABEL)]
    assert added == [t.id for t in view if t.id not in {"a0", "a1", "u2"}] and added
    assert all(not r.label.startswith(ADDED_LABEL) for r in rows if r.turn_id in {"a0", "u2"})


def test_context_bar_parts_have_distinct_letters() -> None:
    letters = [label[0].upper() for label in PART_LABELS.values()]
    assert len(set(letters)) == len(letters)


@st.composite
def views(draw: st.DrawFn) -> list[Turn]:
    out: list[Turn] = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "result", "stub", "summary"]))
        text = draw(st.text(max_size=80))
        if kind in ("user", "assistant"):
            out.append(text_turn(f"t{i}", kind, text))
        elif kind == "result":
            out.append(Turn(id=f"t{i}", role="user", content=(tool_result(f"c{i}", text),)))
        elif kind == "stub":
            stub = render_stub(text, path=f"/r/c{i}.txt", size_bytes=5000 + i, lines=1)
            out.append(Turn(id=f"t{i}", role="user", content=(tool_result(f"c{i}", stub),)))
        else:
            block = CompactSummaryBlock(summary=text or "s", replaces_turn_ids=())
            out.append(render_marker(Turn(id=f"t{i}", role="user", content=(block,))))
    return out


@settings(max_examples=100, deadline=None)
@given(views(), st.integers(0, 5000), st.integers(0, 5000))
def test_context_rows_one_per_turn_summing_to_the_pressure_estimate(
    view: list[Turn], system: int, tools: int
) -> None:
    before = copy.deepcopy(view)
    rows = context_rows(view, system_tokens=system, tools_tokens=tools)
    assert view == before
    assert len(rows) == len(view) + 2
    assert [r.turn_id for r in rows[2:]] == [t.id for t in view]
    assert sum(r.tokens for r in rows[2:]) == estimate_tokens(view)
    for row, turn in zip(rows[2:], view, strict=True):
        if "<persisted-output" in "".join(r.text for r in turn.tool_results):
            assert row.kind == "persisted"
        if turn.text.startswith("[Context summary]"):
            assert row.kind == "summary"
    parts = context_parts(rows)
    assert [label for label, _ in parts] == list(PART_LABELS.values())
    assert sum(n for _, n in parts) == estimate_tokens(view) + system + tools


# -- /timeline --------------------------------------------------------------------------------


async def test_timeline_screen_shows_the_chart(tmp_path: Path) -> None:
    script = [
        Reply(blocks=(TextBlock(text=t),), usage=Usage(input_tokens=n, output_tokens=5))
        for t, n in (("one", 120), ("two", 180))
    ]
    app, _ = scripted_app(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        for p in ("a", "b"):
            await send(pilot, p)
            await idle(app, pilot)
        await send(pilot, "/timeline")
        assert isinstance(app.screen, TimelineScreen)
        assert [p.prompt_tokens for p in app.screen.timeline.points] == [120, 180]
        text = str(app.screen.query_one("#legend", Static).render())
        assert text.startswith("2 requests")
        assert "tokens per request" in str(app.screen.query_one("#chart", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TimelineScreen)


# -- settings ---------------------------------------------------------------------------------


async def test_settings_screen_changes_the_session_and_esc_changes_nothing(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [call("read", path="x"), "done"], approval="auto")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("f2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        rows = {r[0]: r for r in _rows(_table(screen, "#all"))}
        assert rows["tools.approval"][1:] == ["flag", '"auto"']  # the test's config, not a file
        assert rows["run.max_turns"][1:] == ["default", "50"]
        # Esc: nothing changes
        screen.query_one("#max_turns", Input).value = "7"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SettingsScreen)
        assert app.agent.max_turns == 50
        # change the model, the turns and compaction, apply with Enter
        await send(pilot, "/settings")
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        screen.query_one("#auto_compact", Switch).value = False
        screen.query_one("#max_turns", Input).value = "7"
        model = screen.query_one("#model", Input)
        model.value = "ollama/llama3.2"
        model.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, SettingsScreen)
        agent = app.agent
        assert agent.max_turns == 7 and agent.compaction is None
        assert "ollama/llama3.2" in status(app)
        assert "settings for this session: model = ollama/llama3.2" in notes(app)
        # the table says where the values come from now
        await pilot.press("f2")
        await pilot.pause()
        rows = {r[0]: r for r in _rows(_table(app.screen, "#all"))}
        assert rows["run.max_turns"][1:] == ["session", "7"]
        assert rows["context.auto_compact"][1:] == ["session", "false"]
        await pilot.press("escape")


async def test_settings_screen_bad_value_is_shown_and_nothing_applied(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/settings")
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        screen.query_one("#max_turns", Input).value = "0"
        await pilot.click("#apply")
        await pilot.pause()
        assert app.screen is screen
        assert "invalid setting" in str(screen.query_one("#error", Static).render())
        assert app.agent.max_turns == 50
        screen.query_one("#max_turns", Input).value = "3"
        screen.query_one("#model", Input).value = "nosuch/model"
        await pilot.click("#apply")
        await pilot.pause()
        assert app.screen is screen and app.agent.max_turns == 50
        assert "scripted/scripted" in status(app)
        await pilot.press("escape")


async def test_settings_save_writes_the_user_file(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        select = cast(Select[str], screen.query_one("#approval", Select))
        select.value = "auto-edit"
        screen.query_one("#max_turns", Input).value = "12"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, SettingsScreen)
        path = settings_path("user")
        saved = json.loads(path.read_text())
        assert saved["tools"]["approval"] == "auto-edit" and saved["run"]["max_turns"] == 12
        assert "model" in saved  # the live model differs from what the (empty) files give
        assert f"saved to {path}" in notes(app)
        if not app.agent.safe_mode:
            assert app.agent.approval_mode == "auto-edit" and "approval: auto-edit" in status(app)
        await pilot.press("f2")
        await pilot.pause()
        rows = {r[0]: r for r in _rows(_table(app.screen, "#all"))}
        assert rows["run.max_turns"][1:] == ["session", "12"]  # not the config it was built with
        await pilot.press("escape")


def test_setting_rows_sources() -> None:
    config = {"model": "a/b", "tools": {"safe": False, "approval": "ask"}, "run": {"max_turns": 9}}
    files = {"model": "a/b", "tools": {"safe": False, "approval": "auto"}, "run": {"max_turns": 9}}
    layers = [("user", {"model": "x/y", "run": {"max_turns": 3}}), ("project", {"model": "a/b"})]
    rows = {
        r.key: r
        for r in setting_rows(
            config,
            files=files,
            layers=cast(Any, layers),
            live={"tools.safe": True, "run.max_turns": 9},
        )
    }
    assert rows["tools.safe"].source == "session" and rows["tools.safe"].value == "true"
    assert rows["tools.approval"].source == "flag"
    assert rows["model"].source == "project"
    assert rows["run.max_turns"].source == "user"


json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_obj = st.recursive(
    st.dictionaries(st.text("abc", min_size=1, max_size=3), json_leaf, max_size=4),
    lambda inner: st.dictionaries(
        st.text("abc", min_size=1, max_size=3), inner, min_size=1, max_size=3
    ),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(json_obj)
def test_flatten_keeps_every_leaf(data: dict[str, Any]) -> None:
    before = copy.deepcopy(data)
    flat = flatten(data)
    assert data == before
    for key, value in flat.items():
        node: Any = data
        for part in key.split("."):
            node = node[part]
        assert node == value
    rows = setting_rows(data, files=data, layers=[], live={})
    assert [r.key for r in rows] == sorted(flat)
    assert all(r.source == "default" for r in rows)


def test_the_tui_page_tables_list_every_command_and_key() -> None:
    page = (Path(__file__).parents[2] / "docs" / "tui.md").read_text()
    for command, _ in COMMANDS:
        assert f"| `{command}`" in page, command
    for key, _ in KEYS:
        assert f"| {key} |" in page, key


async def test_context_headline_is_the_footers_figure(tmp_path: Path) -> None:
    """trial4: `/context` said 90 % (of the whole window, by its own estimate) while the footer
    said 112 % (of the effective window, by the last request's pressure). Both now show one
    figure, of one denominator, and the panel says which."""
    import re

    from tether.tui.status import StatusBar

    app, provider = scripted_app(tmp_path, ["x " * 900, "ok"])
    provider.context_window = 4_000
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "y " * 900)
        await idle(app, pilot)
        await send(pilot, "again")
        await idle(app, pilot)
        footer = str(app.query_one(StatusBar).render())
        gauge = re.search(r"ctx ~?(\d+)%", footer)
        assert gauge is not None, footer
        await send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)
        text = "\n".join(str(s.render()) for s in app.screen.query(Static))
        assert f"{gauge.group(1)}% of the " in text and "-token effective window" in text, text
        assert "footer" in text and "kept for the reply" in text
