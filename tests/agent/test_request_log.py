"""`ScriptedProvider.requests` keeps requests compactly (issue 12): a run of N requests whose
views extend each other stores O(N) turns, not O(N²), and reads back what was received."""

from __future__ import annotations

from typing import Any

from tether.messages import Turn, text_turn
from tether.providers.base import ModelRequest
from tether.testing import RequestLog, ScriptedProvider


def _req(turns: list[Turn], model: str = "m") -> ModelRequest:
    return ModelRequest(model=model, messages=tuple(turns), is_wire_view=True)


def test_extending_requests_share_storage_and_read_back_exactly() -> None:
    log = RequestLog()
    turns: list[Turn] = []
    sent: list[ModelRequest] = []
    for k in range(300):
        turns.append(text_turn(f"t{k}", "user" if k % 2 == 0 else "assistant", f"m{k}"))
        sent.append(_req(turns, model=f"m{k}"))
        log.append(sent[-1])
    # a compaction: a short view that does not extend the previous one, then growth again
    short = [text_turn("marker", "user", "summary"), *turns[-2:]]
    for k in range(5):
        short.append(text_turn(f"n{k}", "user", "x"))
        sent.append(_req(short))
        log.append(sent[-1])
    assert len(log) == len(sent) and log == sent and list(log) == sent
    assert log[0] == sent[0] and log[-1] == sent[-1] and log[1:3] == sent[1:3]
    assert log[150].messages[10] is sent[150].messages[10]
    stored = len(log._spine)  # pyright: ignore[reportPrivateUsage]
    assert stored == 300 + 3 + 5  # every turn once per segment; a list would hold ~45,000
    log.clear()
    assert log == [] and len(log) == 0


def test_the_scripted_providers_info_is_built_once_until_a_figure_changes() -> None:
    """The request path asks a provider's `info` twice per request: the scripted provider
    builds it once, and again when one of its figures changed."""
    provider = ScriptedProvider(["done"], context_window=100_000)
    first = provider.info
    assert provider.info is first and first.context_window == 100_000
    provider.context_window = 50_000
    changed = provider.info
    assert changed is not first and changed.context_window == 50_000
    provider.image_input = True
    assert provider.info.image_input is True and provider.info.context_window == 50_000


def test_a_logged_request_keeps_every_field_but_its_messages() -> None:
    log = RequestLog()
    request = ModelRequest(
        model="m",
        messages=(text_turn("t0", "user", "hi"),),
        system="s",
        max_output_tokens=7,
        temperature=0.5,
        is_wire_view=True,
        thinking_budget_tokens=1_024,
        effort="high",
    )
    log.append(request)
    assert log[0] == request and log._items[0][0].messages == ()  # pyright: ignore[reportPrivateUsage]


class _CountingSpine(list[Turn]):
    """A spine that counts the slices read of it (each a copy)."""

    slices = 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            self.slices += 1
        return super().__getitem__(index)  # pyright: ignore[reportUnknownArgumentType]


def test_append_copies_no_part_of_the_log() -> None:
    """Recording a request that extends the last one compares it with the last request's own
    tuple: no copy of the stored turns per request (a long run's log did O(history) copying
    per request: issue 38)."""
    log = RequestLog()
    spine = _CountingSpine()
    log._spine = spine  # pyright: ignore[reportPrivateUsage]
    turns: list[Turn] = []
    requests: list[ModelRequest] = []
    for k in range(40):
        turns.append(text_turn(f"t{k}", "user" if k % 2 == 0 else "assistant", f"m{k}"))
        requests.append(ModelRequest(model="m", messages=tuple(turns)))
        log.append(requests[-1])
    assert spine.slices == 0
    assert len(spine) == 40  # each turn stored once
    assert list(log) == requests
