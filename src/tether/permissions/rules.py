"""Permission rules: `allow` / `ask` / `deny` lists of `tool(pattern)` (data in, data out; the
one I/O: the real path of a call's `path`).

Owns: the rule grammar (`parse_rule`), the rule set (`Rules`: deny > ask > allow, whatever
their order or specificity, as Claude Code evaluates them), a call's `decide` (the action and
the rule that made it), and `suggest` (the rules an "always allow" answer would add).
Does not own: splitting a shell line (`tether.permissions.shell`), asking the user and what a
headless run does with `ask` (`tether.agent.approval`), the settings files.

Grammar: `tool` or `tool(pattern)`. `tool` is a tool name, `*` / `?` globs allowed
(`mcp__github__*`), compared without case; `tool` alone or `tool(*)` matches every call of it.
The pattern depends on the call:
- `bash(pattern)`: each simple command of the line (`tether.permissions.shell`) is matched
  against the pattern as its words joined by spaces; `*` matches any text, spaces included;
  a pattern ending in ` *` also matches the command alone (`pytest *` matches `pytest` and
  `pytest -x`, not `pytester`); `prefix:*` (Claude Code's older spelling) matches the prefix
  alone or followed by a space or a colon (`npm run test:*`: `npm run test`, `npm run test:unit`).
  A line is allowed only when every command is, denied when any is, asked when any matches
  an `ask` rule; a line that cannot be parsed matches no `allow` rule and, when rules name
  `bash`, is asked.
- `domain:HOST`: the host of the call's `url` argument is HOST or a subdomain of it (`*`
  globs allowed): `web_fetch(domain:docs.python.org)`.
- a call with a `path` argument (`read`, `write`, `edit`, `ls`, `glob`, `grep`): a gitignore
  style glob (pathspec) over the path, Claude Code's four kinds: `//abs/**` an absolute path,
  `~/x/**` a path below the home folder, `/src/**` anchored at the working folder, `src/**` or
  `./src/**` relative to the working folder (`edit(src/**)`). The call's path is compared
  resolved: `~` expanded, made absolute against the working folder, `..` folded, and also as
  its real path (symlinks followed): a `deny`/`ask` rule matches when either spelling does, an
  `allow` rule only when both do. So `read(~/.ssh/**)` catches `/home/u/.ssh/id_rsa` and
  `../../home/u/.ssh/id_rsa` alike. (Reading the real path is the one I/O here.)
- any other call: a glob over each of its string arguments (one matching is enough).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import urlsplit

import pathspec

from tether.errors import RuleError as RuleError
from tether.permissions.shell import Unparsable, split_forms, without_global_options
from tether.settings.rules import Rule as Rule
from tether.settings.rules import parse_rule as parse_rule

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[Action, ...] = ("deny", "ask", "allow")
"""In the order they win."""

BASH = "bash"
SUBCOMMAND_TOOLS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "uv",
        "pip",
        "docker",
        "kubectl",
        "go",
        "make",
        "poetry",
        "gh",
        "bun",
        "deno",
        "dotnet",
        "mvn",
        "gradle",
        "brew",
        "apt",
        "apt-get",
    }
)
"""Commands whose second word names what they do (`git commit`): "always allow" keeps it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What the rules say about one call.

    Attributes:
        action: `allow`, `ask`, `deny`, or None when no rule decides (the approval mode does).
        rule: the rule that made it (None: no rule, or a line that cannot be parsed).
        part: for `bash`, the command the rule matched (or that no rule allowed).
        reason: one line for the user and the model.
        unmatched: for `bash`, the commands no rule matched (what "always allow" suggests).
    """

    action: Action | None
    rule: Rule | None = None
    part: str | None = None
    reason: str = ""
    unmatched: tuple[str, ...] = ()


NO_RULE = Decision(action=None)


@dataclass(frozen=True, slots=True)
class Rules:
    """The rule lists of the `permissions` settings section, parsed.

    Raises (from `of`): RuleError: a rule that does not parse.
    """

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    _extra_allow: list[Rule] = field(default_factory=lambda: [], compare=False)

    @classmethod
    def of(
        cls, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()
    ) -> Rules:
        """Parse the three lists."""
        return cls(
            allow=tuple(map(parse_rule, allow)),
            ask=tuple(map(parse_rule, ask)),
            deny=tuple(map(parse_rule, deny)),
        )

    def __bool__(self) -> bool:
        return bool(self.allow or self.ask or self.deny or self._extra_allow)

    def add_allow(self, text: str) -> Rule:
        """Add an allow rule for the rest of this agent's life ("always allow").

        Raises:
            RuleError: it does not parse.
        """
        rule = parse_rule(text)
        self._extra_allow.append(rule)
        return rule

    def listed(self, action: Action) -> tuple[Rule, ...]:
        """The rules of one list (allow includes the ones added by `add_allow`)."""
        if action == "allow":
            return (*self.allow, *self._extra_allow)
        return self.ask if action == "ask" else self.deny

    def names_tool(self, tool_name: str) -> bool:
        """Whether any rule is about `tool_name`."""
        return any(r.names(tool_name) for a in ACTIONS for r in self.listed(a))

    def decide(self, tool_name: str, arguments: Mapping[str, Any], root: str = "") -> Decision:
        """The action for a call of `tool_name` with `arguments` (module docstring); `root`
        is the working folder (absolute paths inside it are made relative)."""
        if not self:
            return NO_RULE
        command = arguments.get("command")
        if tool_name == BASH and isinstance(command, str):
            return self._decide_bash(command)
        path = arguments.get("path", arguments.get("file_path"))
        spellings = call_paths(path, root) if isinstance(path, str) else ()
        for action in ACTIONS:
            for rule in self.listed(action):
                if rule.names(tool_name) and _matches_call(
                    rule, arguments, spellings, every=action == "allow"
                ):
                    return Decision(action=action, rule=rule, reason=_said(action, rule))
        return NO_RULE

    def _decide_bash(self, command: str) -> Decision:
        parts = split_forms(command)
        if isinstance(parts, Unparsable):
            if self.names_tool(BASH):
                return Decision(
                    action="ask",
                    reason=f"{parts.reason}, so it cannot be checked against the permission rules",
                )
            return NO_RULE
        found: dict[Action, tuple[Rule, str]] = {}
        unmatched: list[str] = []
        for part, plain, harmless in parts:
            hit = self._bash_part(part, plain, harmless)
            if hit is None:
                unmatched.append(part)
            else:
                found.setdefault(hit[0], (hit[1], part))
        for action in ("deny", "ask"):
            if action in found:
                rule, part = found[action]
                return Decision(
                    action=action,
                    rule=rule,
                    part=part,
                    reason=_said(action, rule, part),
                    unmatched=tuple(unmatched),
                )
        if "allow" in found and not unmatched:
            rule, part = found["allow"]
            return Decision(action="allow", rule=rule, part=part, reason=_said("allow", rule))
        return Decision(action=None, unmatched=tuple(unmatched))

    def _bash_part(self, part: str, plain: str, harmless: bool) -> tuple[Action, Rule] | None:
        """The first rule matching one command: as written, or without the global options
        before its subcommand (`git -C . push` as `git push`); for an `allow` rule that second
        form counts only when every option dropped was harmless (`--no-pager`, not `-c`)."""
        for action in ACTIONS:
            forms = (part,) if plain == part or (action == "allow" and not harmless) else (part, plain)
            for rule in self.listed(action):
                if rule.names(BASH) and (
                    rule.pattern is None or any(command_matches(rule.pattern, f) for f in forms)
                ):
                    return action, rule
        return None


def names_no_tool(rule: Rule, known: Iterable[str]) -> bool:
    """Whether `rule` can never match: its tool (or glob) names none of the `known` tool names
    and is not an MCP name (`mcp__server__tool`, `mcp_read_resource`: their servers list them
    once started)."""
    if rule.tool.startswith("mcp_"):
        return False
    return not any(rule.names(name) for name in known)


def _said(action: Action, rule: Rule, part: str | None = None) -> str:
    what = f" (`{part}`)" if part else ""
    verb = {"allow": "allowed", "ask": "to be asked", "deny": "denied"}[action]
    return f"{verb} by the permission rule {rule.text}{what}"


@lru_cache(maxsize=1024)
def _command_regex(pattern: str) -> re.Pattern[str]:
    tail = ""
    if pattern.endswith(":*"):  # Claude Code's older prefix form: the prefix, then a space
        pattern, tail = pattern[:-2], "(?:[ :].*)?"  # or (read literally) a colon
    elif pattern.endswith(" *"):
        pattern, tail = pattern[:-2], "(?: .*)?"
    rx = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    rx += tail
    return re.compile(rx, re.DOTALL)


def command_matches(pattern: str, command: str) -> bool:
    """Whether one simple command (words joined by spaces) matches a `bash` pattern."""
    return _command_regex(pattern).fullmatch(command) is not None


@lru_cache(maxsize=1024)
def _path_matcher(pattern: str) -> Callable[[str], bool]:
    spec = pathspec.PathSpec.from_lines("gitignore", [pattern])  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    match: Callable[[str], bool] = spec.match_file  # pyright: ignore[reportUnknownMemberType]
    return match


def relative_path(path: str, root: str) -> str | None:
    """`path` relative to `root`, normalized with `/` (None: outside it)."""
    norm = posixpath.normpath(path.replace("\\", "/"))
    if posixpath.isabs(norm):
        base = root.rstrip("/")
        if not base or not (norm == base or norm.startswith(base + "/")):
            return None
        norm = posixpath.relpath(norm, base)
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


def _home() -> str:
    return os.path.expanduser("~").replace("\\", "/")


def call_paths(path: str, root: str) -> tuple[tuple[str, str], ...]:
    """The resolved spellings of a call's `path`, each with the working folder to compare it
    with: `~` expanded, made absolute against `root`, normalized; then its real path (symlinks
    followed) against `root`'s real path, when that differs. Without a `root` a relative
    path stays relative."""
    p = path.replace("\\", "/")
    if p == "~" or p.startswith("~/"):
        p = _home() + p[1:]
    if not posixpath.isabs(p) and root:
        p = posixpath.join(root, p)
    norm = posixpath.normpath(p)
    out = [(norm, root)]
    if posixpath.isabs(norm):
        real, real_root = os.path.realpath(norm), os.path.realpath(root) if root else ""
        if (real, real_root) != (norm, root):
            out.append((real, real_root))
    return tuple(out)


def _absolute_patterns(pattern: str) -> tuple[str, ...] | None:
    """A path pattern naming an absolute place (`//abs/…`, `~/…`) as absolute gitignore
    patterns (the home folder as written and as its real path), else None."""
    if pattern.startswith("//"):
        return ("/" + pattern.lstrip("/"),)
    if pattern == "~" or pattern.startswith("~/"):
        home = _home().rstrip("/")
        real = os.path.realpath(home)
        return tuple(dict.fromkeys(h + pattern[1:] for h in (home, real)))
    return None


def _path_matches(
    pattern: str, spellings: tuple[tuple[str, str], ...], *, every: bool
) -> bool:
    """Whether a path rule's `pattern` matches the call's path (its `call_paths` spellings;
    module docstring): any of them, or with `every` all of them."""
    absolute = _absolute_patterns(pattern)
    if pattern.startswith("./"):  # relative to the working folder: anchored there
        pattern = "/" + pattern[2:].lstrip("/")
    hits: list[bool] = []
    for cand, base in spellings:
        if absolute is not None:
            hit = posixpath.isabs(cand) and any(
                _path_matcher(a)(cand.lstrip("/")) for a in absolute
            )
        else:
            rel = relative_path(cand, base)
            hit = rel is not None and _path_matcher(pattern)(rel)
        hits.append(hit)
    return all(hits) if every else any(hits)


def _matches_call(
    rule: Rule,
    arguments: Mapping[str, Any],
    spellings: tuple[tuple[str, str], ...],
    *,
    every: bool = False,
) -> bool:
    pattern = rule.pattern
    if pattern is None:
        return True
    if pattern.startswith("domain:"):
        url = arguments.get("url")
        if not isinstance(url, str):
            return False
        host = (urlsplit(url).hostname or "").lower()
        want = pattern[len("domain:") :].strip().lower()
        return fnmatch.fnmatchcase(host, want) or host.endswith("." + want)
    if spellings:  # the call has a path
        return _path_matches(pattern, spellings, every=every)
    return any(isinstance(v, str) and fnmatch.fnmatchcase(v, pattern) for v in arguments.values())


def suggest(
    tool_name: str, arguments: Mapping[str, Any], decision: Decision, root: str = ""
) -> tuple[str, ...]:
    """The allow rules an "always allow" answer to this call would add: for `bash`, one per
    command no rule matched (its name, with the subcommand of `git`-like tools, then ` *`);
    for a path, its folder (`edit(src/**)`) or the file at the top; else the tool's name."""
    if tool_name == BASH and isinstance(arguments.get("command"), str):
        out: list[str] = []
        for part in decision.unmatched:
            words = part.split(" ")
            if len(words) > 1 and words[0] in SUBCOMMAND_TOOLS and words[1].startswith("-"):
                plain, harmless = without_global_options(words)
                if not harmless:  # `git -C x status`: this command only, not `git *`
                    if f"bash({part})" not in out:
                        out.append(f"bash({part})")
                    continue
                words = plain
            keep = (
                words[:2]
                if (
                    len(words) > 1 and words[0] in SUBCOMMAND_TOOLS and not words[1].startswith("-")
                )
                else words[:1]
            )
            rule = f"bash({' '.join(keep)} *)"
            if rule not in out:
                out.append(rule)
        return tuple(out)
    path = arguments.get("path")
    if isinstance(path, str):
        rel = relative_path(path, root)
        if rel is not None:
            folder = posixpath.dirname(rel)
            return (f"{tool_name}({folder}/**)" if folder else f"{tool_name}({rel})",)
    return (tool_name,)


