"""The output gate's spare files (`tether.atomic.write_atomic(ahead=True)`): where creating a
file is slow, a worker thread opens the next unnamed file ahead and the save only writes and
links it. Counted: the `open(O_TMPFILE)` calls the saving thread makes (one per save before,
only the first after). Checked: the saved files are the same (bytes, mode, names, nothing
else in the folder); the host refusing an unnamed file in the worker, or a spare whose folder
was removed, falls back to today's save; a cheap folder gets no thread; the thread ends when
the session writer closes, when idle, and a forked child never takes the parent's spares."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tether import atomic
from tether.messages import TextBlock, ToolResultBlock
from tether.session import SessionStore
from tether.tools.exec.persist import TOOL_RESULTS_DIR, persist_tool_result

pytestmark = pytest.mark.skipif(
    not atomic.unnamed_files, reason="this host cannot write unnamed files (O_TMPFILE)"
)

O_TMPFILE: int = getattr(os, "O_TMPFILE", 0)
OUTPUT = "turn 1 " + "x" * 2_100  # one line over the gate's 2,000-character line cap: saved (T26)


@pytest.fixture(autouse=True)
def _slow_folders(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every folder counts as slow (creating a file under the tests' tmp is often cheap), and
    no worker is left over between tests."""
    monkeypatch.setattr(atomic, "AHEAD_AFTER_S", -1.0)
    monkeypatch.setattr(atomic, "unnamed_files", True)
    yield
    for folder, _mode in list(atomic._spares):  # pyright: ignore[reportPrivateUsage]
        atomic.stop_ahead(folder)


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("tether-spare-files")]


def _wait(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def _spares_ready(folder: Path) -> bool:
    s = atomic._spares.get((folder, 0o600))  # pyright: ignore[reportPrivateUsage]
    return s is not None and not s._ready.empty()  # pyright: ignore[reportPrivateUsage]


class _Opens:
    """`os.open` as `tether.atomic` sees it, counting the unnamed files opened by the test's
    thread and by others; `fail_in_worker` makes the others' raise that errno (an injected
    fault)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_in_worker: int | None = None):
        self.main = threading.get_ident()
        self.here = 0
        self.elsewhere = 0
        self._fail = fail_in_worker
        real = os.open

        def counted(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
            if flags & O_TMPFILE != O_TMPFILE:
                return real(path, flags, mode, **kw)
            here = threading.get_ident() == self.main
            if not here and self._fail is not None:
                self.elsewhere += 1
                raise OSError(self._fail, os.strerror(self._fail))
            fd = real(path, flags, mode, **kw)  # a missing folder's first try is not counted
            if here:
                self.here += 1
            else:
                self.elsewhere += 1
            return fd

        monkeypatch.setattr(atomic.os, "open", counted)


def _save(session_dir: Path, k: int) -> Path:
    block = ToolResultBlock(tool_call_id=f"call_{k}", content=(TextBlock(text=OUTPUT),))
    out = persist_tool_result(block, session_dir)
    assert "saved at" in out.text, out.text[-300:]
    return session_dir / TOOL_RESULTS_DIR / f"call_{k}.txt"


def test_saves_take_files_opened_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20 saves: the saving thread creates one file (the first), the worker the rest; each
    file holds the output, mode 0o600, and the folder holds nothing else."""
    opens = _Opens(monkeypatch)
    folder = tmp_path / TOOL_RESULTS_DIR
    saved: list[Path] = []
    for k in range(20):
        saved.append(_save(tmp_path, k))
        _wait(lambda: _spares_ready(folder))
    assert opens.here == 1  # 20 before the spares
    assert opens.elsewhere >= 19
    assert sorted(os.listdir(folder)) == sorted(p.name for p in saved)
    for p in saved:
        assert p.read_bytes() == OUTPUT.encode()
        assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_a_cheap_folder_gets_no_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "AHEAD_AFTER_S", 60.0)
    opens = _Opens(monkeypatch)
    for k in range(5):
        _save(tmp_path, k)
    assert opens.here == 5 and opens.elsewhere == 0
    assert not _workers()


def test_a_worker_the_host_refuses_falls_back_to_the_savers_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected: every unnamed-file open of the worker fails (EOPNOTSUPP). The saves go on
    as before (the saving thread opens its own), unnamed files stay on, no worker is left."""
    import errno

    opens = _Opens(monkeypatch, fail_in_worker=errno.EOPNOTSUPP)
    for k in range(6):
        p = _save(tmp_path, k)
        assert p.read_bytes() == OUTPUT.encode()
        _wait(lambda: not _workers())
    assert opens.here == 6 and opens.elsewhere >= 1
    assert atomic.unnamed_files is True


def test_a_spare_whose_folder_was_removed_is_dropped_and_the_save_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real fault: the folder holding the spares is removed and made again (a spare cannot be
    linked into the new one). The save still lands, by today's path, and unnamed files stay on."""
    folder = tmp_path / TOOL_RESULTS_DIR
    _save(tmp_path, 0)
    _wait(lambda: _spares_ready(folder))
    for name in os.listdir(folder):
        os.unlink(folder / name)
    folder.rmdir()
    folder.mkdir(mode=0o700)
    p = _save(tmp_path, 1)
    assert p.read_bytes() == OUTPUT.encode()
    assert os.listdir(folder) == ["call_1.txt"]
    assert atomic.unnamed_files is True


def test_the_writers_close_ends_the_worker_and_its_spares(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(cwd=str(tmp_path))
    fds = len(os.listdir("/proc/self/fd"))
    _save(writer.session_dir, 0)
    folder = Path(os.path.abspath(writer.session_dir)) / TOOL_RESULTS_DIR
    _wait(lambda: _spares_ready(folder))
    assert len(_workers()) == 1
    writer.close()
    _wait(lambda: not _workers())
    assert len(os.listdir("/proc/self/fd")) <= fds - 1  # the spares closed (and the writer's fd)
    assert os.listdir(folder) == ["call_0.txt"]


def test_an_idle_worker_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "SPARES_IDLE_S", 0.2)
    _save(tmp_path, 0)
    _wait(lambda: _spares_ready(tmp_path / TOOL_RESULTS_DIR))
    assert _workers()
    _wait(lambda: not _workers())
    assert not atomic._spares  # pyright: ignore[reportPrivateUsage]


def test_a_forked_child_never_takes_the_parents_spares(tmp_path: Path) -> None:
    folder = tmp_path / TOOL_RESULTS_DIR
    _save(tmp_path, 0)
    _wait(lambda: _spares_ready(folder))
    spares = atomic._spares[(folder, 0o600)]  # pyright: ignore[reportPrivateUsage]
    pid = os.fork()
    if pid == 0:  # the child: no worker of its own, and the parent's spares are not taken
        ok = not atomic._spares and spares.take() is None  # pyright: ignore[reportPrivateUsage]
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
