"""The one atomic file write (`tether.atomic.write_atomic`): a failure mid-write leaves the old
file and no temp file, the mode is the caller's (never wider, even while writing), `durable`
fsyncs the file and then its folder, temp names skip leftovers, a missing folder is made only
when asked, a name at the file system's limit still has a temp name. Every test runs both
ways of writing: the unnamed file linked into place (Linux's `O_TMPFILE`) and the named temp
file the host falls back to."""

from __future__ import annotations

import array
import itertools
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import atomic
from tether.atomic import write_atomic


@pytest.fixture(autouse=True, params=["unnamed", "named"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which way `write_atomic` writes in this test."""
    way = str(request.param)
    if way == "unnamed" and not atomic.unnamed_files:
        pytest.skip("this host cannot write unnamed files (O_TMPFILE)")
    monkeypatch.setattr(atomic, "unnamed_files", way == "unnamed")
    return way


@contextmanager
def _umask(mask: int) -> Generator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


class _Stop(BaseException):
    """Raised by the chunk hook: a failure (or a KeyboardInterrupt) in the middle of a write."""


def _stop_after(chunks: int) -> Callable[[int], None]:
    seen = itertools.count(1)

    def hook(_written: int) -> None:
        if next(seen) >= chunks:
            raise _Stop

    return hook


FILL_THE_DISK = """
import os, resource, signal, sys
from pathlib import Path
from tether.atomic import write_atomic
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
try:
    write_atomic(Path(sys.argv[1]), b"n" * (3 << 20), durable=True, mode=0o600)
except OSError as e:
    print("OSError", e.errno)
"""


def test_a_write_the_file_system_refuses_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    """A real failure, not an injected one: the process may not write files past 1.5 MB
    (`RLIMIT_FSIZE`), so the second of three 1 MB chunks fails with EFBIG."""
    target = tmp_path / "settings.json"
    target.write_bytes(b"old content")
    done = subprocess.run(
        [sys.executable, "-c", FILL_THE_DISK, str(target), str(3 << 19)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["OSError", "27"]  # EFBIG
    assert target.read_bytes() == b"old content"
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_an_interrupt_mid_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "c1.txt"
    target.write_bytes(b"old")
    monkeypatch.setattr(atomic, "WRITE_CHUNK_BYTES", 4)
    monkeypatch.setattr(atomic, "_after_chunk", _stop_after(2))
    with pytest.raises(_Stop):
        write_atomic(target, b"0123456789abcdef", durable=False)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["c1.txt"]


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o444])
def test_the_mode_is_honoured_from_the_first_byte(tmp_path: Path, mode: int, how: str) -> None:
    """The new file has `mode` (an existing file's wider mode is not kept), and so has the temp
    file while it is written: a secret is never readable by others, not even half written."""
    target = tmp_path / "credentials.json"
    target.write_bytes(b"old")
    target.chmod(0o666)
    seen: list[int] = []

    def look(_written: int) -> None:
        temps = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        if how == "unnamed":  # nothing anyone could open until it is complete
            assert temps == []
            seen.append(mode)
            return
        (tmp,) = temps
        seen.append(stat.S_IMODE(tmp.stat().st_mode))

    with _umask(0), patch.object(atomic, "_after_chunk", look):
        write_atomic(target, b"secret", mode=mode)
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert seen == [mode]
    assert target.read_bytes() == b"secret"


def test_the_umask_narrows_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    with _umask(0o077):
        write_atomic(target, b"{}")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize("durable", [True, False])
def test_durable_fsyncs_the_file_before_the_rename_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool
) -> None:
    target = tmp_path / "HEAD"
    target.write_bytes(b"old")
    real_fsync = os.fsync
    synced: list[tuple[str, bytes]] = []

    def spy(fd: int) -> None:
        kind = "folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        synced.append((kind, target.read_bytes()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    write_atomic(target, b"new", durable=durable)
    assert target.read_bytes() == b"new"
    assert synced == ([("file", b"old"), ("folder", b"new")] if durable else [])


def test_temp_names_skip_a_leftover(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Temp files are named `.<name>.<pid>-<n>.tmp` from a counter (mkstemp's random names
    cost a tenth of a turn): a leftover of a killed process with the same pid and number is
    skipped, never written into or removed."""
    monkeypatch.setattr(atomic, "_temp_names", itertools.count(7))
    target = tmp_path / "c1.txt"
    write_atomic(target, b"first", durable=False)
    leftover = tmp_path / f".c1.txt.{os.getpid()}-8.tmp"
    leftover.write_bytes(b"half")
    write_atomic(target, b"second", durable=True)
    assert target.read_bytes() == b"second"
    assert leftover.read_bytes() == b"half"
    assert sorted(p.name for p in tmp_path.iterdir()) == [leftover.name, "c1.txt"]


def test_a_missing_folder_is_made_only_when_asked(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "tool-results"
    with pytest.raises(FileNotFoundError):
        write_atomic(folder / "c1.txt", b"x")
    assert not (tmp_path / "a").exists()
    with _umask(0o022):
        write_atomic(folder / "c1.txt", b"x", durable=False, folder_mode=0o700)
    assert (folder / "c1.txt").read_bytes() == b"x"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o755  # a parent: the default


def test_a_name_at_the_file_system_limit_is_written(tmp_path: Path) -> None:
    """A 255-byte name is legal; its temp name (dot, pid, counter, `.tmp` around it) would
    not be, so only the name's first `TEMP_NAME_CHARS` characters go into it."""
    target = tmp_path / ("n" * 255)
    write_atomic(target, b"x")
    assert target.read_bytes() == b"x"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_any_buffer_is_written_byte_for_byte(tmp_path: Path) -> None:
    """The prompt cache hands a memoryview of a ctypes array; a view of wider items counts
    bytes, not items."""
    ints = array.array("i", range(1000))
    target = tmp_path / "state"
    with patch.object(atomic, "WRITE_CHUNK_BYTES", 100):
        write_atomic(target, memoryview(ints), durable=False)
    assert target.read_bytes() == ints.tobytes()


_WRITES = st.lists(
    st.tuples(
        st.binary(max_size=40),
        st.sampled_from([0o600, 0o644, 0o444]),
        st.booleans(),
        st.none() | st.integers(min_value=1, max_value=6),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(writes=_WRITES)
def test_the_file_is_always_the_last_complete_write(
    writes: list[tuple[bytes, int, bool, int | None]],
) -> None:
    """Any sequence of writes, some stopped after a few chunks: the file holds the last write
    that finished, with its mode, and the folder holds nothing else."""
    with tempfile.TemporaryDirectory() as d, _umask(0), patch.object(atomic, "WRITE_CHUNK_BYTES", 7):
        target = Path(d) / "f"
        last: tuple[bytes, int] | None = None
        for data, mode, durable, stop in writes:
            hook = None if stop is None else _stop_after(stop)
            chunks = -(-len(data) // 7)
            with patch.object(atomic, "_after_chunk", hook):
                try:
                    write_atomic(target, data, durable=durable, mode=mode)
                except _Stop:
                    assert stop is not None and stop <= chunks
                else:
                    last = (data, mode)
            assert [p.name for p in Path(d).iterdir()] == ([] if last is None else ["f"])
            if last is not None:
                assert target.read_bytes() == last[0]
                assert stat.S_IMODE(target.stat().st_mode) == last[1]


@pytest.mark.parametrize("refused", ["open", "link"])
def test_a_host_without_unnamed_files_falls_back_to_the_named_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: str, how: str
) -> None:
    """An injected fault: the file system refuses `O_TMPFILE` (EOPNOTSUPP), or there is no
    `/proc` to link the unnamed file from (ENOENT). The write still lands whole, through the
    named temp file, nothing is left behind, and the process stops trying the unnamed way."""
    if how == "named":
        pytest.skip("the fault is in the unnamed way")
    import errno

    flag = getattr(os, "O_TMPFILE", 0)
    real_open, real_link = os.open, os.link
    tried: list[str] = []

    def fake_open(path: object, flags: int, *args: object, **kw: object) -> int:
        if flag and flags & flag == flag and refused == "open":
            tried.append("open")
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, *args, **kw)  # type: ignore[arg-type]

    def fake_link(src: object, dst: object, **kw: object) -> None:
        if str(src).startswith("/proc/self/fd/") and refused == "link":
            tried.append("link")
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        real_link(src, dst, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "link", fake_link)
    target = tmp_path / "tool-results" / "c1.txt"
    for data in (b"first", b"second"):
        write_atomic(target, data, durable=False, mode=0o600, folder_mode=0o700)
        assert target.read_bytes() == data
    assert tried == [refused]  # tried once, then the named way only
    assert atomic.unnamed_files is False
    assert [p.name for p in target.parent.iterdir()] == ["c1.txt"]
