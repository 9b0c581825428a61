"""What one confined command may touch: `SandboxConfig`, and the config of a tool context's
command (`confinement`, `sandbox_config`, `wrap_argv`).

Owns: `SandboxConfig`; `command_config` and `confinement` (a command's config plus the trust
roots to sweep after it, from a cached walk of the working folder: `tether.sandbox.tree`),
`sandbox_config`,
`wrap_argv` (an argv through the context's `wrap` hook or OS sandbox); tether's own folders no
command may read (`secret_dirs`, `tmp_parent`) and the check that an extra folder holds none
of them (`check_add_dir`); the package's source folder (`package_source_root`).
Does not own: the file tools' policy (`tether.sandbox.policy.PathPolicy`), the OS mechanisms
(`tether.sandbox.base` and its kinds).
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tether.sandbox.paths import is_inside
from tether.sandbox.policy import PathPolicy, expand_write_paths

if TYPE_CHECKING:
    from tether.sandbox.tree import TrustRoots


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """What one confined command may touch.

    Attributes:
        root: the working folder (a real path); writable, except its `.git`.
        network: True to allow network access.
        extra_writable: further folders the command may write (e.g. a build cache).
        extra_readable: folders that must stay visible, read-only, even where the sandbox
            hides their parent (a private `/tmp`): e.g. a tool folder or the interpreter's
            prefix for a tool worker.
        isolate_pids: bwrap: a PID namespace (see the module docstring); the Landlock
            launcher always makes one where the kernel allows and reaps every descendant.
        write_paths: when set, the only writable folders or files of the root (it is bound
            read-only otherwise): the settings' `tools.write_paths`, expanded.
        protected: further read-only folders (tool folders), besides `root/.git` and
            `root/.tether`.
        hidden: folders no command may read (tether's config, data and cache folders, other
            sessions' private temp folders); None: `secret_dirs()`.
        writable_protected: the user's opt-in (`tools.allow_protected_writes`): `.git` and
            `.tether` stay writable.
        masked: files (and folders) shown empty and read-only to the command: the dotenv
            files the read deny list refuses (`tether.sandbox.tree.scan_tree`).
        unix_sockets: unix sockets (or folders of them) outside the sandbox the command may
            connect to (`tools.allow_unix_sockets`; kept visible where the sandbox empties
            their folder).
        unix_guard: refuse connecting to unix sockets outside the sandbox
            (`tether.sandbox.unixguard`).
    """

    root: Path
    network: bool = False
    extra_writable: tuple[Path, ...] = ()
    extra_readable: tuple[Path, ...] = ()
    isolate_pids: bool = False
    write_paths: tuple[Path, ...] | None = None
    protected: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] | None = None
    writable_protected: bool = False
    masked: tuple[Path, ...] = ()
    unix_sockets: tuple[Path, ...] = ()
    unix_guard: bool = True

    def writable(self) -> tuple[Path, ...]:
        """The writable paths: the root (or `write_paths`), then `extra_writable`."""
        own = (self.root,) if self.write_paths is None else self.write_paths
        return (*own, *self.extra_writable)

    def readonly(self) -> tuple[Path, ...]:
        """Paths kept read-only: `root/.git` and `root/.tether` when present, `protected`, then
        `extra_readable` and this harness's own interpreter and package where they live under
        `/tmp` (which the sandbox replaces by a private folder; a checkout or venv under
        `/tmp` must still run) — existing ones, de-duplicated; the outside ones only when not
        inside `root`."""
        out: list[Path] = []
        own = () if self.writable_protected else (self.root / ".git", self.root / ".tether")
        for p in (*own, *self.protected):
            if p.exists() and p not in out:
                out.append(p)
        for p in (*self.extra_readable, *_harness_under_tmp()):
            if p.exists() and not p.is_relative_to(self.root) and p not in out:
                out.append(p)
        return tuple(out)

    def socket_folders(self) -> tuple[Path, ...]:
        """The unix sockets the command may connect to: those in the writable paths, then
        `unix_sockets` (the sandbox adds its private temp folder)."""
        return (*self.writable(), *self.unix_sockets)

    def shown_sockets(self) -> tuple[Path, ...]:
        """The `unix_sockets` that exist in a folder the sandbox empties (/tmp, /run): they
        are bound back at their own paths."""
        return tuple(
            p
            for p in self.unix_sockets
            if os.path.lexists(p) and any(is_inside(str(p), top) for top in ("/tmp", "/run"))
        )

    def hidden_dirs(self) -> tuple[Path, ...]:
        """The existing hidden folders, minus any that holds the root or a writable path
        (hiding those would hide the work itself)."""
        keep = (self.root, *self.writable(), *self.extra_readable)
        out: list[Path] = []
        for p in secret_dirs() if self.hidden is None else self.hidden:
            if p.is_dir() and not any(k.is_relative_to(p) for k in keep) and p not in out:
                out.append(p)
        return tuple(out)


def secret_dirs() -> tuple[Path, ...]:
    """tether's own folders, which no tool subprocess may read: the user config
    folder (`TETHER_CONFIG_DIR` or platformdirs': settings, the credential file, approvals),
    the sessions folder (`$TETHER_HOME/sessions` or platformdirs' data folder), the cache
    folder, and the parent of every session's private temp folder (`tmp_parent()`). Real
    paths; existing or not."""
    import platformdirs

    config = os.environ.get("TETHER_CONFIG_DIR", "")
    home = os.environ.get("TETHER_HOME", "")
    found = [
        Path(config).expanduser() if config else platformdirs.user_config_path("tether"),
        Path(home).expanduser() / "sessions" if home else platformdirs.user_data_path("tether"),
        platformdirs.user_cache_path("tether"),
        tmp_parent(),
    ]
    return tuple(Path(os.path.realpath(p)) for p in found)


def check_add_dir(path: str) -> str | None:
    """Why the real path `path` cannot be an extra folder (`--add-dir`), or None: it must be
    an existing folder and hold none of tether's own folders (`secret_dirs`: a command
    could then read the credentials and sessions, which are hidden only where no writable
    folder holds them)."""
    if not os.path.isdir(path):
        return f"{path} is not a folder"
    for secret in secret_dirs():
        if secret.is_relative_to(path):
            return f"{path} holds tether's own folder {secret}; add a folder inside it instead"
    return None


def tmp_parent() -> Path:
    """The folder holding every session's private temp folder: `/var/tmp/tether-<uid>` (else
    under the system temp folder), mode 0700. Not created here."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else tempfile.gettempdir()
    return Path(os.path.realpath(base)) / f"tether-{os.getuid()}"


@functools.cache
def _harness_under_tmp() -> tuple[Path, ...]:
    """The interpreter (venv and base prefix, the executable's folder) and the `tether`
    package's folder, resolved, where they are under `/tmp`."""
    found = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    found.append(package_source_root())
    tmp = Path("/tmp").resolve()
    return tuple(dict.fromkeys(p.resolve() for p in found if p.resolve().is_relative_to(tmp)))


def package_source_root() -> Path:
    """The folder holding the `tether` package (its `src/` in a checkout, `site-packages`
    when installed), resolved: what a tool worker needs on its `PYTHONPATH`."""
    return _package_source_root()


@functools.cache
def _package_source_root() -> Path:
    import tether

    return Path(tether.__file__).resolve().parents[1]


class _Wraps(Protocol):
    """The part of an OS sandbox `wrap_argv` uses (`tether.sandbox.base.Sandbox.wrap`)."""

    def wrap(self, argv: Sequence[str], cfg: SandboxConfig) -> list[str]: ...


class Confinable(Protocol):
    """What `sandbox_config` and `wrap_argv` read of a tool context
    (`tether.tools.context.ToolContext` has these attributes)."""

    @property
    def root(self) -> Path: ...
    @property
    def policy(self) -> PathPolicy | None: ...
    @property
    def network(self) -> bool: ...
    @property
    def wrap(self) -> Callable[[list[str]], list[str]] | None: ...
    @property
    def sandbox(self) -> _Wraps | None: ...


def sandbox_config(ctx: Confinable, readable: Sequence[Path] = ()) -> SandboxConfig:
    """What a subprocess of `ctx` may touch: `confinement(ctx, readable)`'s config."""
    return confinement(ctx, readable)[0]


def confinement(
    ctx: Confinable, readable: Sequence[Path] = ()
) -> tuple[SandboxConfig, TrustRoots | None]:
    """`command_config` for a subprocess of `ctx` (its root, policy and network)."""
    return command_config(ctx.root, ctx.policy, network=ctx.network, readable=readable)


def command_config(
    root: Path, policy: PathPolicy | None, *, network: bool, readable: Sequence[Path] = ()
) -> tuple[SandboxConfig, TrustRoots | None]:
    """What a command in `root` under `policy` may touch, and the trust roots to sweep after
    it (None when the user opted in to writing them, `tools.allow_protected_writes`): writes
    beneath `root` (or only the policy's `write_paths`); every `.git` at any depth (and the
    folder a `.git` file or link points to), `.tether` and the policy's protected folders
    read-only; the files the read deny list refuses (dotenv) masked; tether's own folders
    hidden; a PID namespace; `network`; unix sockets outside refused but the policy's
    `unix_sockets`; `readable` folders kept visible read-only; the policy's extra folders
    (`add_dirs`) writable but their `.git` and `.tether`, `add_dirs_ro` visible read-only. Walks the working folder
    (`tether.sandbox.tree.scan_tree`, cached)."""
    from tether.sandbox.tree import scan_tree, trust_roots

    opted_in = policy is not None and policy.allow_protected_writes
    denied = None
    if policy is not None and policy.deny_read:
        denied = functools.partial(_refused, policy)
    found = scan_tree(root, denied, key=policy)
    protected = () if policy is None else tuple(Path(p) for p in policy.protected)
    nested = tuple(p for g in found.git for p in _git_targets(root, g))
    write_paths = None
    if policy is not None and policy.write_paths is not None:
        write_paths = expand_write_paths(root, policy.write_paths)
    fixed = (root / ".tether", *protected)
    added = () if policy is None else tuple(Path(p) for p in policy.add_dirs)
    added_ro = () if policy is None else tuple(Path(p) for p in policy.add_dirs_ro)
    # an extra folder's own `.git` and `.tether` are read-only like the root's
    protected += tuple(d / name for d in added for name in (".git", ".tether"))
    masked = list(found.secrets)  # and what the read deny list refuses in it is masked
    for d in (*added, *added_ro):
        masked += scan_tree(d, denied, key=policy).secrets if denied is not None else ()
    cfg = SandboxConfig(
        root=root,
        network=network,
        extra_writable=added,
        extra_readable=(*readable, *added_ro, *worktree_git(root)),
        isolate_pids=True,
        write_paths=write_paths,
        protected=() if opted_in else (*protected, *nested),
        writable_protected=opted_in,
        masked=tuple(masked),
        unix_sockets=() if policy is None else tuple(Path(p) for p in policy.unix_sockets),
    )
    return cfg, None if opted_in else trust_roots(root, found, fixed, denied, policy)


def _refused(policy: PathPolicy, rel: str) -> bool:
    return policy.denied((rel,), write=False) is not None


def worktree_git(root: Path) -> tuple[Path, ...]:
    """For a git worktree (`root/.git` a file naming its git folder), the git folders outside
    `root` that git needs to work in it — the worktree's own (`<repo>/.git/worktrees/NAME`) and
    the repository's (its `commondir`) — to keep visible, read-only: under a private `/tmp`
    (bubblewrap) a worktree of a repository in `/tmp` saw neither, and every git command failed
    ("not a git repository"). Empty for anything else."""
    git = root / ".git"
    own = _named_gitdir(git) if git.is_file() and not git.is_symlink() else None
    if own is None:
        return ()
    out = [own]
    try:
        common = (own / "commondir").read_text(errors="replace").strip()
    except OSError:
        common = ""
    if common:
        out.append(Path(os.path.realpath(own / common)))
    root_s = os.path.realpath(root)
    return tuple(p for p in out if p.is_dir() and not is_inside(str(p), root_s))


def _named_gitdir(git: Path) -> Path | None:
    """The real path of the git folder a `.git` file names (`gitdir: X`), or None."""
    try:
        head = git.read_text(errors="replace")[:4096].strip()
    except OSError:
        return None
    if not head.startswith("gitdir:"):
        return None
    return Path(os.path.realpath(Path(git.parent, head.removeprefix("gitdir:").strip())))


def _git_targets(root: Path, git: Path) -> tuple[Path, ...]:
    """What must stay read-only for one `.git` entry: the folder itself; for a `.git` file
    (`gitdir: X`) or a link, the git folder it names too when that lies in the root."""
    out: list[Path] = []
    if git.is_dir() and not git.is_symlink():
        return (git,)
    if git.is_file() and not git.is_symlink():
        out.append(git)
        if (named := _named_gitdir(git)) is not None:
            out.append(named)
    elif git.is_symlink():
        out.append(Path(os.path.realpath(git)))
    root_s = os.path.realpath(root)
    return tuple(p for p in out if p.exists() and is_inside(str(p), root_s))


def wrap_argv(ctx: Confinable, argv: Sequence[str], readable: Sequence[Path] = ()) -> list[str]:
    """`argv` through `ctx.wrap`; without one, through `ctx.sandbox` (see `sandbox_config`);
    unchanged when there is neither."""
    if ctx.wrap is not None:
        return ctx.wrap(list(argv))
    if ctx.sandbox is not None:
        return ctx.sandbox.wrap(list(argv), sandbox_config(ctx, readable))
    return list(argv)
