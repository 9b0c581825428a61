"""The check of a request's params before the SDK sees them: a request whose params do not
fit the protocol's schema is answered with JSON-RPC's -32602 and a one-line `details`
(`session/new: cwd: field required; mcpServers: field required`), as tether's other errors
are, instead of the SDK's list of pydantic errors with their documentation URLs.

Owns: `invalid_params_reply`. Does not own: reading the lines (`tether.acp.stdio`), the
protocol's schema (the SDK's `acp.schema` models, the same ones its router validates with).
Pure: a parsed message in, a reply or None out.
"""

from __future__ import annotations

from typing import Any

from acp.meta import AGENT_METHODS
from pydantic import BaseModel, ValidationError

from acp import schema

__all__ = ["invalid_params_reply"]

_MODELS: dict[str, type[BaseModel]] = {
    AGENT_METHODS["initialize"]: schema.InitializeRequest,
    AGENT_METHODS["authenticate"]: schema.AuthenticateRequest,
    AGENT_METHODS["session_new"]: schema.NewSessionRequest,
    AGENT_METHODS["session_load"]: schema.LoadSessionRequest,
    AGENT_METHODS["session_prompt"]: schema.PromptRequest,
    AGENT_METHODS["session_set_mode"]: schema.SetSessionModeRequest,
}
"""The requests tether answers, with the model the SDK's router validates each one's params
with (`acp.agent.router.build_agent_router`)."""


def invalid_params_reply(message: dict[str, Any]) -> dict[str, Any] | None:
    """The -32602 reply to request `message` when its params do not fit its method's schema;
    None for a valid one, a notification, or a method not checked here (the SDK answers)."""
    method = message.get("method")
    if "id" not in message or not isinstance(method, str) or method not in _MODELS:
        return None
    try:
        _MODELS[method].model_validate(message.get("params"))
    except ValidationError as exc:
        details = f"{method}: {_one_line(exc)}"
        return {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": -32602, "message": "Invalid params", "data": {"details": details}},
        }
    return None


def _one_line(exc: ValidationError) -> str:
    parts: list[str] = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(p) for p in error["loc"])
        if not where:  # the params themselves: missing, or not an object
            parts.append("params must be an object")
            continue
        parts.append(f"{where}: {error['msg'][:1].lower()}{error['msg'][1:]}")
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
