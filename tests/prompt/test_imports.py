"""`@path` imports (pure, over an injected reader) and the instruction files' size cap."""

from __future__ import annotations

import posixpath

from hypothesis import given
from hypothesis import strategies as st

from tether.prompt.imports import MAX_IMPORT_DEPTH, apply_cap, expand_imports, import_spans

ROOT = "/p"
HOME = "/home/u"


def reader(files: dict[str, str]):
    return files.get


def expand(files: dict[str, str], origin: str = "/p/AGENTS.md"):
    return expand_imports(files[origin], origin, reader(files), allowed=[ROOT, "/cfg"], home=HOME)


def test_an_import_is_replaced_by_the_file_relative_to_the_importing_file() -> None:
    got = expand({"/p/AGENTS.md": "Rules:\n@docs/style.md\nEnd.", "/p/docs/style.md": "Tabs.\n"})
    assert got.text == "Rules:\nTabs.\nEnd."
    assert got.imports == ("/p/docs/style.md",)


def test_nested_imports_are_relative_to_each_file() -> None:
    files = {
        "/p/AGENTS.md": "@docs/a.md",
        "/p/docs/a.md": "A @sub/b.md",
        "/p/docs/sub/b.md": "B",
    }
    assert expand(files).text == "A B"


def test_imports_in_code_spans_and_fences_are_left_alone() -> None:
    text = "`@x.md` and\n```\n@x.md\n```\n~~~md\n@x.md\n~~~\nreal: @x.md"
    got = expand({"/p/AGENTS.md": text, "/p/x.md": "X"})
    assert got.text == text.replace("real: @x.md", "real: X")


def test_a_cycle_is_refused_and_left_as_written() -> None:
    files = {"/p/AGENTS.md": "@a.md", "/p/a.md": "a @AGENTS.md"}
    got = expand(files)
    assert got.text == "a @AGENTS.md"
    assert any("cycle" in p for p in got.problems)


def test_five_levels_are_followed_and_the_sixth_refused() -> None:
    files = {"/p/AGENTS.md": "@l1.md"}
    for i in range(1, 8):
        files[f"/p/l{i}.md"] = f"{i} @l{i + 1}.md"
    got = expand(files)
    assert got.text.startswith("1 2 3 4 5 @l6.md")
    assert len(got.imports) == MAX_IMPORT_DEPTH
    assert any("deeper than 5" in p for p in got.problems)


def test_outside_the_project_and_the_user_folder_is_refused() -> None:
    files = {"/p/AGENTS.md": "@../etc/passwd.txt @~/secret.md @/cfg/ok.md", "/cfg/ok.md": "ok"}
    got = expand(files)
    assert got.text == "@../etc/passwd.txt @~/secret.md ok"
    assert len(got.problems) == 2


def test_a_missing_file_or_an_email_is_not_an_import() -> None:
    text = "mail me@example.com, see @types/node and @nothing."
    assert expand({"/p/AGENTS.md": text}).text == text
    assert import_spans("a@b.md") == []


def test_an_import_line_naming_a_missing_file_is_named_once() -> None:
    """An `@path` import line whose file does not exist was silent: the user never learned
    the import did nothing. A mention in prose (`@types/node`) stays silent."""
    text = "Rules:\n@docs/gone.md\n- @docs/gone.md\nsee @types/node and @x.md in prose\n"
    got = expand({"/p/AGENTS.md": text})
    assert got.text == text and got.imports == ()
    assert got.problems == (
        "/p/AGENTS.md: import docs/gone.md: no readable file at /p/docs/gone.md",
    )


@given(st.text(alphabet=st.characters(blacklist_characters="@", blacklist_categories=("Cs",))))
def test_text_without_imports_is_unchanged(text: str) -> None:
    got = expand_imports(text, "/p/AGENTS.md", lambda _p: "X", allowed=[ROOT], home=HOME)
    assert got.text == text and got.imports == () and got.problems == ()


names = st.text(alphabet="abcdefgh", min_size=1, max_size=4)


@given(st.lists(st.tuples(names, names), min_size=1, max_size=12))
def test_expansion_never_loops_and_imports_only_allowed_files(edges: list[tuple[str, str]]) -> None:
    """Any import graph (cycles included) expands in finite time; every imported file is one
    the graph names, and the imports stay inside the allowed folder."""
    files: dict[str, str] = {}
    for a, b in edges:
        files.setdefault(f"/p/{a}.md", "")
        files[f"/p/{a}.md"] += f" @{b}.md"
        files.setdefault(f"/p/{b}.md", f"{b}")
    origin = f"/p/{edges[0][0]}.md"
    got = expand_imports(files[origin], origin, files.get, allowed=[ROOT], home=HOME)
    assert set(got.imports) <= set(files)
    assert all(posixpath.dirname(i) == ROOT for i in got.imports)


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@given(st.lists(st.tuples(names, texts), max_size=6), st.integers(min_value=0, max_value=600))
def test_the_cap_keeps_prefixes_within_the_budget(files: list[tuple[str, str]], cap: int) -> None:
    got = apply_cap(files, cap)
    assert len(got.texts) == len(files)
    assert sum(len(t.encode()) for t in got.texts) <= cap
    assert all(text.startswith(kept) for (_n, text), kept in zip(files, got.texts, strict=True))
    fits = sum(len(t.encode()) for _n, t in files) <= cap
    assert (got.note == "") == fits
    assert fits == (list(got.texts) == [t for _n, t in files])


def test_the_cap_cuts_at_a_line_end_and_names_what_it_cut() -> None:
    got = apply_cap([("a.md", "x" * 10), ("b.md", "one\ntwo\nthree\n"), ("c.md", "c")], 18)
    assert got.texts == ("x" * 10, "one\ntwo\n", "")
    assert "b.md cut to 8 of 14 bytes" in got.note and "c.md (1 bytes) left out" in got.note
