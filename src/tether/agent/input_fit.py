"""Whether new input can fit the model's context window (pure: text in, a message out).

Owns: `input_overflow`, the one rule `tether run` (prompt + stdin messages) and the TUI (a typed
prompt) use to refuse input that cannot fit before anything is sent or written.
Does not own: the token estimate (`tether.compaction.pressure`), what the host does with the
refusal (the CLI exits 5; the TUI keeps the prompt in the editor).
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.messages import Turn
from tether.tokens import estimate_tokens, text_tokens


def input_tokens(
    prompt: str | None, *, messages: Sequence[Turn] = (), system: str | None = None
) -> int:
    """The estimated tokens of new input: `prompt`, extra `messages` and a `system` prompt
    (ceil(chars / 4) per message, `tether.compaction.pressure`)."""
    tokens = estimate_tokens(messages) + (text_tokens(prompt) if prompt else 0)
    if system:
        tokens += text_tokens(system)
    return tokens


def input_overflow(
    prompt: str | None,
    window_tokens: int,
    *,
    messages: Sequence[Turn] = (),
    system: str | None = None,
) -> str | None:
    """The refusal message when the new input is estimated above `window_tokens` (the raw
    context window, in tokens), else None.

    Only input far over the window is refused: compaction cannot shrink the new prompt itself
    (it keeps the user's messages verbatim), so such input could never be sent. The message
    names both figures and the way out (a file the agent reads in parts).
    """
    tokens = input_tokens(prompt, messages=messages, system=system)
    if tokens <= max(window_tokens, 1):
        return None
    return (
        f"the input is about {tokens} tokens but the model's context window is "
        f"{window_tokens} tokens; nothing was sent. Save the text to a file in the working "
        "folder and ask the agent to read it in parts"
    )
