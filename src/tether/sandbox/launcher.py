"""The launcher every sandboxed command starts through: `python -I -S -B .../launcher.py
[options] -- argv...`, run by the Landlock sandbox outside and by bubblewrap inside.

Owns: `main()` (parse, confine, run the command reaped) and the launcher's options:
- Landlock (`--landlock`): `--write P`, `--ro P`, `--hide P`, `--keep P`, `--mask P`,
  `--empty FILE`, `--tmp DIR`, `--net` (see `tether.sandbox.landlock`);
- the unix-socket guard (`--guard HEX`: the BPF program; `--socket P`: a folder or socket the
  command may connect to; `--abstract`: let abstract sockets through; see
  `tether.sandbox.unixguard`).
Does not own: the syscalls (`tether.sandbox.landlock`, `tether.sandbox.unixguard`), the reaper
(`tether.sandbox.reaper`), building the argv (`tether.sandbox.landlock_sandbox`,
`tether.sandbox.bwrap`).

Standard library only: it starts in about 12 ms with `python -I -S` (no site-packages). Run by
its path, it imports its sibling modules without running the `tether` package's `__init__`
(`_bootstrap`).

Exit status: the command's own (a fatal signal re-raised); 2 for bad options; 126 when the
confinement failed (the command is then never run), 127 when the command is not found.
"""

from __future__ import annotations

import os
import sys


def _bootstrap() -> None:
    """Make `tether.sandbox.<module>` importable without the package `__init__`s (run by path,
    with no site-packages: they import the rest of tether)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name, path in (("tether", os.path.dirname(here)), ("tether.sandbox", here)):
        if name not in sys.modules:
            module = type(sys)(name)
            module.__path__ = [path]  # type: ignore[attr-defined]
            sys.modules[name] = module


if __name__ == "__main__":
    _bootstrap()

from tether.sandbox import landlock, reaper, unixguard  # noqa: E402

NAME = "tether sandbox"
_LISTS = ("--write", "--ro", "--hide", "--keep", "--mask", "--socket")
_VALUES = ("--tmp", "--empty", "--guard")
_FLAGS = ("--landlock", "--net", "--abstract")


def parse(args: list[str]) -> tuple[dict[str, list[str]], dict[str, str], set[str], list[str]]:
    """(repeatable options, single values, flags, the command).

    Raises:
        ValueError: an unknown option, a missing value, no `--`, or no command.
    """
    lists: dict[str, list[str]] = {k: [] for k in _LISTS}
    values: dict[str, str] = {}
    flags: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            if i + 1 == len(args):
                raise ValueError("empty command")
            return lists, values, flags, args[i + 1 :]
        if a in _FLAGS:
            flags.add(a)
            i += 1
            continue
        if (a in _LISTS or a in _VALUES) and i + 1 < len(args):
            if a in _LISTS:
                lists[a].append(args[i + 1])
            else:
                values[a] = args[i + 1]
            i += 2
            continue
        raise ValueError(f"unexpected argument {a!r}")
    raise ValueError("missing `-- command...`")


def main(args: list[str] | None = None) -> int:
    """The launcher (module docstring).

    Returns:
        The command's exit status (a signal re-raised on the launcher); 2 for bad arguments,
        126 when confinement failed, 127 when the command was not found.
    """
    try:
        lists, values, flags, command = parse(list(sys.argv[1:] if args is None else args))
    except ValueError as e:
        sys.stderr.write(f"{NAME}: {e}\n")
        return 2
    reaper.die_with_parent()  # the harness gone (kill -9): end with it
    tmp = values.get("--tmp")
    allowed = list(lists["--socket"])
    if "--landlock" in flags:
        try:
            mounted = landlock.confine(
                lists["--write"],
                readonly=lists["--ro"],
                network="--net" in flags,
                tmp=tmp,
                hidden=lists["--hide"],
                pid_ns=True,
                keep=lists["--keep"],
                visible=lists["--socket"],
                masks=lists["--mask"],
                empty=values.get("--empty"),
            )
        except OSError as e:
            sys.stderr.write(f"{NAME} (landlock): refusing to run unconfined: {e}\n")
            return 126
        if mounted and tmp:
            allowed.append("/tmp")  # the private temp folder, mounted there
    if tmp:
        os.environ["TMPDIR"] = tmp
    guard = values.get("--guard")
    if guard is None:
        return reaper.run_reaped(command, name=NAME)
    try:
        program = bytes.fromhex(guard)
    except ValueError:
        sys.stderr.write(f"{NAME}: --guard is not a hex BPF program\n")
        return 2
    return _guarded(command, program, allowed, "--abstract" in flags)


def _guarded(command: list[str], program: bytes, allowed: list[str], abstract: bool) -> int:
    """Run `command` under `program` with this process as its supervisor."""
    import _socket

    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    supervisor = unixguard.Supervisor(allowed, abstract=abstract, name=NAME)
    listener: list[int] = []

    def in_child() -> None:
        ours.close()
        try:
            fd = unixguard.install(program, listen=True)
        except OSError as e:
            raise OSError(e.errno, f"unix-socket guard: {e.strerror}") from None
        unixguard.send_listener(theirs.fileno(), fd)
        theirs.close()

    def in_parent(_pid: int) -> None:
        theirs.close()
        try:  # noqa: SIM105 - the launcher keeps its imports minimal
            listener.append(unixguard.recv_listener(ours.fileno()))
        except OSError:
            pass  # the child failed before its filter: it exits 126 and nothing ran
        ours.close()

    def serve(pid: int) -> None:
        if listener:
            supervisor.serve(listener[0], pid)

    return reaper.run_reaped(
        command, in_child=in_child, in_parent=in_parent, serve=serve, name=NAME
    )


if __name__ == "__main__":
    sys.exit(main())
