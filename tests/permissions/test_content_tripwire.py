"""The `write` content trip-wire: a write whose content names an existing path outside the
project is asked about in every approval mode, refused when no one can answer (headless), and
let through by an `allow` rule; paths inside the project, missing paths and system locations
(`/usr/bin/env`, `/dev/null`) do not trip it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent
from kit.events import results
from kit.hosts import ScriptedApprover
from tether import ApprovalDecision
from tether.agent.events import AgentEvent
from tether.agent.host import Host
from tether.permissions.content import named_paths, outside_paths, tripwire_reason
from tether.testing import ScriptedProvider, call


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder and an existing file beside it (outside)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "inside.txt").write_text("in")
    secret = tmp_path / "other" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text("x")
    return root, secret


def test_what_names_means(tmp_path: Path) -> None:
    root, secret = project(tmp_path)
    text = (
        "#!/usr/bin/env python3\n"
        f"open('{secret}')  # the outside file\n"
        f"cat {root}/inside.txt > /dev/null\n"
        f"see {tmp_path}/missing.txt and src/a/b and http://host/x and ./local\n"
        "cp ../other/notes.txt here.\n"
    )
    assert named_paths("a/b ./c http://h/x /") == []
    assert f"{secret}" in named_paths(text) and "../other/notes.txt" in named_paths(text)
    assert outside_paths(text, str(root)) == [str(secret), "../other/notes.txt"]
    assert outside_paths(f"{root}/inside.txt /usr/bin/env", str(root)) == []
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("")
    assert outside_paths("edit ~/.ssh/config now", str(root), home=str(home)) == ["~/.ssh/config"]
    reason = tripwire_reason("write", {"content": text}, str(root))
    assert reason is not None and str(secret) in reason and "outside the project" in reason
    assert tripwire_reason("edit", {"content": text}, str(root)) is None


@given(st.text(alphabet=st.sampled_from("ab/.~ \n'\"-_"), max_size=60))
def test_named_paths_are_words_of_the_content(text: str) -> None:
    words = named_paths(text)
    assert len(words) == len(set(words))
    for w in words:
        assert w in text and w.startswith(("/", "~/", "../")) and w not in ("/", "~/", "../")


async def test_headless_write_naming_an_outside_path_is_refused(tmp_path: Path) -> None:
    root, secret = project(tmp_path)
    content = f"rm -rf {secret.parent}\n"
    provider = ScriptedProvider([call("write", path="clean.sh", content=content), "ok"])
    events: list[AgentEvent] = []
    agent = make_agent(provider, root, sandbox="any", approval="auto", builtins=True, events=events)
    await agent.run("go")
    assert not (root / "clean.sh").exists()
    [res] = results(events)
    assert res.is_error and "refused" in res.content and str(secret.parent) in res.content
    assert "outside the project" in res.content


async def test_write_naming_an_outside_path_is_asked_even_in_auto(tmp_path: Path) -> None:
    root, secret = project(tmp_path)
    provider = ScriptedProvider(
        [
            call("write", id="c1", path="a.sh", content=f"cat {secret}\n"),
            call("write", id="c2", path="b.sh", content=f"cat {root}/inside.txt /nope/x\n"),
            call("write", id="c3", path="c.sh", content=f"cat {secret}\n"),
            "done",
        ]
    )
    host = ScriptedApprover(ApprovalDecision.once(), ApprovalDecision.deny("not that file"))
    agent = make_agent(
        provider, root, sandbox="any", approval="auto", builtins=True, host=Host(approver=host)
    )
    await agent.run("go")
    assert [r.call.id for r in host.seen] == ["c1", "c3"]
    assert str(secret) in host.seen[0].reason and "line: `cat" in host.seen[0].reason
    assert (root / "a.sh").exists() and (root / "b.sh").exists()
    assert not (root / "c.sh").exists()


async def test_an_allow_rule_lets_the_write_through_headless(tmp_path: Path) -> None:
    root, secret = project(tmp_path)
    provider = ScriptedProvider([call("write", path="a.sh", content=f"cat {secret}\n"), "ok"])
    agent = make_agent(
        provider,
        root,
        sandbox="any",
        approval="auto",
        builtins=True,
        settings={"permissions": {"allow": ["write(a.sh)"]}},
    )
    await agent.run("go")
    assert (root / "a.sh").read_text() == f"cat {secret}\n"
