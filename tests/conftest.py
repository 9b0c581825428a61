"""Suite-wide setup (tests/README.md has the rules; the shared helpers are in `tests/kit/`).

Isolation: no test reads or writes the developer's real settings, credential file, caches or
system keyring (a stored `tether login` key would otherwise change what tests see); the
embedded model's prompt cache is one per test session (`kit.prompts`). Its presence also
puts `tests/` on sys.path (pytest's prepend import mode), so tests in any folder import the kit
as `kit`.

No network but loopback: every test runs under the socket guard of `kit.netguard` (a connection
or a name lookup outside loopback fails the test).

Scripted replies are used up: a `ScriptedProvider` given to `kit.agents.make_agent` must have
answered with all its scripted replies by the end of a passing test.

Hypothesis runs without its per-example deadline: speed is measured in `bench/`, not in tests,
and a deadline turns a loaded machine (CI, parallel work) into false failures.

Slow tests start first: the `slow` tier's tests (minutes each: real processes, the embedded
model) are moved to the front of the collection, in their order, so xdist hands them out
before the quick ones, and the quick ones fill the workers around them instead of a long test
starting last while the other worker idles.

OpenMP threads wait passively (`OMP_WAIT_POLICY=PASSIVE`, for this process and every child): the
embedded model's llama.cpp otherwise spins a thread at each barrier while its sibling waits for
a core, and the suite keeps both cores busy (900 prompt tokens of SmolLM2 on a loaded machine:
24 s of CPU spinning, 16 s passive)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import keyring
import pytest
from hypothesis import settings
from keyring.backends import fail

from kit import agents, netguard, prompts

pytest_plugins = ["kit.crashsafe"]  # a test that kills its xdist worker fails; the run goes on

_PROMPTS_MADE = pytest.StashKey[str]()
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before llama.cpp's OpenMP starts
settings.register_profile("tether", deadline=None)
settings.load_profile("tether")
netguard.install()


def pytest_configure(config: pytest.Config) -> None:
    """The session's shared prompt cache (`kit.prompts`), made once, before xdist's workers
    start (they inherit the environment)."""
    if prompts.SHARED_ENV not in os.environ:
        folder = tempfile.mkdtemp(prefix="tether-test-prompts-")
        os.environ[prompts.SHARED_ENV] = folder
        config.stash[_PROMPTS_MADE] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_PROMPTS_MADE, None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(prompts.SHARED_ENV, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: slow first


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """After a test body that passed: the network guard and the scripted replies."""
    try:
        result: None = yield
    except BaseException:
        netguard.blocked()
        agents.forget_scripts()
        raise
    refused = netguard.blocked()
    if refused:
        pytest.fail("tests use no network but loopback; refused: " + "; ".join(refused))
    agents.check_scripts()
    return result


@pytest.fixture(autouse=True)
def _language_servers_only_in_their_tests(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Language servers start only in tests/lsp: the dev extra installs basedpyright, which an
    agent would otherwise start (a node process, seconds of CPU) at every edit of a `.py` file
    in any test; and the `lsp` tool is offered there only, so the tools a test sees do not
    depend on which servers the machine has (rust-analyzer on PATH, say)."""
    if "lsp" not in request.path.parent.parts:
        monkeypatch.setattr("tether.agent.assembly.assemble.lsp_manager", _no_lsp_manager)
        monkeypatch.setattr("tether.agent.assembly.build.resolve_servers", _no_servers)


def _no_lsp_manager(*_a: object, **_k: object) -> None:
    return None


def _no_servers(*_a: object, **_k: object) -> tuple[tuple[()], tuple[()]]:
    return ((), ())


@pytest.fixture(autouse=True)
def _isolated_user_config(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "_tether_user_config"))
    # caches: the test's own, beside its tmp_path (inside it, they would be files the test
    # did not write, in the folder a sandbox confines); the prompt cache: the session's
    cache = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    prompts.share(cache / "tether")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # subprocesses
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(before)


@pytest.fixture
def handlers_back() -> Iterator[None]:
    """`tether.cli.run._drive` leaves record-only SIGINT / SIGTERM handlers for `run_command`
    to replace: a test that drives it directly puts the previous ones back."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in before.items():
        if handler is not None:
            signal.signal(sig, handler)


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
