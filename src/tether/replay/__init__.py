"""`tether replay`: a stored session re-run offline against a chosen provider's wire contract.

Owns: replaying stored sessions (tether's own, or other agents' transcripts imported by
`tether.session.transcripts`) to a target: the stored assistant turns are served by a scripted
provider, tool calls are re-executed in a scratch copy of the folder or served from the stored
results, and every request is checked against the target's published rules
(`tether.wire.contract`) as built by that target's real request builder, with no network.
`run` holds the replay itself, `contract` the per-target offline checkers.
Does not own: the CLI (`tether.cli.replay`), the rules, the wire passes.
"""

from tether.replay.contract import Checker, checker
from tether.replay.run import (
    Finding,
    ReplayReport,
    replay_run,
    replay_stored,
    split_segments,
    tool_specs,
)

__all__ = [
    "Checker",
    "Finding",
    "ReplayReport",
    "checker",
    "replay_run",
    "replay_stored",
    "split_segments",
    "tool_specs",
]
