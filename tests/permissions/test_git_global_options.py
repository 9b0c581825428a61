"""`bash(git push:*)` is not evaded by git's global options (trial5, MEDIUM safety):
`git -C . push`, `git --no-pager push`, `git -c x=y push` matched no rule. They are looked
through as the wrappers are; an `allow` rule applies through harmless ones only."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.permissions.rules import Rules
from tether.permissions.shell import Unparsable, split_forms

ASK = Rules.of(ask=["Bash(git push:*)"], deny=["Bash(cargo publish:*)", "Bash(npm publish *)"])
ALLOW = Rules.of(allow=["Bash(git push:*)", "Bash(git status)"])


@pytest.mark.parametrize(
    "line",
    [
        "git -C . push",
        "git --no-pager push origin main",
        "git -c x=y push",
        "git -c 'core.sshCommand=ssh -v' push",
        "git --git-dir=.git --work-tree=. push",
        "git --git-dir .git push",
        "git --namespace=n push",
        "git -P push --force",
        "timeout 9 git -C /tmp/x --no-optional-locks push",
        "echo hi && git -C sub push",
    ],
)
def test_git_global_options_do_not_evade_an_ask_rule(line: str) -> None:
    decision = ASK.decide("bash", {"command": line})
    assert decision.action == "ask", line
    assert decision.part is not None and decision.part.startswith("git ")
    assert decision.part != "git push" or line == "git push"  # shown as written


@pytest.mark.parametrize(
    ("line", "action"),
    [
        ("cargo +nightly publish", "deny"),
        ("cargo -Z unstable-options publish", "deny"),
        ("npm --prefix ../other publish --tag x", "deny"),
        ("npm --loglevel silly publish", "deny"),
        ("git --version", None),
        ("git -C . status", None),  # no rule names status
    ],
)
def test_other_programs_and_edges(line: str, action: str | None) -> None:
    assert ASK.decide("bash", {"command": line}).action == action


@pytest.mark.parametrize(
    ("line", "allowed"),
    [
        ("git --no-pager push", True),
        ("git -P status", True),
        ("git -c core.sshCommand=evil push", False),
        ("git -C /elsewhere push", False),
        ("git --git-dir=/x/.git push", False),
    ],
)
def test_allow_applies_through_harmless_options_only(line: str, allowed: bool) -> None:
    assert (ALLOW.decide("bash", {"command": line}).action == "allow") is allowed


_OPTION = st.sampled_from(
    ["-C .", "-C 'a b'", "-c x=y", "-c 'k=a b'", "--no-pager", "-P", "-p", "--bare",
     "--git-dir=.git", "--git-dir .git", "--work-tree=w", "--namespace=n", "--config-env=a=B",
     "--no-optional-locks", "--literal-pathspecs", "--attr-source=HEAD"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(options=st.lists(_OPTION, min_size=1, max_size=5), tail=st.sampled_from(["", " -f", " origin main"]))
def test_any_mix_of_global_options_is_asked(options: list[str], tail: str) -> None:
    line = f"git {' '.join(options)} push{tail}"
    assert ASK.decide("bash", {"command": line}).action == "ask", line
    forms = split_forms(line)
    assert not isinstance(forms, Unparsable) and forms[0][1] == f"git push{tail}".replace("'", "")


def test_always_allow_never_suggests_the_whole_program() -> None:
    """"Always allow" for `git -C . status` suggested `bash(git *)` (the second word is an
    option): now the subcommand through harmless options, else this command only."""
    from tether.permissions.rules import suggest

    rules = Rules.of(ask=["bash(rm *)"])
    for line, want in (
        ("git --no-pager log -1", ("bash(git log *)",)),
        ("git -C sub status", ("bash(git -C sub status)",)),
    ):
        d = rules.decide("bash", {"command": line})
        assert suggest("bash", {"command": line}, d) == want
