"""tether's own `git` processes on the host (outside the sandbox), hardened against the
repository's configuration.

Owns: `argv` (a git command line with the overrides below), `env` (the environment it runs
in: no inherited `GIT_*` variables, no prompts), `repo_overrides` (the code-running settings a
repository's own config names, each emptied).
Does not own: what the callers do with git (`tether.worktrees`, `tether.prompt.gather`,
`tether.checkpoint.shadow`).

Why: a repository's `.git/config` can name programs git runs on its own: `core.fsmonitor`
(run by `status` and every command that refreshes the index), hooks (`post-checkout` on
`worktree add`, `reference-transaction` on `branch -D`), filter drivers
(`filter.<name>.clean/smudge/process`, run by `status`, `add` and any checkout of a file whose
`.gitattributes` names the driver), diff drivers, a pager, an ssh command. tether runs git on
the host, not in the sandbox, so a cloned or unzipped repository could run code through tether
with none of the sandbox's limits. None of tether's git calls needs any of them: each is
emptied on the command line (`-c`, which wins over every config file). Filter and diff drivers
have names of the repository's choosing, so `repo_overrides` lists the ones its local (and
worktree) config defines, reading the config only (which runs nothing); the user's own global
drivers (Git LFS) stay.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

SAFE_CONFIG: tuple[str, ...] = (
    "core.fsmonitor=",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.sshCommand=",
    "core.askPass=",
    "core.editor=true",
    "core.alternateRefsCommand=",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",
    "submodule.recurse=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "uploadpack.packObjectsHook=",
)
"""`-c` settings every host git call gets: nothing the repository names is run."""

_DRIVER_KEYS = r"^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$"


def argv(git: str, *args: str, overrides: Sequence[str] = ()) -> list[str]:
    """`git -c … [overrides] ARGS`: `SAFE_CONFIG` (and `overrides`, from `repo_overrides`)
    before the subcommand, with `--no-pager`."""
    line = [git, "--no-pager"]
    for setting in (*SAFE_CONFIG, *overrides):
        line += ["-c", setting]
    return [*line, *args]


def env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a host git call: `base` (default the process's) without `GIT_*`
    variables (a `GIT_EXTERNAL_DIFF`, `GIT_SSH`, `GIT_CONFIG_PARAMETERS` or `GIT_DIR` left by
    a caller), with prompts off."""
    source = os.environ if base is None else base
    out = {k: v for k, v in source.items() if not k.startswith("GIT_")}
    out["GIT_TERMINAL_PROMPT"] = "0"
    out["GIT_NO_LAZY_FETCH"] = "1"
    return out


def repo_overrides(
    cwd: Path,
    *,
    git: str = "git",
    timeout: float = 10.0,
    config_files: Sequence[Path] | None = None,
) -> list[str]:
    """`-c` settings emptying every filter, diff and merge driver command that the
    repository's own config (local or worktree scope, with what they include) defines; [] when
    there is none or git cannot answer (then the command that follows fails on its own).
    `config_files`: the repository's config files (`config`, `config.worktree`), when the
    caller knows them: none of them naming a driver or an include section, git is not asked
    (a process saved at every session start)."""
    if config_files is not None and not any(_names_drivers(f) for f in config_files):
        return []
    try:
        done = subprocess.run(
            argv(
                git, "-C", str(cwd), "config", "-z", "--includes", "--show-scope",
                "--get-regexp", _DRIVER_KEYS,
            ),
            capture_output=True,
            env=env(),
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    out: list[str] = []
    # -z with --show-scope: "scope\0key\nvalue\0" per entry
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    for scope, entry in zip(fields[::2], fields[1::2], strict=False):
        key = entry.split("\n", 1)[0]
        if scope in ("local", "worktree") and key:
            out.append(f"{key}=")
            if key.startswith("filter."):  # an emptied required filter would fail the call
                out.append(key.rsplit(".", 1)[0] + ".required=false")
    return list(dict.fromkeys(out))


_SECTIONS = re.compile(r"\[\s*(filter|diff|merge|include)", re.IGNORECASE)


def _names_drivers(path: Path) -> bool:
    """Whether a config file may define a driver: it has a filter/diff/merge or include
    section (case-insensitive), or cannot be read (then git is asked)."""
    try:
        text = path.read_text("utf-8", "replace")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return _SECTIONS.search(text) is not None
