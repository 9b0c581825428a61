"""The start-up check of the settings' shell hooks: will each command find its program (and
its script) inside the sandbox? A hook whose script sits in a folder the sandbox hides (tether's
config folder, the Claude Code habit `~/.config/tether/hooks/check.sh`), in the host's `/tmp`
(commands get a private one), that does not exist, is not executable or names a program not on
the PATH fails on every call; this says so once, at start, instead of once per call.

Owns: `hook_problems` (one line per hook that cannot run, naming it and why).
Does not own: running hooks (`tether.agent.turn.hooks`), what the sandbox shows
(`tether.sandbox.config`).

The check reads the command's first simple command only (`NAME=v` assignments, `exec`,
`command` and `env` skipped; for an interpreter such as `bash x.sh` or `python3 x.py`, its
script too); a word with `$`, a backtick or a glob, a shell builtin or a command it cannot
parse is left alone: a hook it passes may still fail, one it names will.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

from tether.plural import counted
from tether.sandbox.config import SandboxConfig
from tether.settings.model import HooksSettings

POINTS = ("before_tool", "after_tool", "user_prompt", "before_compaction", "stop")

_BUILTINS = frozenset(
    {
        "!", ".", ":", "[", "[[", "{", "(", "alias", "bg", "break", "builtin", "case", "cd",
        "command", "compgen", "continue", "declare", "dirs", "disown", "echo", "enable", "eval",
        "exec", "exit", "export", "false", "fc", "fg", "for", "function", "getopts", "hash",
        "help", "history", "if", "jobs", "kill", "let", "local", "logout", "mapfile", "popd",
        "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "select", "set",
        "shift", "shopt", "source", "suspend", "test", "time", "times", "trap", "true", "type",
        "typeset", "ulimit", "umask", "unalias", "unset", "until", "wait", "while",
    }
)
_INTERPRETERS = re.compile(
    r"(ba|z|da|k)?sh|python[0-9.]*|node|perl|ruby|php|deno|bun|tsx|lua|Rscript"
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_UNCHECKED = re.compile(r"[$`*?\[\]]")


def _first_command(command: str) -> list[str] | None:
    """The words of `command`'s first simple command (None: it does not parse)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    try:
        for token in lexer:
            if token and all(c in "();<>|&" for c in token):
                break
            words.append(token)
    except ValueError:
        return None
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in ("exec", "command", "env")):
        words.pop(0)
    return words


def _path_of(word: str, root: Path, home: str | None) -> Path:
    if word == "~" or word.startswith("~/"):
        word = (home or os.path.expanduser("~")) + word[1:]
    p = Path(word)
    return Path(os.path.realpath(p if p.is_absolute() else root / p))


def _unseen(p: Path, sandbox: SandboxConfig) -> str | None:
    """Why commands inside `sandbox` cannot see `p` (None: they can)."""
    for hidden in sandbox.hidden_dirs():
        if p.is_relative_to(hidden):
            return (
                f"it is in {hidden}, one of tether's own folders, which the sandbox hides "
                "from commands"
            )
    shown = (*sandbox.writable(), *sandbox.readonly())
    for private in (Path("/tmp"), Path("/run")):
        if p.is_relative_to(private) and not any(p.is_relative_to(s) for s in shown):
            return f"it is in {private}, which the sandbox replaces by a private, empty one"
    return None


def _file_problem(word: str, p: Path, sandbox: SandboxConfig, *, run: bool) -> str | None:
    if not p.exists():
        return f"{word}: no such file"
    unseen = _unseen(p, sandbox)
    if unseen is not None:
        return f"{word}: {unseen}"
    if not p.is_file():
        return f"{word}: not a file"
    if run and not os.access(p, os.X_OK):
        return f"{word}: not executable (chmod +x {p})"
    if not os.access(p, os.R_OK):
        return f"{word}: not readable"
    return None


def command_problem(
    command: str, *, root: Path, sandbox: SandboxConfig, env: dict[str, str]
) -> str | None:
    """Why `command` cannot run inside `sandbox` (None: no reason found)."""
    words = _first_command(command)
    if not words or _UNCHECKED.search(words[0]):
        return None
    program = words[0]
    home = env.get("HOME")
    if "/" in program or program.startswith("~"):
        return _file_problem(program, _path_of(program, root, home), sandbox, run=True)
    if program in _BUILTINS:
        return None
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        return f"{program}: not found on the PATH commands get"
    unseen = _unseen(Path(os.path.realpath(found)), sandbox)
    if unseen is not None:
        return f"{program} ({found}): {unseen}"
    if not _INTERPRETERS.fullmatch(program):
        return None
    for word in words[1:]:
        if word in ("-c", "-e", "-m", "--eval") or _UNCHECKED.search(word):
            return None  # inline code or a module: nothing to look at
        if word.startswith("-"):
            continue
        return _file_problem(word, _path_of(word, root, home), sandbox, run=False)
    return None


def hook_problems(
    settings: HooksSettings,
    *,
    root: Path,
    env: dict[str, str],
    sandbox: Callable[[], SandboxConfig] | None,
) -> list[str]:
    """One line per shell hook that cannot run (its point, its command, why, and what a
    failure means for the calls it checks).

    Args:
        settings: the `hooks` settings.
        root: the folder hooks run in.
        env: the environment hooks get (its `PATH`, `HOME`).
        sandbox: what a command may touch (called once, when a hook is set); None: no OS
            sandbox works here, so no shell hook runs.
    """
    hooks = [(point, h.command) for point in POINTS for h in getattr(settings, point)]
    if not hooks:
        return []
    if sandbox is None:
        return [
            f"{counted(len(hooks), 'shell hook')} set but no OS sandbox works here: hooks "
            "never run unconfined, so none will run"
        ]
    config = sandbox()
    out: list[str] = []
    for point, command in hooks:
        why = command_problem(command, root=root, sandbox=config, env=env)
        if why is None:
            continue
        if point == "before_tool":
            then = (
                "every call it checks will be refused (hooks.on_failure = deny)"
                if settings.on_failure == "deny"
                else "every call it checks will run unchecked (hooks.on_failure = allow)"
            )
        else:
            then = "it will fail every time"
        out.append(f"{point} hook `{_short(command)}` cannot run: {why}; {then}")
    return out


def _short(command: str) -> str:
    return command if len(command) <= 60 else command[:57] + "..."
