"""The permission rule grammar (`tool` or `tool(pattern)`): parsed here, on the settings' floor,
so `permissions.allow` / `ask` / `deny` are checked when the settings are read; what a rule
matches is `tether.permissions.rules` (pure: data in, data out)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from tether.errors import RuleError

CLAUDE_CODE_TOOLS = {
    "webfetch": "web_fetch",
    "websearch": "web_search",
    "multiedit": "edit",
    "todowrite": "todo",
}
"""Claude Code's tool names that are not tether's lower-cased (`WebFetch(domain:x.com)` is
`web_fetch(domain:x.com)`); `Bash`, `Read`, `Edit`, `Write`, `Glob`, `Grep`, `LS`, `Task` are
tether's names in another case."""

_RULE = re.compile(r"^\s*([A-Za-z0-9_*?.\-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule.

    Attributes:
        tool: the tool name or glob, lower case.
        pattern: what is inside the parentheses (None: every call of the tool).
        text: the rule as written.
    """

    tool: str
    pattern: str | None
    text: str

    def names(self, tool_name: str) -> bool:
        """Whether the rule is about tool `tool_name`."""
        return fnmatch.fnmatchcase(tool_name.lower(), self.tool)


def parse_rule(text: str) -> Rule:
    """Parse `tool` or `tool(pattern)`.

    Raises:
        RuleError: not that shape, an empty pattern, a `*`-only tool glob with a pattern.
    """
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise RuleError(f"a permission rule must be a string, not {type(text).__name__}")
    m = _RULE.match(text)
    if m is None:
        raise RuleError(
            f"permission rule {text!r} does not parse: write tool or tool(pattern), "
            "e.g. bash(pytest *), edit(src/**), mcp__github__*"
        )
    tool, pattern = m.group(1).lower(), m.group(2)
    tool = CLAUDE_CODE_TOOLS.get(tool, tool)
    if pattern is not None:
        pattern = pattern.strip()
        if not pattern:
            raise RuleError(
                f"permission rule {text!r} has an empty pattern: write {tool} or {tool}(*)"
            )
        if pattern == "*":
            pattern = None
    return Rule(tool=tool, pattern=pattern, text=text.strip())
