"""A real PostgreSQL for the Jobs scale-out tests: Debian's `postgresql` binaries
(/usr/lib/postgresql/<version>/bin, installed by `.ci/run`), a fresh cluster in a temp folder,
listening only on a unix socket there, run as an unprivileged user when the tests run as root
(initdb and postgres refuse root), stopped and removed after the test."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _bin_dir() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    return Path(found[-1]).parent if found else None


def _as_user(cmd: list[str], user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--", *cmd] if user else cmd


@pytest.fixture
def postgres_url() -> Iterator[str]:
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL binaries are absent (/usr/lib/postgresql/*/bin); .ci/run installs them"
        )
    user: str | None = None
    if os.geteuid() == 0:
        user = "postgres"
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            pytest.skip("running as root without a `postgres` user to run the server as")
    base = Path(tempfile.mkdtemp(prefix="tether-pg-"))
    if user:
        os.chown(base, pw.pw_uid, pw.pw_gid)
    data = base / "data"
    port = "5432"
    try:
        subprocess.run(
            _as_user(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data),
                    "-A",
                    "trust",
                    "-U",
                    "tether",
                    "--no-sync",
                ],
                user,
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        opts = f"-k {base} -p {port} -c listen_addresses='' -c fsync=off -c max_connections=200"
        subprocess.run(
            _as_user(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data),
                    "-o",
                    opts,
                    "-l",
                    str(base / "log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
                user,
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield f"postgresql://tether@/postgres?host={base}&port={port}"
    finally:
        subprocess.run(
            _as_user(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], user
            ),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)
