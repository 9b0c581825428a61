"""Session names (`tether.session.names`): a name is an appended `name` event, the last one
counts, the listing (and its cached index) shows it, and a name finds the newest session so
named, the folder's own first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import ConfigError
from tether.messages import text_turn
from tether.session import SessionStore
from tether.session.names import NAME_EVENT, check_name, session_name


def test_the_last_name_event_names_the_session_in_the_listing_and_the_load(
    store: SessionStore,
) -> None:
    with store.create("a", cwd="/p") as w:
        w.append(text_turn("u1", "user", "fix the login"))
        w.append_event(NAME_EVENT, {"name": "login"})
        w.append_event(NAME_EVENT, {"name": "login bug"})
    (row,) = store.list()
    assert row.name == "login bug" and row.preview == "fix the login"
    assert session_name(store.load("a")) == "login bug"
    (cached,) = store.list()  # from the index this time
    assert cached.name == "login bug"
    with store.open_for_append("a") as w:  # a rename after the listing: the index is refreshed
        w.append_event(NAME_EVENT, {"name": "renamed"})
    assert store.list()[0].name == "renamed"


def test_an_unnamed_session_has_no_name(store: SessionStore) -> None:
    with store.create("a", cwd="/p") as w:
        w.append(text_turn("u1", "user", "hi"))
    assert store.list()[0].name is None and session_name(store.load("a")) is None


def test_find_takes_an_id_then_the_newest_named_session_of_the_folder_first(
    store: SessionStore, tmp_path: Path
) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    for sid, cwd in (("old-here", here), ("new-there", there)):
        with store.create(sid, cwd=str(cwd)) as w:
            w.append_event(NAME_EVENT, {"name": "work"})
    assert store.find("old-here") == "old-here"
    assert store.find("work", here) == "old-here"  # this folder's first
    assert store.find("work", tmp_path / "elsewhere") in ("old-here", "new-there")
    assert store.find("nothing") is None
    assert store.find("has spaces / and slashes") is None  # not an id: no error


def test_check_name_refuses_empty_multiline_and_long_names() -> None:
    assert check_name("  login bug ") == "login bug"
    for bad in ("", "   ", "a\nb", "x" * 101):
        with pytest.raises(ConfigError):
            check_name(bad)
