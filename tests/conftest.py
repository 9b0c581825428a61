"""Suite-wide setup.

Isolation: no test reads or writes the developer's real settings, credential file or system
keyring (a stored `tether login` key would otherwise change what tests see). Its presence also
puts `tests/` on sys.path (pytest's prepend import mode), so tests in any folder can import the
shared helpers here (`faultserver`, `cases_loader`).

Hypothesis runs without its per-example deadline: speed is measured in `bench/`, not in tests,
and a deadline turns a loaded machine (CI, parallel work) into false failures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from hypothesis import settings
from keyring.backends import fail

settings.register_profile("tether", deadline=None)
settings.load_profile("tether")


@pytest.fixture(autouse=True)
def _isolated_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "_tether_user_config"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # subprocesses
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(before)


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every `os.fsync` from now on, as (the file's path, its size then); the fsync still runs."""
    import os

    calls: list[tuple[str, int]] = []
    real = os.fsync

    def recording(fd: int) -> None:
        calls.append((os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return calls
