"""`call_diff`: the change a write / edit call states by its arguments alone (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.tools.preview import MAX_CALL_DIFF_LINES, call_diff, diff_counts

lines = st.lists(st.text(alphabet="abc -+", max_size=8), max_size=12)


@given(lines)
def test_a_write_is_its_content_as_added_lines(content: list[str]) -> None:
    text = "".join(f"{line}\n" for line in content)
    diff = call_diff("write", {"path": "f.txt", "content": text})
    assert diff is not None and diff.startswith("+++ b/f.txt\n")
    assert diff_counts(diff) == (len(content), 0)


@given(lines, lines)
def test_an_edit_counts_what_it_replaces(old: list[str], new: list[str]) -> None:
    args = {"path": "f.txt", "old_string": "\n".join(old), "new_string": "\n".join(new)}
    before = dict(args)
    diff = call_diff("edit", args)
    assert args == before  # the input is not mutated
    assert diff is not None and diff == call_diff("edit", args)  # deterministic
    added, removed = diff_counts(diff)
    assert added <= len(new) and removed <= len(old)
    assert (added, removed) == (0, 0) or old != new


def test_a_body_line_that_looks_like_a_header_is_counted() -> None:
    diff = call_diff("write", {"path": "f", "content": "++ x\n-- y\n"})
    assert diff is not None and diff_counts(diff) == (2, 0)


def test_other_tools_and_bad_arguments_have_no_diff() -> None:
    assert call_diff("bash", {"command": "ls"}) is None
    assert call_diff("edit", {"path": "f", "old_string": 1, "new_string": "x"}) is None
    assert call_diff("write", {"content": "x"}) is None


def test_a_large_write_is_cut_and_counted() -> None:
    diff = call_diff("write", {"path": "big", "content": "x\n" * (MAX_CALL_DIFF_LINES + 50)})
    assert diff is not None and diff.rstrip("\n").endswith("... 51 more lines")
