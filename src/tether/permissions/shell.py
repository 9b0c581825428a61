"""A shell command line split into the simple commands it runs (tree-sitter-bash, pure).

Owns: `split_command` — every simple command of a line: the parts of pipes, `&&`, `||`, `;`,
subshells, `{ ...; }` groups, loops and conditionals, command and process substitutions
(also inside strings, redirections and here-documents), function bodies, and the script of
`bash -c` / `sh -c` / `eval`; each with the wrappers that only change how a command runs
looked through (`timeout`, `env X=...`, `nice`, `nohup`, `time`, `stdbuf`, `xargs`, `sudo`,
`doas`, `exec`, a leading `X=1`; `/bin/rm` as `rm`), and its words unquoted
(`git commit -m "fix it"` → `git commit -m fix it`). `split_forms` gives each command also
without the global options of `git`, `npm` and `cargo` before their subcommand
(`git -C . --no-pager push` → `git push`), and whether those options were all harmless.
A line the grammar cannot parse, or whose command name is not literal (`$CMD x`), gives
`Unparsable`: what it runs cannot be known.
Does not own: matching commands against rules (`tether.permissions.rules`).

Why tree-sitter-bash: it parses `[[ ]]`, `$(( ))`, `case`, here-documents and functions,
which bashlex (last released 2023) rejects; it is maintained and has Python 3.11 wheels.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

_PARSER = Parser(Language(tree_sitter_bash.language()))
_MAX_DEPTH = 8
"""`bash -c "bash -c '...'"` nests at most this deep (deeper: unparsable)."""


@dataclass(frozen=True, slots=True)
class Unparsable:
    """A command line whose commands cannot be known, and why."""

    reason: str


WRAPPERS: dict[str, frozenset[str]] = {
    # wrapper -> its options that take a value (the value is skipped with the option)
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "xargs": frozenset(
        {
            "-n",
            "-L",
            "-I",
            "-d",
            "-P",
            "-s",
            "-E",
            "-a",
            "--max-args",
            "--max-lines",
            "--replace",
            "--delimiter",
            "--max-procs",
            "--max-chars",
            "--eof",
            "--arg-file",
        }
    ),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "sudo": frozenset(
        {"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host",
         "-p", "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U",
         "--other-user"}
    ),
    "doas": frozenset({"-u", "-C"}),
}
"""Commands that run the command after their options: matched as that command."""

BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
)
"""A program named by its path in one of these is matched by its name: `/bin/rm x` as `rm x`
(a rule `bash(rm *)` must not be passed by spelling out where `rm` lives)."""

SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


@dataclass(frozen=True, slots=True)
class GlobalOptions:
    """A program's options that come before its subcommand (`git -C DIR push`).

    Attributes:
        takes_value: options whose value is the next word (or follows `=`).
        harmless: options that change nothing of what the subcommand does to the project
            (`--no-pager`); any other one dropped makes an `allow` rule not apply.
        toolchain: a leading `+NAME` word is an option (`cargo +nightly build`).
    """

    takes_value: frozenset[str]
    harmless: frozenset[str] = frozenset()
    toolchain: bool = False


GLOBAL_OPTIONS: dict[str, GlobalOptions] = {
    "git": GlobalOptions(
        takes_value=frozenset(
            {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
             "--super-prefix", "--attr-source", "--list-cmds"}
        ),
        harmless=frozenset(
            {"-P", "--no-pager", "-p", "--paginate", "--no-replace-objects", "--no-lazy-fetch",
             "--no-optional-locks", "--no-advice", "--literal-pathspecs", "--glob-pathspecs",
             "--noglob-pathspecs", "--icase-pathspecs"}
        ),
    ),
    "npm": GlobalOptions(
        takes_value=frozenset({"--prefix", "-w", "--workspace", "--userconfig", "--cache", "--loglevel"}),
        harmless=frozenset({"-s", "--silent", "-q", "--quiet", "--no-color", "-d", "--loglevel"}),
    ),
    "cargo": GlobalOptions(
        takes_value=frozenset({"-C", "--config", "-Z", "--color"}),
        harmless=frozenset({"-q", "--quiet", "-v", "--verbose", "--color", "--locked",
                            "--offline", "--frozen"}),
        toolchain=True,
    ),
}  # fmt: skip
"""Programs whose rules name a subcommand (`bash(git push *)`) but that take options before
it: `git -C . push` is matched as `git push` too (`split_forms`)."""


def split_command(line: str) -> tuple[str, ...] | Unparsable:
    """The simple commands `line` runs, each as its words joined by one space, in order of
    appearance (module docstring); `Unparsable` when that cannot be known."""
    words = _split(line, 0)
    return words if isinstance(words, Unparsable) else tuple(" ".join(w) for w in words)


def split_forms(line: str) -> tuple[tuple[str, str, bool], ...] | Unparsable:
    """`split_command` with two more forms of each command: `(as written, without the global
    options before its subcommand (GLOBAL_OPTIONS), whether every option dropped was
    harmless)`; a command with none has itself as its second form."""
    split = _split(line, 0)
    if isinstance(split, Unparsable):
        return split
    out: list[tuple[str, str, bool]] = []
    for words in split:
        plain, harmless = without_global_options(words)
        out.append((" ".join(words), " ".join(plain), harmless))
    return tuple(out)


def without_global_options(words: list[str]) -> tuple[list[str], bool]:
    """`words` without the global options before the subcommand (`GLOBAL_OPTIONS`), and
    whether every option dropped was harmless."""
    spec = GLOBAL_OPTIONS.get(words[0]) if words else None
    if spec is None:
        return words, True
    i, harmless = 1, True
    while i < len(words):
        w = words[i]
        key = w.split("=", 1)[0]
        if spec.toolchain and i == 1 and w.startswith("+"):
            i += 1
        elif w.startswith("-") and w != "-" and w != "--":
            harmless = harmless and key in spec.harmless
            i += 2 if key in spec.takes_value and "=" not in w else 1
        else:
            break
    if i >= len(words):  # options only (`git --version`): nothing to look through
        return words, True
    return [words[0], *words[i:]], harmless


def _split(line: str, depth: int) -> list[list[str]] | Unparsable:
    if depth > _MAX_DEPTH:
        return Unparsable("shell scripts nested too deeply")
    tree = _PARSER.parse(line.encode("utf-8", "surrogateescape"))
    if tree.root_node.has_error:
        return Unparsable("the command line does not parse as bash")
    out: list[list[str]] = []
    for node in _commands(tree.root_node):
        words = _words(node)
        if isinstance(words, Unparsable):
            return words
        words = _unwrap(words)
        if not words:
            continue
        inner = _inner_script(words)
        if inner is not None:
            nested = _split(inner, depth + 1)
            if isinstance(nested, Unparsable):
                return nested
            out.extend(nested)
            continue
        out.append(words)
    return out


def _commands(root: Node) -> list[Node]:
    """Every `command` and `declaration_command` node under `root`, in source order (nested
    ones, in substitutions, after the command holding them)."""
    found: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("command", "declaration_command", "unset_command"):
            found.append(node)
        stack.extend(reversed(node.children))
    return found


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _word(node: Node) -> str:
    """A word as the shell would pass it when it holds no expansion: quotes removed; an
    expansion or substitution is kept as written."""
    kind = node.type
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "string":
        return "".join(_text(c) for c in node.children if c.type != '"')
    if kind == "concatenation":
        return "".join(_word(c) for c in node.children)
    if kind == "word":
        text = _text(node)
        return text.replace("\\", "") if "\\" in text else text
    return _text(node)


def _words(node: Node) -> list[str] | Unparsable:
    if node.type != "command":  # export / declare / local / unset ...: their words as written
        return [_text(c) for c in node.children]
    words: list[str] = []
    for child in node.children:
        if child.type == "variable_assignment" and not words:
            continue  # `X=1 cmd`: the assignment only sets the environment
        if child.type == "command_name":
            name = child.children[0] if child.children else child
            if name.type not in ("word", "string", "raw_string", "concatenation"):
                return Unparsable(f"the command name `{_text(child)}` is not literal")
            words.append(_word(name))
            continue
        if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            continue
        words.append(_word(child))
    return words


def _unwrap(words: list[str]) -> list[str]:
    """`words` with leading wrappers (and their options, `env`'s assignments, `timeout`'s
    duration) removed; a wrapper alone stays (`env` prints the environment). A program in a
    system bin folder is named by its name (`BIN_DIRS`)."""
    words = _program_name(words)
    while words and words[0] in WRAPPERS:
        name, rest = words[0], words[1:]
        takes = WRAPPERS[name]
        i = 0
        while i < len(rest):
            w = rest[i]
            if name == "env" and "=" in w and not w.startswith("-"):
                i += 1
            elif w.startswith("-") and w != "-":
                if w in takes:
                    i += 2
                else:
                    i += 1
            else:
                break
        if name == "timeout" and i < len(rest):
            i += 1  # the duration
        if i >= len(rest):
            return words
        words = _program_name(rest[i:])
    return words


def _program_name(words: list[str]) -> list[str]:
    head, _, name = words[0].rpartition("/") if words else ("", "", "")
    if name and head in BIN_DIRS:
        return [name, *words[1:]]
    return words


def _inner_script(words: list[str]) -> str | None:
    """The script `bash -c SCRIPT` / `sh -c` / `eval WORDS` runs, or None."""
    if words[0] == "eval" and len(words) > 1:
        return " ".join(words[1:])
    if words[0] in SHELLS:
        for i, w in enumerate(words[1:], 1):
            if w == "-c" and i + 1 < len(words):
                return words[i + 1]
            if not w.startswith("-"):
                return None
    return None
