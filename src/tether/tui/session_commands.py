"""The TUI's commands about the session itself: `/model` (a picker without an argument),
`/new`, `/sessions` (a list, or resume one), `/resume` (a picker of this folder's sessions
first, or resume one by id or name), `/rename NAME`, `/fork`.

Owns: `session_command` (running them) and `switch` (close this session, open another or a
new one).
Does not own: the pickers (`tether.tui.pickers`), names (`tether.session.names`).
"""

from __future__ import annotations

from tether.errors import ConfigError
from tether.plural import counted
from tether.session.names import NAME_EVENT, check_free, check_name
from tether.tui.host import AppHost
from tether.tui.pickers import PickerScreen, model_choices, session_choices

__all__ = ["session_command", "switch"]


async def switch(app: AppHost, resume: str | None) -> None:
    """Close the current session and open `resume` (None: a new one)."""
    assert app.opened is not None
    await app.opened.aclose()
    await app.transcript.clear()
    app.feed.clear()
    await app.open_session(resume)


async def session_command(app: AppHost, name: str, arg: str) -> None:
    """Run `/model`, `/new`, `/sessions`, `/resume`, `/rename` or `/fork` with `arg`.

    Raises:
        ConfigError: a model that cannot be switched to, a name that cannot be one.
    """
    assert app.opened is not None
    agent = app.agent
    if name == "model":
        if not arg:
            current = f"{agent.provider.name}/{agent.provider.model}"
            screen = PickerScreen(
                f"model (now {current})",
                model_choices(agent.config, current),
                no_match="no model matches; /model PROVIDER/NAME takes any name",
            )
            app.push_screen(screen, callback=lambda key: _model_picked(app, key))
            return
        agent.switch_model(arg)
        app.note(f"model: {agent.provider.name}/{agent.provider.model}")
        return
    if name == "rename":
        writer = app.opened.writer
        if writer is None:
            app.note("/rename: this session is not stored")
            return
        if not arg:
            app.note("usage: /rename NAME")
            return
        named = check_name(arg)
        if app.opened.store is not None:
            check_free(app.opened.store.list(), named, own_id=writer.id)
        writer.append_event(NAME_EVENT, {"name": named})
        app.note(
            f"session {writer.id} is named {named!r} (tether chat --resume {named!r} opens it)"
        )
        return
    if app.busy:
        app.note(f"/{name}: wait until the agent is idle (or Esc)")
        return
    if name == "new":
        await switch(app, None)
        app.note("new session")
        return
    await _stored(app, name, arg)


def _model_picked(app: AppHost, key: str | None) -> None:
    if key is None:
        return
    try:
        app.agent.switch_model(key)
    except ConfigError as exc:
        app.note(f"/model: {exc}")
        return
    app.note(f"model: {app.agent.provider.name}/{app.agent.provider.model}")
    app.update_status()


async def _stored(app: AppHost, name: str, arg: str) -> None:
    """`/sessions [id]`, `/resume [id or name]`, `/fork`: they need the session store."""
    assert app.opened is not None
    store = app.opened.store
    if store is None:
        app.note(f"/{name}: this session is not stored")
        return
    if name == "sessions" and not arg:
        lines = [
            f"{i.id}  {counted(i.turn_count, 'message'):>12}  {(i.name + ': ') if i.name else ''}"
            f"{(i.preview or '')[:60]}{f'  (fork of {i.parent[0]})' if i.parent else ''}"
            for i in store.list()
        ]
        app.note("\n".join(["sessions (newest first; /resume opens a picker):", *lines[:30]]))
        return
    if name == "resume" and not arg:
        writer = app.opened.writer
        current = None if writer is None else writer.id
        choices = session_choices(store.list(), app.agent.root, current=current)
        if not choices:
            app.note("/resume: no other session is stored")
            return
        screen = PickerScreen("resume which session? (this folder's first)", choices)
        app.push_screen(screen, callback=lambda key: _resume_picked(app, key))
        return
    if name in ("sessions", "resume"):
        found = store.find(arg, app.agent.root)
        if found is None:
            app.note(f"/{name}: no session {arg!r}")
            return
        await switch(app, found)
        app.note(f"resumed {found}")
        return
    writer, history = app.opened.writer, app.agent.history
    if writer is None or not history:
        app.note("/fork: nothing to fork yet")
        return
    fork = store.create(None, cwd=str(app.agent.root), parent=(writer.id, history[-1].id))
    fork.close()
    parent = writer.id
    await switch(app, fork.id)
    app.note(f"forked {parent} → {fork.id}")


def _resume_picked(app: AppHost, key: str | None) -> None:
    if key is not None:
        app.run_worker(_resume(app, key), group="agent")


async def _resume(app: AppHost, key: str) -> None:
    await switch(app, key)
    app.note(f"resumed {key}")
