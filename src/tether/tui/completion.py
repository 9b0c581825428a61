"""What the prompt completes as you type: a bare `/name` (the commands) and the `@path` word
under the cursor (the project's files and folders, fuzzy, `.gitignore` respected).

Owns: `path_matches` (fuzzy ranking, Textual's `Matcher`: the command palette's), `Completer`
(the entries of the completion list for a prompt's text, and Tab's completion of it when no
list shows; the project's paths listed once, on the first `@`), `menu_key` (the prompt's keys
while the list shows: Up / Down / Shift+Tab move the highlight, Tab / Enter take the entry, Esc
closes it), `accept_entry` (pure: the prompt with an entry taken).
Does not own: the list widget (`tether.tui.user_commands.CompletionList`), the project's
paths (`tether.agent.mentions.project_paths`), the commands (`tether.tui.commands`).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from textual.fuzzy import Matcher

from tether.agent.mentions import project_paths
from tether.tui.commands import complete_prompt
from tether.tui.user_commands import MAX_COMPLETIONS, CompletionList, completion_entries

__all__ = ["Completer", "accept_entry", "last_mention", "mention_text", "menu_key", "path_matches"]

_MAX_SCORED = 300
"""The most candidates the fuzzy matcher scores per keystroke (about 30 µs each): the
likeliest ones (the query in the name, then in the path, shorter first)."""


_OPEN_QUOTED = re.compile(r'(?:^|(?<=\s))@"([^"]*)\Z')
"""A final `@"…` mention still being typed (its closing quote not yet typed)."""


def _final_mention(text: str) -> tuple[int, str] | None:
    """Where the `@path` word `text` ends in starts (the `@`) and its query: `@word`, or a
    quoted `@"my fi` still open; None when it does not end in one."""
    m = _OPEN_QUOTED.search(text)
    if m is not None:
        return m.start(), m.group(1)
    word = text.rsplit(None, 1)[-1] if text and not text[-1].isspace() else ""
    if not word.startswith("@") or word.startswith("@@"):
        return None
    return len(text) - len(word), word[1:]


def last_mention(text: str) -> str | None:
    """The `@path` word `text` ends in, without the `@` (and the opening quote of a quoted
    one still being typed); None: it does not end in one."""
    found = _final_mention(text)
    return None if found is None else found[1]


def mention_text(path: str) -> str:
    """The `@path` word that mentions `path`: `@path`, or `@"path"` when it holds whitespace
    (an unquoted `@my file.txt` is `@my` and a word; `tether.agent.mentions` reads the quoted
    form, `@"..."` with no `"` inside, as Claude Code completes it)."""
    if any(c.isspace() for c in path) and '"' not in path:
        return f'@"{path}"'
    return f"@{path}"


def subsequence_filter(query: str, paths: Sequence[str]) -> list[str]:
    """The `paths` holding `query`'s characters in order (case ignored): a regex without
    backtracking (`[^a]*a[^b]*b…`), about 1 µs a path."""
    pattern = "".join(f"[^{re.escape(c)}]*{re.escape(c)}" for c in query)
    match = re.compile(pattern, re.IGNORECASE).match
    return [p for p in paths if match(p)]


def path_matches(
    query: str, paths: Sequence[str], limit: int = MAX_COMPLETIONS, *, filtered: bool = False
) -> list[str]:
    """The `paths` matching `query` best first (fuzzy: its characters in order; ties: the
    shorter path first), at most `limit`; an empty `query`: the top-level entries.
    `filtered`: `paths` all hold the query's characters in order already."""
    if not query:
        return [p for p in paths if "/" not in p.rstrip("/")][:limit]
    candidates = list(paths) if filtered else subsequence_filter(query, paths)
    if len(candidates) > _MAX_SCORED:  # the likeliest first: the query in the name, the path
        low = query.lower()

        def likely(p: str) -> tuple[int, int]:
            lp = p.lower()
            return (0 if low in lp.rstrip("/").rsplit("/", 1)[-1] else 1 if low in lp else 2, len(p))

        candidates = heapq.nsmallest(_MAX_SCORED, candidates, key=likely)
    matcher = Matcher(query)  # Textual's command palette's: scores the few left
    scored = [(matcher.match(p), p) for p in candidates]
    scored = [(s, p) for s, p in scored if s > 0]
    scored.sort(key=lambda sp: (-sp[0], len(sp[1]), sp[1]))
    return [p for _s, p in scored[:limit]]


