"""Compaction policy: context pressure, model windows and the decision when to compact.

Owns (pure: imports only `tether.messages`, no I/O, no clock, inputs never mutated):
    pressure   ModelLimits, CompactionPolicy, Pressure, occupied_tokens, estimate_tokens,
               effective_window, trigger_reached, text_tokens
    monitor    ContextMonitor, Decision (explicit state across requests)
    windows    resolve_limits, LimitsResolver, parse_windows_setting, parse_overflow_limit,
               KNOWN_MODELS, DEFAULT_LIMITS
Does not own: the summarize call, markers, or the loop (edges built on this package).
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
from tether.compaction.windows import (
    DEFAULT_LIMITS,
    KNOWN_MODELS,
    LimitsResolver,
    parse_overflow_limit,
    parse_windows_setting,
    resolve_limits,
)

__all__ = [
    "DEFAULT_LIMITS",
    "KNOWN_MODELS",
    "CompactionPolicy",
    "ContextMonitor",
    "Decision",
    "LimitsResolver",
    "ModelLimits",
    "Pressure",
    "effective_window",
    "estimate_tokens",
    "message_tokens",
    "occupied_tokens",
    "parse_overflow_limit",
    "parse_windows_setting",
    "resolve_limits",
    "text_tokens",
    "trigger_reached",
]
