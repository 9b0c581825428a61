"""The embedded model's repetition penalty, with what it was just shown exempt.

Owns: `CopyPenalty` (a llama-cpp-python logits processor) and `exempt_tokens` (the token ids of
the latest tool results). Does not own: generation (`tether.providers.local.engine`).

Tiny models loop without a repetition penalty, so the embedded model generates with one
(llama.cpp's: each token generated within the last 64 has its logit divided by the penalty,
multiplied when negative). But the penalty also falls on a token the answer must repeat to
quote what a tool returned: to write `Python 3.11.7` the second `1` and the second `.` are
penalised, and SmolLM2-135M answered `Python 3.10.2` on every one of ten prompts (ten dates in
the system prompt) after reading `Python 3.11.7` from `python3 --version`. `CopyPenalty` is
the same penalty with the tokens of the latest tool results exempt: copying evidence is not a
loop, and everything else (the JSON protocol's own tokens, the model's free text) is penalised
as before. Before any tool result nothing is exempt and llama.cpp's own penalty is used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tether.messages import Turn

if TYPE_CHECKING:  # numpy comes with the `local` extra: imported where the model runs
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "PENALTY_LAST_N",
    "PROTOCOL_CHARS",
    "CopyPenalty",
    "exempt_tokens",
    "latest_results_text",
]

PENALTY_LAST_N = 64
"""How many generated tokens back the penalty looks (llama-cpp-python's `last_n_tokens_size`)."""


def latest_results_text(view: tuple[Turn, ...]) -> str:
    """The text of the last turn's tool results that are not errors ("" when it has none)."""
    if not view or not view[-1].tool_results:
        return ""
    return "\n".join(r.text for r in view[-1].tool_results if not r.is_error)


PROTOCOL_CHARS = frozenset('"{}')
"""A token holding one of these stays penalised even when a result holds it: they delimit the
JSON protocol's reply (a result of JSON text left the closing quote unpenalised and SmolLM2
ended its answer early: `bench/tasks.py`'s read_json_port)."""


def exempt_tokens(llm: Any, texts: Iterable[str]) -> frozenset[int]:
    """The token ids of `texts` as they may appear in a reply (tokenized alone and after a
    space and a quote: a token's id depends on what precedes it) that an answer copies
    character for character: digits and punctuation, not the protocol's delimiters."""
    out: set[int] = set()
    for text in texts:
        if not text:
            continue
        for variant in (text, " " + text, '"' + text):
            out.update(llm.tokenize(variant.encode("utf-8"), add_bos=False, special=False))
    return frozenset(t for t in out if _copyable(llm.detokenize([t]).decode("utf-8", "replace")))


def _copyable(piece: str) -> bool:
    """A token exempt when a result holds it: digits and punctuation only (a number, a version,
    a path's dots and slashes: what an answer quotes character for character), none of the
    protocol's delimiters. Words stay penalised: exempting them too changed what SmolLM2 wrote
    around a quoted number (read_json_port answered without the port)."""
    text = piece.strip()
    return bool(text) and not any(c.isalpha() for c in text) and not PROTOCOL_CHARS & set(text)


class CopyPenalty:
    """llama.cpp's repetition penalty over the last `last_n` generated tokens, except for
    `exempt` (called by llama-cpp-python with every token id so far and the next logits).

    Args:
        penalty: the divisor (> 1 penalises).
        exempt: token ids never penalised.
        last_n: how many generated tokens back to look.
    """

    def __init__(self, penalty: float, exempt: frozenset[int], last_n: int = PENALTY_LAST_N) -> None:
        self.penalty = penalty
        self.exempt = exempt
        self.last_n = last_n
        self._start: int | None = None

    def __call__(
        self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]
    ) -> npt.NDArray[np.single]:
        import numpy as np

        if self._start is None:  # the first call: everything so far is the prompt
            self._start = len(input_ids)
        generated = input_ids[self._start :][-self.last_n :]
        if not len(generated) or self.penalty == 1.0:
            return scores
        seen = np.unique(generated)
        if self.exempt:
            seen = seen[~np.isin(seen, np.fromiter(self.exempt, dtype=seen.dtype))]
        if not len(seen):
            return scores
        picked = scores[seen]
        scores[seen] = np.where(picked > 0, picked / self.penalty, picked * self.penalty)
        return scores
