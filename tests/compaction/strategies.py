"""Hypothesis strategies for the compaction policy tests: turns, limits, policies, usages."""

from __future__ import annotations

from hypothesis import strategies as st

from tether.compaction import CompactionPolicy, ModelLimits
from tether.messages import (
    CompactSummaryBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    Usage,
)

texts = st.text(max_size=60)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)

blocks: st.SearchStrategy[ContentBlock] = st.one_of(
    st.builds(TextBlock, text=texts),
    st.builds(ThinkingBlock, text=texts, summary=st.tuples() | st.tuples(texts)),
    st.builds(RedactedThinkingBlock, data=texts),
    st.builds(
        ToolCallBlock,
        id=st.text(min_size=1, max_size=5),
        name=st.text(min_size=1, max_size=8),
        arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    ),
    st.builds(
        ToolResultBlock,
        tool_call_id=st.just("c"),
        content=st.lists(
            st.builds(TextBlock, text=texts)
            | st.builds(ImageBlock, media_type=st.just("image/png"), data=st.just("AA==")),
            max_size=3,
        ).map(tuple),
        is_error=st.booleans(),
    ),
    st.builds(ImageBlock, media_type=st.just("image/png"), data=st.just("AA==")),
    st.builds(DocumentBlock, media_type=st.just("application/pdf"), data=st.just("AA==")),
    st.builds(CompactSummaryBlock, summary=texts),
)


@st.composite
def turn_lists(draw: st.DrawFn, *, prefix: str = "t", max_size: int = 8) -> list[Turn]:
    """Turns with unique ids `<prefix><i>`."""
    n = draw(st.integers(0, max_size))
    return [
        Turn(
            id=f"{prefix}{i}",
            role=draw(st.sampled_from(["user", "assistant"])),
            content=tuple(draw(st.lists(blocks, max_size=3))),
        )
        for i in range(n)
    ]


any_limits = st.builds(
    ModelLimits,
    context_window=st.integers(-10, 2_000_000),
    max_output_tokens=st.integers(-10, 300_000),
)
sane_limits = st.builds(
    ModelLimits,
    context_window=st.integers(1, 2_000_000),
    max_output_tokens=st.integers(0, 300_000),
)
fractions = st.floats(allow_nan=True, allow_infinity=True) | st.floats(0.01, 1.0)
any_policy = st.builds(
    CompactionPolicy,
    threshold=fractions,
    output_reserve=st.integers(-10, 100_000),
    thinking_budget=st.integers(-10, 100_000),
    hysteresis=fractions,
    runaway_total=fractions,
    runaway_growth=fractions,
)
usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 500_000),
    output_tokens=st.integers(0, 100_000),
    cache_read_tokens=st.integers(0, 500_000),
    cache_write_tokens=st.integers(0, 100_000),
)
