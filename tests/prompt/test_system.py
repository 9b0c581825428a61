"""The system prompt from a session's facts (pure): the blocks and their order, the skills
listing's cap, the codec that stores the facts, and the prompt's size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.compaction.pressure import text_tokens
from tether.prompt.facts import Environment, GitFacts, InstructionFile, SessionContext, SkillEntry
from tether.prompt.system import (
    DEFAULT_PROMPT,
    compact_prompt,
    git_line,
    skill_line,
    skills_listing,
    system_prompt,
)

ENV = Environment(
    cwd="/w/app",
    platform="Linux 6.1 x86_64",
    date="2026-12-03",
    git=GitFacts(root="/w/app", branch="main", has_commits=True, dirty=True),
    sandbox="bwrap",
    network=False,
    approval="ask",
)
FILE = InstructionFile(
    path="/w/app/AGENTS.md", name="AGENTS.md", scope="project", sha256="0" * 64, size_bytes=12,
    text="Run `make test`.",
)
SKILL = SkillEntry(name="pdf", description="Fills PDF forms.", location="/w/app/.agents/skills/pdf/SKILL.md")

words = st.text(alphabet="abc xyz-.", min_size=1, max_size=40)
skills = st.builds(
    SkillEntry,
    name=st.from_regex(r"[a-z]{1,8}(-[a-z]{1,5})?", fullmatch=True),
    description=words,
    location=st.just("/s/SKILL.md"),
)
contexts = st.builds(
    SessionContext,
    environment=st.builds(
        Environment,
        cwd=st.just("/w"),
        platform=words,
        date=st.just("2026-01-02"),
        git=st.none() | st.builds(GitFacts, root=st.just("/w"), branch=st.none() | words,
                                  has_commits=st.booleans(), dirty=st.booleans()),
        sandbox=st.sampled_from(["bwrap", "landlock", "none"]),
        network=st.booleans(),
        approval=st.sampled_from(["ask", "auto-edit", "read-only", "auto"]),
    ),
    instructions=st.lists(st.builds(InstructionFile, path=st.just("/w/AGENTS.md"), name=words,
                                    scope=st.just("project"), sha256=st.just("x"),
                                    size_bytes=st.integers(0, 99), text=words), max_size=3).map(tuple),
    skills=st.lists(skills, max_size=5).map(tuple),
    skills_budget_chars=st.integers(0, 500),
)


@given(contexts, st.none() | words, st.none() | words)
def test_the_prompt_is_a_function_of_the_facts(ctx: SessionContext, base: str | None, append: str | None) -> None:
    """Byte stability: the same facts give the same bytes, also after the facts went through
    the session file's codec (a resume)."""
    first = system_prompt(ctx, base=base, append=append)
    again = system_prompt(SessionContext.from_json(ctx.to_json()), base=base, append=append)
    assert first == again and first is not None
    assert compact_prompt(ctx, base=base, append=append) == compact_prompt(
        SessionContext.from_json(ctx.to_json()), base=base, append=append
    )
    if append:
        assert first.endswith(append)
    if base is not None:
        assert first.startswith(base) and DEFAULT_PROMPT not in first
    else:
        assert first.startswith(DEFAULT_PROMPT)
    for f in ctx.instructions:
        assert f.text.strip() in first


def test_blocks_come_in_order_base_instructions_skills_append() -> None:
    ctx = SessionContext(environment=ENV, instructions=(FILE,), skills=(SKILL,))
    text = system_prompt(ctx, append="APPENDED")
    assert text is not None
    order = [text.index(x) for x in ("# Environment", "# Instruction files", "# Skills", "APPENDED")]
    assert order == sorted(order)
    assert "- Git: repository at /w/app, branch main, uncommitted changes" in text
    assert "Network: off" in text and "Sandbox: bubblewrap" in text
    replaced = system_prompt(ctx, base="You review code.")
    assert replaced is not None and replaced.startswith("You review code.\n\n# Instruction files")


def test_without_facts_only_what_was_given_is_sent() -> None:
    assert system_prompt(None) is None
    assert system_prompt(None, base="b", append="a") == "b\n\na"
    assert compact_prompt(None) is None


def test_git_states_are_said_never_raised() -> None:
    assert git_line(Environment(cwd="/", platform="", date="")) == "not a git repository"
    none = Environment(cwd="/", platform="", date="", git_note="git is not installed")
    assert git_line(none) == "git is not installed"
    fresh = Environment(cwd="/", platform="", date="",
                        git=GitFacts(root="/r", branch="main", has_commits=False, dirty=False))
    assert git_line(fresh) == "repository at /r, no commits yet"
    detached = Environment(cwd="/", platform="", date="",
                           git=GitFacts(root="/r", branch=None, has_commits=True, dirty=False))
    assert git_line(detached) == "repository at /r, detached HEAD, clean"


@given(st.lists(skills, max_size=30), st.integers(min_value=0, max_value=2_000))
def test_the_skills_listing_is_a_prefix_within_its_budget(all_skills: list[SkillEntry], budget: int) -> None:
    listed, left = skills_listing(all_skills, budget)
    assert list(listed) == all_skills[: len(listed)]
    assert len(listed) + left == len(all_skills)
    assert sum(len(skill_line(s)) + 1 for s in listed) <= budget
    if left:
        nxt = all_skills[len(listed)]
        assert sum(len(skill_line(s)) + 1 for s in listed) + len(skill_line(nxt)) + 1 > budget


def test_left_out_skills_are_counted_in_a_note() -> None:
    many = tuple(SkillEntry(name=f"s{i}", description="d" * 50, location="/x/SKILL.md") for i in range(40))
    text = system_prompt(SessionContext(environment=ENV, skills=many, skills_budget_chars=300))
    assert text is not None and "more skill(s) not listed" in text
    assert "- s0:" in text and "- s39:" not in text


def test_the_default_prompt_is_within_its_token_budget() -> None:
    """The issue's aim: at most 1,500 tokens for tether's text and the environment block."""
    text = system_prompt(SessionContext(environment=ENV))
    assert text is not None
    assert text_tokens(text) <= 1_500


def test_the_compact_form_is_short_and_cuts_long_instructions() -> None:
    long = InstructionFile(path="/a", name="AGENTS.md", scope="project", sha256="x", size_bytes=9000,
                           text="rule\n" * 2000)
    text = compact_prompt(SessionContext(environment=ENV, instructions=(long,), skills=(SKILL,)))
    assert text is not None and len(text) < 2_400
    assert text.startswith("Today is 2026-12-03. Git: repository at /w/app")
    assert "(cut)" in text and "pdf" in text
