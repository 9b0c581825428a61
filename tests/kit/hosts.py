"""A host's side for tests: an approver that answers from a script."""

from __future__ import annotations

import asyncio

from tether import ApprovalDecision, ApprovalRequest


class ScriptedApprover:
    """Answers approval requests with `answers` in order (`default` once they run out; None:
    running out is an error) and records each request in `seen`. `max_active` is the most
    requests it was asked at once; `pause_s` holds each answer back that long (so overlapping
    requests would show)."""

    def __init__(
        self,
        *answers: ApprovalDecision,
        default: ApprovalDecision | None = None,
        pause_s: float = 0.0,
    ) -> None:
        self.answers = list(answers)
        self.default = default
        self.pause_s = pause_s
        self.seen: list[ApprovalRequest] = []
        self.active = 0
        self.max_active = 0

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.seen.append(request)
        try:
            if self.pause_s:
                await asyncio.sleep(self.pause_s)
            if self.answers:
                return self.answers.pop(0)
            if self.default is None:
                raise AssertionError(f"approver asked more than scripted: {request!r}")
            return self.default
        finally:
            self.active -= 1
