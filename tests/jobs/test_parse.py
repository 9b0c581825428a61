"""Task files: good ones parse into tasks; each rejection reason on its own bad file; the due
slot of each schedule kind (pure: text and time in)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.jobs.parse import Rejected, Task, due_slot, parse_folder, parse_task

GOOD = """---
id: nightly
schedule:
  cron: "0 3 * * *"
model: openai/gpt-4o
tools: [read, grep]
max_turns: 7
timeout: 10m
safe: true
---
Summarize the commits.
"""


def test_a_full_task_file_parses() -> None:
    t = parse_task("nightly.md", GOOD)
    assert isinstance(t, Task)
    assert (t.id, t.prompt, t.model, t.tools, t.max_turns, t.timeout_s, t.safe) == (
        "nightly",
        "Summarize the commits.",
        "openai/gpt-4o",
        ("read", "grep"),
        7,
        600.0,
        True,
    )
    assert t.schedule.kind == "cron" and t.schedule.cron == "0 3 * * *"


def test_no_frontmatter_is_a_run_once_task_named_after_its_file() -> None:
    t = parse_task("fix-typos.md", "Fix the typos in README.md\n")
    assert isinstance(t, Task)
    assert (t.id, t.schedule.kind, t.prompt) == ("fix-typos", "once", "Fix the typos in README.md")


@pytest.mark.parametrize(
    ("schedule", "kind"),
    [
        ("  every: 30m", "every"),
        ("  at: 2026-12-01T03:00:00Z", "at"),
        ('  at: "2026-12-01T03:00:00+02:00"', "at"),
        ('  cron: "*/5 * * * *"', "cron"),
    ],
)
def test_each_schedule_kind(schedule: str, kind: str) -> None:
    t = parse_task("t.md", f"---\nschedule:\n{schedule}\n---\ngo\n")
    assert isinstance(t, Task) and t.schedule.kind == kind


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nid: [unclosed\n---\ngo\n", "frontmatter"),
        ("---\n- a list\n---\ngo\n", "frontmatter"),
        ("---\nid: a b\n---\ngo\n", "invalid"),
        ("---\nmax_turns: 0\n---\ngo\n", "invalid"),
        ("---\ncolour: red\n---\ngo\n", "invalid"),
        ("---\ntimeout: soon\n---\ngo\n", "invalid"),
        ("---\nsafe: maybe\n---\ngo\n", "invalid"),
        ("---\nschedule:\n  cron: not a cron\n---\ngo\n", "schedule"),
        ('---\nschedule:\n  cron: "61 * * * *"\n---\ngo\n', "schedule"),
        ("---\nschedule:\n  every: fortnight\n---\ngo\n", "schedule"),
        ("---\nschedule:\n  every: 10ms\n---\ngo\n", "schedule"),
        ("---\nschedule:\n  at: tomorrow\n---\ngo\n", "schedule"),
        ("---\nschedule:\n  at: 2026-12-01T03:00:00\n---\ngo\n", "schedule"),
        ('---\nschedule:\n  every: 1m\n  cron: "* * * * *"\n---\ngo\n', "schedule"),
        ("---\nschedule: {}\n---\ngo\n", "schedule"),
        ("---\nid: x\n---\n   \n\n", "empty_prompt"),
        ("", "empty_prompt"),
    ],
)
def test_each_rejection_reason(text: str, reason: str) -> None:
    r = parse_task("bad.md", text)
    assert isinstance(r, Rejected), r
    assert r.reason == reason
    assert "\n" not in r.describe() and r.describe().startswith("bad.md: ")


def test_duplicate_ids_reject_every_file_with_that_id_and_the_others_run() -> None:
    tasks, rejected = parse_folder(
        [
            ("a.md", "---\nid: same\n---\none\n"),
            ("b.md", "---\nid: same\n---\ntwo\n"),
            ("c.md", "three\n"),
            ("d.md", "---\nmax_turns: -1\n---\nfour\n"),
        ]
    )
    assert [t.id for t in tasks] == ["c"]
    assert [(r.file, r.reason) for r in rejected] == [
        ("a.md", "duplicate_id"),
        ("b.md", "duplicate_id"),
        ("d.md", "invalid"),
    ]


NOW = datetime(2026, 12, 1, 16, 47, 12, tzinfo=UTC)


def _task(front: str) -> Task:
    t = parse_task("t.md", f"---\n{front}\n---\ngo\n")
    assert isinstance(t, Task)
    return t


def test_due_slots() -> None:
    assert due_slot(_task('schedule:\n  cron: "0 3 * * *"'), NOW) == "cron-20261201T030000Z"
    assert due_slot(_task("schedule:\n  every: 30m"), NOW) == "every-20261201T163000Z"
    assert due_slot(_task("schedule:\n  at: 2026-12-01T16:00:00Z"), NOW) == "at-20261201T160000Z"
    assert due_slot(_task("schedule:\n  at: 2026-12-01T17:00:00Z"), NOW) is None
    once = _task("id: o")
    assert due_slot(once, NOW) == f"once-{once.digest[:12]}"


def test_an_edited_run_once_task_is_a_new_slot() -> None:
    a, b = parse_task("t.md", "do a\n"), parse_task("t.md", "do b\n")
    assert isinstance(a, Task) and isinstance(b, Task)
    assert due_slot(a, NOW) != due_slot(b, NOW)


@given(st.text(max_size=300))
def test_parse_never_raises(text: str) -> None:
    assert isinstance(parse_task("x.md", text), Task | Rejected)


@given(
    st.integers(min_value=1, max_value=86_400),
    st.datetimes(
        min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
    ),
)
def test_every_slot_is_stable_within_its_interval(seconds: int, now: datetime) -> None:
    t = _task(f"schedule:\n  every: {seconds}s")
    slot = due_slot(t, now)
    start = datetime.strptime(slot.removeprefix("every-") if slot else "", "%Y%m%dT%H%M%SZ")
    start = start.replace(tzinfo=UTC)
    assert start <= now and (now - start).total_seconds() < max(seconds, 1)


def test_the_jobs_page_example_task_files_parse() -> None:
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "jobs.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```markdown\n(.*?)```", page, flags=re.S)
    assert len(blocks) == 2
    nightly, typos = (parse_task(n, b) for n, b in zip(("x.md", "fix-typos.md"), blocks, strict=True))
    assert isinstance(nightly, Task) and nightly.id == "nightly-report"
    assert nightly.schedule.kind == "cron" and nightly.safe and nightly.timeout_s == 1200
    assert isinstance(typos, Task) and typos.id == "fix-typos" and typos.schedule.kind == "once"
