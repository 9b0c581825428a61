"""Loop hygiene: pure decisions the loop takes around each tool call (state in `Hygiene`).

Owns:
    * dedup, per tool (`DedupRule`): a hasher of (name, arguments) → key, and a policy:
        - `replay`: a call whose key matches an earlier successful call of that tool is not run;
          the earlier result is returned, marked as replayed (first text part `REPLAYED`). The
          replay memory is cleared whenever a non-`safe` tool runs (it may have changed what
          the earlier call saw).
        - `block`: more than `after` identical consecutive calls of that tool (same key, no other
          call of that tool in between) → each is answered `Blocked: <reason>` (is_error) without
          running, until the input changes.
    * shell canonicalization for repeat detection (`canonical_shell`, `shell_key`).
    * stale-read notices: after a successful write/edit of a path the model read (successfully)
      before, ONE system note per read → write transition ("file X changed since you read it…"),
      carried in `ToolRunResult.system_notes` (rendered after the turn's tool_results).
Does not own: running calls, events, persistence (the loop); no I/O, no clock.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from tether.compaction.reads import FileRules, touched
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock
from tether.tools.exec.run import ToolRunResult

if TYPE_CHECKING:
    from tether.settings.model import LoopRuleSettings

Hasher = Callable[[str, Mapping[str, Any]], str | None]
"""(tool name, arguments) → a key; equal keys mean "the same call"; None opts the call out
of its tool's rule (it is neither counted nor blocked nor replayed, and breaks no streak)."""

REPLAYED = (
    "(replayed: this call is identical to the earlier call {call_id}; the tool was not run "
    "again and its earlier result follows)"
)
BLOCKED = (
    "Blocked: this `{name}` call repeats the previous {n} `{name}` calls with the same input; "
    "it was not run. {reason}"
)
DEFAULT_REASON = "Change the input or take a different approach."
"""The end of `BLOCKED` unless a rule gives its own `reason`."""
STALE_READ = (
    "file {path} changed since you read it (your `{tool}` call just modified it): the earlier "
    "`read` output of this file in the conversation is out of date; read it again before "
    "relying on those lines."
)


def default_key(name: str, arguments: Mapping[str, Any]) -> str:
    """Canonical JSON of (name, arguments) (keys sorted)."""
    return json.dumps([name, arguments], sort_keys=True, ensure_ascii=False, default=str)


# --- shell canonicalization ------------------------------------------------------------------


_POLL_AFTER = frozenset({";", "&&", "&", "||"})
"""What may follow `sleep N` in a trailing poll (then anything)."""
_SLEEP_FOR = re.compile(r"[0-9]+(?:\.[0-9]+)?[smhd]?")
_CD_DIR = re.compile(r"""(?:"[^"]*"|'[^']*'|[^\s;&|'"\\]+)""")


def _verbatim(token: str) -> bool:
    """Whether `token` means what its text says once whitespace around it is collapsed: no
    backslash (an escape may protect a blank), and no quote unless the token is one quoted
    string (a quote inside a word hides blanks from the non-POSIX lexer)."""
    if "\\" in token:
        return False
    if token[0] in "'\"":
        return len(token) > 1 and token[-1] == token[0] and token[0] not in token[1:-1]
    return "'" not in token and '"' not in token


