"""Compaction policy: context pressure, model windows and the decision when to compact.

Owns (pure: imports only `tether.messages`, no I/O, no clock, inputs never mutated):
    pressure   ModelLimits, CompactionPolicy, Pressure, occupied_tokens, estimate_tokens,
               effective_window, trigger_reached, text_tokens
    monitor    ContextMonitor, Decision (explicit state across requests)
    windows    parse_windows_setting, parse_overflow_limit
    prune      PrunePolicy, Pruner, plan_prune, apply_prune (old tool results, before the summary)
    idle       IdlePolicy, IdleWatch, cache_lifetime_s (compact after the prompt cache expired)
    reads      touched (what a call read or changed), StaleReads (stale `read` outputs stubbed),
               ReadDedup (unchanged re-reads pointed at the earlier output)
Does not own: the summarize call, markers, or the loop (edges built on this package), nor the
model table and the limits resolution order (`tether.providers.catalog`: the caller resolves a
model's `ModelLimits` there and passes them in).
"""

from tether.compaction.monitor import ContextMonitor, Decision
from tether.compaction.pressure import (
    CompactionPolicy,
    ModelLimits,
    Pressure,
    effective_window,
    estimate_tokens,
    message_tokens,
    occupied_tokens,
    text_tokens,
    trigger_reached,
)
from tether.compaction.windows import parse_overflow_limit, parse_windows_setting

__all__ = [
    "CompactionPolicy",
    "ContextMonitor",
    "Decision",
    "ModelLimits",
    "Pressure",
    "effective_window",
    "estimate_tokens",
    "message_tokens",
    "occupied_tokens",
    "parse_overflow_limit",
    "parse_windows_setting",
    "text_tokens",
    "trigger_reached",
]
