"""A private PostgreSQL server for tests and benchmarks: Debian's `postgresql` binaries
(/usr/lib/postgresql/<version>/bin, not on PATH; `.ci/run` installs them), a fresh cluster in a
temp folder listening only on a unix socket there, run as the `postgres` user when we are root
(initdb and postgres refuse root), stopped and removed on exit.

A cluster costs seconds (initdb, start); a database in it costs milliseconds: the tests start
one server per test process and give each test a database of its own (`fresh_database`)."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Generator
from pathlib import Path

import sqlalchemy as sa


class Unavailable(Exception):
    """No PostgreSQL binaries (or no user to run them as)."""


def bin_dir() -> Path | None:
    def version(p: str) -> int:
        part = p.split("/")[4]
        return int(part) if part.isdigit() else 0

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    return Path(found[-1]).parent if found else None


@contextlib.contextmanager
def postgres() -> Generator[str]:
    """Start a server; yields its URL (`postgresql://tether@/postgres?host=<dir>&port=5432`)."""
    bins = bin_dir()
    if bins is None:
        raise Unavailable("PostgreSQL binaries are absent (/usr/lib/postgresql/*/bin)")
    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="tether-pg-"))
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base)
            raise Unavailable("running as root without a `postgres` user") from None
        os.chown(base, pw.pw_uid, pw.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data = base / "data"
    try:
        subprocess.run(
            [*prefix, str(bins / "initdb"), "-D", str(data), "-A", "trust", "-U", "tether", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        opts = f"-k {base} -p 5432 -c listen_addresses='' -c fsync=off -c max_connections=200"
        subprocess.run(
            [*prefix, str(bins / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(base / "log"), "-w", "-t", "60", "start"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield f"postgresql://tether@/postgres?host={base}&port=5432"
    finally:
        subprocess.run(
            [*prefix, str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)


_DATABASES = itertools.count(1)


def fresh_database(server_url: str) -> str:
    """A new empty database on the server at `server_url` (a URL `postgres()` yielded); returns
    its URL (the same server, the database `t<n>`)."""
    name = f"t{next(_DATABASES)}"
    admin = sa.create_engine(
        server_url.replace("postgresql://", "postgresql+psycopg://", 1),
        isolation_level="AUTOCOMMIT",
        poolclass=sa.NullPool,
    )
    try:
        with admin.connect() as c:
            c.exec_driver_sql(f"CREATE DATABASE {name}")
    finally:
        admin.dispose()
    return server_url.replace("@/postgres?", f"@/{name}?", 1)
