"""tether.wire — pure passes from stored turns to the turns one provider request carries.

Owns: the wire view (`build_view`, `ViewBuilder`) and its passes: marker elision, the reasoning
wire action, tool-id sanitation, pairing repair and the user-terminated tail; plus the
persist-time id re-minting and the resume helpers the loop uses. Imports only
`tether.messages` and `tether.errors`; no I/O, clocks or random ids.
"""

from tether.wire.ids import (
    MAX_ID_LENGTH,
    remint_tool_call_ids,
    sanitize_id,
    sanitize_tool_ids,
    tool_call_ids,
)
from tether.wire.markers import SUMMARY_HEADER, elide_markers, is_marker, render_marker
from tether.wire.pairing import (
    CONTINUE_TEXT,
    LOST_RESULT_TEXT,
    NO_OUTPUT_TEXT,
    PLACEHOLDER_TEXT,
    Repair,
    RepairHook,
    RepairKind,
    added_by_tether,
    check_pairing,
    render_result,
    repair_pairing,
)
from tether.wire.reasoning import (
    ReasoningAction,
    decode_gemini_signature,
    drop_earlier_thinking,
    issued_by_route,
    reasoning_action,
    sanitize_history_for_provider,
    thinking_must_be_disabled,
)
from tether.wire.resume import (
    INTERRUPTED_TEXT,
    TailState,
    classify_tail,
    filter_unresolved_tool_uses,
    interrupt_results,
    interrupted_results_turn,
    pending_tool_calls,
)
from tether.wire.server_tools import ServerToolAction, server_tool_action, server_tool_turn
from tether.wire.tail import ensure_user_tail
from tether.wire.view import ViewBuilder, build_view

__all__ = [
    "CONTINUE_TEXT",
    "INTERRUPTED_TEXT",
    "LOST_RESULT_TEXT",
    "MAX_ID_LENGTH",
    "NO_OUTPUT_TEXT",
    "PLACEHOLDER_TEXT",
    "SUMMARY_HEADER",
    "ReasoningAction",
    "Repair",
    "RepairHook",
    "RepairKind",
    "ServerToolAction",
    "TailState",
    "ViewBuilder",
    "added_by_tether",
    "build_view",
    "check_pairing",
    "classify_tail",
    "decode_gemini_signature",
    "drop_earlier_thinking",
    "elide_markers",
    "ensure_user_tail",
    "filter_unresolved_tool_uses",
    "interrupt_results",
    "interrupted_results_turn",
    "is_marker",
    "issued_by_route",
    "pending_tool_calls",
    "reasoning_action",
    "remint_tool_call_ids",
    "render_marker",
    "render_result",
    "repair_pairing",
    "sanitize_history_for_provider",
    "sanitize_id",
    "sanitize_tool_ids",
    "server_tool_action",
    "server_tool_turn",
    "thinking_must_be_disabled",
    "tool_call_ids",
]