class Completer:
    """The completions of the prompt in the project at `root` (None: no session yet)."""

    def __init__(self, root: Callable[[], Path | None]) -> None:
        self._root = root
        self._paths: list[str] | None = None
        self._listed: Path | None = None
        self._last: tuple[str, list[str] | None] = ("", None)

    def paths(self) -> list[str]:
        """The project's paths (listed once per project)."""
        root = self._root()
        if root is None:
            return []
        if self._paths is None or self._listed != root:
            self._paths, self._listed = project_paths(root), root
            self._last = ("", None)
        return self._paths

    def entries(
        self, text: str, commands: Sequence[tuple[str, str, str]]
    ) -> list[tuple[str, str]]:
        """The completion list for `text` as (value, line): the matching commands for a bare
        `/name`, the matching paths for a final `@word`."""
        query = last_mention(text)
        if query is None or self._root() is None:
            return completion_entries(text, commands)
        found = path_matches(query, self._pool(query), filtered=bool(query))
        return [(mention_text(p), mention_text(p)) for p in found if p != query]  # not typed yet

    def _pool(self, query: str) -> Sequence[str]:
        """The paths `query` is matched among: a query extending the last one (a key typed)
        searches only what the last one matched."""
        paths = self.paths()
        if not query:
            self._last = ("", None)
            return paths
        last, found = self._last
        pool = found if found is not None and last and query.startswith(last) else paths
        self._last = (query, subsequence_filter(query, pool))
        return self._last[1] or []

    def forget(self) -> None:
        """List the project's paths again at the next `@` (files may have come or gone)."""
        self._paths, self._last = None, ("", None)

    def complete(self, text: str, commands: Sequence[str]) -> str | None:
        """Tab: `text` with its `/command` completed as far as the candidates agree, or its
        final `@word` replaced by the best path match; None when nothing changes."""
        final = _final_mention(text)
        if final is None or self._root() is None:
            return complete_prompt(text, commands)
        start, query = final
        found = path_matches(query, self.paths(), limit=1)
        if not found or found[0] == query:
            return None
        return text[:start] + mention_text(found[0])


def accept_entry(text: str, value: str) -> str:
    """`text` with the completion `value` taken: a `/command` replaces the text, an `@path`
    the final `@word`. Pure."""
    if not value.startswith("@"):
        return value
    final = _final_mention(text)
    if final is None:
        return text
    return text[: final[0]] + value


class Prompt(Protocol):
    """The prompt editor as `menu_key` sees it."""

    text: str

    def move_cursor_to_end(self) -> None: ...


def menu_key(menu: CompletionList, prompt: Prompt, key: str) -> bool:
    """Handle `key` in the prompt while the completion list shows (False: the list is shut,
    or the key is not the list's): Up / Down (and Shift+Tab) move the highlight; Tab and
    Enter take the highlighted entry (the list then shuts, but stays open on a folder; Enter
    on an entry that changes nothing sends the prompt); Esc shuts the list."""
    if not menu.is_open:
        return False
    if key in ("up", "down", "shift+tab"):
        menu.move(1 if key == "down" else -1)
        return True
    if key == "escape":
        menu.close(prompt.text)
        return True
    value = menu.current
    if key not in ("tab", "enter") or value is None:
        return False
    taken = accept_entry(prompt.text, value)
    if taken == prompt.text and key == "enter":
        return False
    if not taken.endswith("/"):  # a folder stays open on its entries
        menu.close(taken)
    prompt.text = taken
    prompt.move_cursor_to_end()
    return True
