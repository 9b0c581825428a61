"""Running the `tether` CLI for tests: in this process (`run_cli`, the default) or as a real
process (`tether`, `popen`), both with one environment (`cli_env`).

`cli_env(home)` is the test process's environment without provider keys (`*_API_KEY`,
`*_AUTH_TOKEN`), OpenTelemetry settings, retry overrides or Jobs database settings, plus
`TETHER_HOME=home`, quick retries (10 ms base, 50 ms cap) and a `PYTHONPATH` naming the tether
under test (whatever the working folder); `home/cache/prompts` is the session's shared prompt
cache (`kit.prompts`).

`run_cli(args, home)` calls the CLI's own entry (`tether.cli.main.main`, which the console
script runs after installing its signal handlers) with that environment in `os.environ`, the
working folder `home/../work` (created) unless `cwd` is given, stdin from `input`, and stdout and
stderr captured; the result has the fields of `subprocess.CompletedProcess` that tests read
(`returncode`, `stdout`, `stderr`). An exception the CLI does not turn into an exit code
propagates (a subprocess would print a traceback and exit 1; here the test fails on it).

`tether(args, home)` runs `python -m tether.cli ARGS` instead: use it only where the process
boundary is what the test is about (signals, exit codes at process level, stdout purity,
import-time behaviour, the OS sandbox, global state such as OpenTelemetry's provider or DBOS).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import tether as tether_pkg
from kit import prompts

SRC = str(Path(tether_pkg.__file__).resolve().parents[1])
"""The folder holding the `tether` package under test (a child's `PYTHONPATH`)."""

_DROPPED_PREFIXES = ("OTEL_", "TETHER_RETRY", "TETHER_JOBS_")


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI run under test (see the module docstring)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_AUTH_TOKEN")) and not k.startswith(_DROPPED_PREFIXES)
    }
    env |= {"TETHER_HOME": str(home), "TETHER_RETRY_BASE": "10ms", "TETHER_RETRY_MAX": "50ms"}
    prompts.share(home / "cache")  # the embedded model's prompt cache, one per test session
    env |= extra
    env["PYTHONPATH"] = SRC
    return env


@dataclass(frozen=True, slots=True)
class Completed:
    """What an in-process CLI run left: its exit code and its two output streams (text)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def _work(home: Path, cwd: Path | None) -> Path:
    if cwd is None:
        cwd = home.parent / "work"
        cwd.mkdir(parents=True, exist_ok=True)
    return cwd


class _Captured(io.BytesIO):
    """A stream's bytes, kept when its text wrapper is closed or collected."""

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _isolated(env: dict[str, str], cwd: Path, stdin: str) -> Generator[tuple[io.BytesIO, io.BytesIO]]:
    from tether import credentials

    saved_env = dict(os.environ)
    saved_given = dict(credentials._GIVEN)  # pyright: ignore[reportPrivateUsage]  # `--token`'s keys live for the process
    saved_cwd = os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    out, err = _Captured(), _Captured()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield out, err
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        credentials._GIVEN.clear()  # pyright: ignore[reportPrivateUsage]
        credentials._GIVEN.update(saved_given)  # pyright: ignore[reportPrivateUsage]
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams


def run_cli(
    args: list[str], home: Path, *, cwd: Path | None = None, input: str = "", **extra: str
) -> Completed:
    """`tether ARGS` in this process (see the module docstring)."""
    from tether.cli.main import main

    saved_argv = sys.argv
    sys.argv = ["tether", *args]
    code: int | str | None = 0
    try:
        with _isolated(cli_env(home, **extra), _work(home, cwd), input) as (out, err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = saved_argv
    if isinstance(code, str):  # `sys.exit("message")`: the message on stderr, exit 1
        err.write(code.encode() + b"\n")
        code = 1
    return Completed(
        args=args,
        returncode=code or 0,
        stdout=out.getvalue().decode("utf-8", "replace"),
        stderr=err.getvalue().decode("utf-8", "replace"),
    )


def tether(
    args: list[str],
    home: Path,
    *,
    cwd: Path | None = None,
    input: str = "",
    timeout: float = 120,
    **extra: str,
) -> subprocess.CompletedProcess[str]:
    """`python -m tether.cli ARGS` as a child process with `cli_env(home, **extra)`; `cwd`
    defaults to a `work` folder beside `home` (created)."""
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=_work(home, cwd),
        env=cli_env(home, **extra),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def popen(
    args: list[str],
    home: Path,
    *,
    cwd: Path | None = None,
    capture: bool = False,
    **kw: object,
) -> subprocess.Popen[str]:
    """`python -m tether.cli ARGS` started and left running (stdin empty; stdout and stderr
    piped when `capture`, else discarded); `kw` goes to `Popen` (e.g. `env=`, to override the
    `cli_env(home)` default, or `start_new_session=`)."""
    options: dict[str, object] = {
        "cwd": _work(home, cwd),
        "env": cli_env(home),
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE if capture else subprocess.DEVNULL,
        "stderr": subprocess.PIPE if capture else subprocess.DEVNULL,
        "text": True,
    }
    options |= kw
    return subprocess.Popen([sys.executable, "-m", "tether.cli", *args], **options)  # type: ignore[call-overload]