def _tokens(cmd: str) -> list[tuple[str, int]]:
    """`cmd` as shell tokens with their offsets: `shlex` (not POSIX: quotes stay in the token;
    `&&`, `;`, `|` ... are tokens of their own; `#` is not a comment). From the first token
    that is not `_verbatim` (or an unclosed quote) on, the rest is one token, as written
    (trailing blanks dropped when its quotes and escapes are complete)."""
    lex = shlex.shlex(cmd, posix=False, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = ""
    out: list[tuple[str, int]] = []
    at = 0
    try:
        for token in lex:
            start = cmd.find(token, at)
            if start < 0 or cmd[at:start].strip() or not _verbatim(token):
                break
            out.append((token, start))
            at = start + len(token)
        else:
            return out
    except ValueError:  # an unclosed quote
        pass
    rest = cmd[at:].lstrip()
    if _complete(rest):
        rest = _rstrip_unescaped(rest)
    if rest:
        out.append((rest, len(cmd) - len(cmd[at:].lstrip())))
    return out


def _complete(text: str) -> bool:
    """Balanced quotes and no dangling escape (so trailing blanks are not quoted text)."""
    try:
        shlex.split(text)
    except ValueError:
        return False
    return True


def _rstrip_unescaped(text: str) -> str:
    """`text` without its trailing blanks, up to one a backslash escapes (an odd run of
    backslashes before it: `a\\ ` keeps its escaped blank, `a\\\\ ` does not)."""
    end = len(text)
    while end and text[end - 1].isspace():
        body = text[: end - 1]
        if (len(body) - len(body.rstrip("\\"))) % 2:
            break
        end -= 1
    return text[:end]


def _render(cmd: str, tokens: list[tuple[str, int]]) -> str:
    """The tokens as `cmd` spells them, a run of whitespace between two of them as one space
    (none where they touch)."""
    out: list[str] = []
    end: int | None = None
    for token, start in tokens:
        if end is not None and start > end:
            out.append(" ")
        out.append(token)
        end = start + len(token)
    return "".join(out)


_CD_THEN = frozenset({"&&", ";"})


def canonical_shell(command: str) -> str:
    """A shell command in a canonical form for repeat detection (not for running): whitespace
    outside quotes collapsed, every leading `cd DIR &&` or `cd DIR;` removed, and a trailing
    poll (`& sleep N; …`, `&& sleep N …`, `; sleep N …`) cut off. Idempotent."""
    tokens = _tokens(command)
    words = [t for t, _ in tokens]
    first = 0
    while words[first : first + 1] == ["cd"]:
        if words[first + 1 : first + 2] in (["&&"], [";"]):
            skip = 2
        elif words[first + 2 : first + 3] and words[first + 2] in _CD_THEN and _CD_DIR.fullmatch(
            words[first + 1]
        ):
            skip = 3
        else:
            break
        if first + skip >= len(words):
            break  # `cd DIR &&` with nothing after it is kept
        first += skip
    last = len(words)
    for k in range(first, len(words) - 2):
        if (
            words[k] in ("&", "&&", ";")
            and words[k + 1] == "sleep"
            and _SLEEP_FOR.fullmatch(words[k + 2])
            and (k + 3 == len(words) or words[k + 3] in _POLL_AFTER)
        ):
            last = k
            break
    return _render(command, tokens[first:last])


def shell_key(name: str, arguments: Mapping[str, Any]) -> str:
    """A hasher for shell tools: the canonical `command` argument (other arguments ignored)."""
    command = arguments.get("command")
    return f"{name}\0{canonical_shell(command) if isinstance(command, str) else command!r}"


# --- configuration and state -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DedupRule:
    """How repeated calls of one tool are handled.

    Attributes:
        policy: `replay` (answer an identical call with the earlier result) or `block`.
        after: for `block`, how many identical consecutive calls run before the next ones are
            blocked (≥ 1).
        key: the hasher deciding what "identical" means (None for a call: opted out).
        reason: for `block`, what the refusal tells the model to do instead (default
            `DEFAULT_REASON`).
    """

    policy: Literal["replay", "block"]
    after: int = 3
    key: Hasher = default_key
    reason: str = DEFAULT_REASON

    def __post_init__(self) -> None:
        if self.after < 1:
            raise ValueError(f"DedupRule.after must be ≥ 1, got {self.after}")


def _default_dedup() -> dict[str, DedupRule]:
    return {"bash": DedupRule(policy="block", after=5, key=shell_key)}


@dataclass(frozen=True, slots=True, kw_only=True)
class HygieneConfig:
    """Which tools get which hygiene.

    Attributes:
        dedup: tool name → its dedup rule (default: `bash` blocked after 5 identical
            consecutive commands, compared by `shell_key`).
        reads: tool name → the argument holding the path it reads (stale-read tracking).
        writes: tool name → the argument holding the path it changes.
    """

    dedup: Mapping[str, DedupRule] = field(default_factory=_default_dedup)
    reads: Mapping[str, str] = field(default_factory=lambda: {"read": "path"})
    writes: Mapping[str, str] = field(default_factory=lambda: {"write": "path", "edit": "path"})


def _skipping(key: Hasher, patterns: list[re.Pattern[str]], shell: bool) -> Hasher:
    """`key`, opting out (None) a call whose command (`shell`: canonical) or canonical JSON
    arguments match one of `patterns`."""

    def hasher(name: str, arguments: Mapping[str, Any]) -> str | None:
        command = arguments.get("command")
        if shell and isinstance(command, str):
            subject = canonical_shell(command)
        else:
            subject = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
        if any(p.search(subject) for p in patterns):
            return None
        return key(name, arguments)

    return hasher


SHELL_TOOLS = frozenset({"bash"})
"""Tools whose calls are compared by their canonical `command` (`shell_key`)."""


def loop_breaker_config(rules: Mapping[str, LoopRuleSettings]) -> HygieneConfig:
    """The hygiene rules the settings' `tools.loop_breaker` section gives, over the built-in
    ones (a tool's entry replaces its built-in rule; `off` removes it).

    Raises:
        re.error: a `skip` pattern that is not a regular expression.
    """
    dedup = dict(_default_dedup())
    for tool, rule in rules.items():
        if rule.policy == "off":
            dedup.pop(tool, None)
            continue
        shell = tool in SHELL_TOOLS
        key: Hasher = shell_key if shell else default_key
        if rule.skip:
            key = _skipping(key, [re.compile(p) for p in rule.skip], shell)
        dedup[tool] = DedupRule(
            policy=rule.policy, after=rule.after, key=key, reason=rule.reason or DEFAULT_REASON
        )
    return HygieneConfig(dedup=dedup)


class Hygiene:
    """The hygiene state of one agent (calls are checked in call order).

    Args:
        config: the rules.
        root: the working folder, to normalize relative paths (string operations only).
    """

    def __init__(self, config: HygieneConfig | None = None, *, root: str = "/") -> None:
        self.config = config or HygieneConfig()
        self.root = root
        self.rules = FileRules(reads=self.config.reads, writes=self.config.writes, root=root)
        """What reads and what changes a file: the detection the stale-read notice shares
        with the wire view's stale-read elision and the read-state map."""
        self._streaks: dict[str, tuple[str, int]] = {}
        self._replay: dict[str, tuple[str, ToolResultBlock]] = {}
        self._read: set[str] = set()

    def _key(self, call: ToolCallBlock) -> tuple[DedupRule, str] | None:
        rule = self.config.dedup.get(call.name)
        if rule is None or call.invalid is not None:
            return None
        key = rule.key(call.name, call.arguments)
        return None if key is None else (rule, key)

    def check(self, call: ToolCallBlock) -> ToolRunResult | None:
        """Decide before running `call`: None to run it, else the result to use instead
        (replayed or blocked). Call once per call, in call order."""
        found = self._key(call)
        if found is None:
            return None
        rule, key = found
        if rule.policy == "replay":
            hit = self._replay.get(f"{call.name}\0{key}")
            if hit is None:
                return None
            earlier_id, block = hit
            note = TextBlock(text=REPLAYED.format(call_id=earlier_id))
            return ToolRunResult(
                block=replace(block, tool_call_id=call.id, content=(note, *block.content))
            )
        last, n = self._streaks.get(call.name, ("", 0))
        n = n + 1 if last == key else 1
        self._streaks[call.name] = (key, n)
        if n <= rule.after:
            return None
        text = BLOCKED.format(name=call.name, n=n - 1, reason=rule.reason)
        return ToolRunResult(
            block=ToolResultBlock(
                tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True
            )
        )

    def record(self, call: ToolCallBlock, result: ToolRunResult, *, safe: bool) -> ToolRunResult:
        """Learn from a call that ran (not one `check` answered); returns `result`, with a
        stale-read note added when due."""
        ok = not result.block.is_error
        if not safe:
            self._replay.clear()
        rule = self.config.dedup.get(call.name)
        if ok and rule is not None and rule.policy == "replay" and call.invalid is None:
            # hashed only here, for replay rules (a `block` rule's key is not needed again)
            key = rule.key(call.name, call.arguments)
            if key is not None:
                self._replay[f"{call.name}\0{key}"] = (call.id, result.block)
        read, written = touched(call, ok=ok, rules=self.rules)
        if read is not None:
            self._read.add(read)
        if written is not None and written in self._read:
            self._read.discard(written)
            shown = call.arguments.get(self.config.writes[call.name])
            note = STALE_READ.format(path=shown, tool=call.name)
            return replace(result, system_notes=(*result.system_notes, note))
        return result
