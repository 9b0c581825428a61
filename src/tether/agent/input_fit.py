"""Whether new input can fit the model's context window (pure: text in, a message out).

Owns: `input_overflow`, the one rule `tether run` (prompt + stdin messages) and the TUI (a typed
prompt) use to refuse input that cannot fit before anything is sent or written.
Does not own: the token estimate (`tether.tokens`), what the host does with the
refusal (the CLI exits 5; the TUI keeps the prompt in the editor).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tether.messages import Turn
from tether.tokens import estimate_tokens, text_tokens

if TYPE_CHECKING:
    from tether.agent.agent import Agent


def fixed_tokens(agent: Agent) -> int:
    """What every request of `agent` sends besides its messages: the system prompt and the
    tool schemas (estimated as the budget counts them, `tether.agent.turn.budget`)."""
    from tether.agent.turn.budget import PromptEstimate

    return PromptEstimate().tokens(agent.system, agent.parts.registry.specs(), ())


def input_tokens(
    prompt: str | None,
    *,
    messages: Sequence[Turn] = (),
    system: str | None = None,
    attached: Sequence[str] = (),
) -> int:
    """The estimated tokens of new input: `prompt`, the text it `attached` (`@path` files and
    folders), extra `messages` and a `system` prompt (ceil(chars / 4) per message,
    `tether.tokens`)."""
    tokens = estimate_tokens(messages) + (text_tokens(prompt) if prompt else 0)
    tokens += sum(text_tokens(text) for text in attached)
    if system:
        tokens += text_tokens(system)
    return tokens


def input_overflow(
    prompt: str | None,
    window_tokens: int,
    *,
    messages: Sequence[Turn] = (),
    system: str | None = None,
    attached: Sequence[str] = (),
    fixed_tokens: int = 0,
) -> str | None:
    """The refusal message when the new input, with what every request sends anyway
    (`fixed_tokens`: the system prompt and the tool schemas), is estimated above
    `window_tokens` (the raw context window, in tokens), else None.

    Only input that cannot fit at all is refused: compaction cannot shrink the new prompt
    itself nor what it attached (it keeps the user's messages verbatim), nor the system prompt
    and the tools, so such input could never be sent, and a session that stored it could never
    go on. The message names both figures and the way out (a file the agent reads in parts).
    """
    tokens = input_tokens(prompt, messages=messages, system=system, attached=attached)
    if tokens + fixed_tokens <= max(window_tokens, 1):
        return None
    fixed = f" (with {fixed_tokens} of system prompt and tools)" if fixed_tokens else ""
    return (
        f"the input is about {tokens} tokens{fixed} but the model's context window is "
        f"{window_tokens} tokens; nothing was sent. Save the text to a file in the working "
        "folder and ask the agent to read it in parts"
    )
