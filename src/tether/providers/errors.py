"""Classify provider faults into tether's error taxonomy.

Owns: mapping what the official SDKs raise (and what the HTTP layer under them raises) to one
`StreamError` with a stable `ErrorKind`; parsing `Retry-After`.
Does not own: deciding what to do with a fault (retry, fall back, compact, stop: the loop does), nor
detecting a stream that ended without its terminal event (the adapters do; nothing is raised then).

The shapes read here (measured with openai 3.57 / anthropic 2.14; this table is the record):

    fault                          anthropic SDK                     openai SDK
    HTTP 4xx/5xx                   APIStatusError(status_code, body=whole JSON)
                                                                     APIStatusError(body=body["error"])
    in-stream error after HTTP 200 APIStatusError, status_code 200   APIError, no status code
    connection reset mid-stream    raw httpx2.ReadError              APIConnectionError
    read timeout mid-stream        raw httpx2.ReadTimeout            APITimeoutError
    data line that is not JSON     json.JSONDecodeError              json.JSONDecodeError

Both SDKs of these versions use `httpx2` (a fork of httpx); older SDKs use `httpx`. Transport
errors of either are recognized. google-genai 3.6 raises `google.genai.errors.APIError` (`code` =
HTTP status, `details` = the error JSON `{"error": {"code", "message", "status"}}`, also for an
error object inside a 200 stream) and raw httpx/httpx2 transport errors; ollama 0.6 raises
`ollama.ResponseError` (`status_code`, -1 for an in-stream `{"error": ...}` line) and a builtin
`ConnectionError` when the server is unreachable. Those two SDKs are recognized only once
imported (they are looked up in `sys.modules`, so this module does not import them).

Rules (status first, then the error body):
    depleted quota or billing, by exact signals only: HTTP 402, error `type`/`code`
        `insufficient_quota` (OpenAI, a 429), `type` `billing_error` (Anthropic)
                                               → auth (an account problem: not retried, the next
                                                 provider in a fallback chain may take over);
                                                 `StreamError.code` names the signal
    401 / 403                                  → auth
    429, body type `rate_limit_error`          → rate_limited (Retry-After parsed)
    529, body type `overloaded_error`          → overloaded (Anthropic's overload status/type; an
                                                 OpenAI-compatible body saying "overloaded" too)
    400 / 413 whose body says the prompt is too long
        ("prompt is too long" Anthropic, "context_length_exceeded" / "maximum context length"
        OpenAI and compatible servers)         → context_overflow
    any other status                           → provider (`api_error`/`timeout_error`
                                                 bodies and 5xx are retried, see `retry.py`)
    connection errors, transport errors, timeouts → network
    json.JSONDecodeError                       → malformed
`asyncio.CancelledError` is a BaseException and is never caught here or by the adapters.
"""

from __future__ import annotations

import email.utils
import importlib
import json
import sys
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import Any, TypeVar, cast

import httpx

from tether.durations import header_seconds
from tether.providers.base import ErrorKind, StreamError

_T = TypeVar("_T")


def _loaded(name: str) -> tuple[type[BaseException], ...]:
    """`anthropic.<name>` and `openai.<name>` of the SDKs this process has already imported.
    An SDK never imported raised nothing, and importing one here would cost seconds and its
    own dependencies (anthropic's pulls in opentelemetry) for a run that never uses it."""
    found: list[type[BaseException]] = []
    for sdk in ("anthropic", "openai"):
        cls = getattr(sys.modules.get(sdk), name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def _http_error_types(name: str) -> tuple[type[BaseException], ...]:
    """`httpx.<name>` plus `httpx2.<name>`: the SDKs of anthropic>=2 / openai>=3 ride on httpx2,
    a fork of httpx whose exceptions are distinct classes; older SDKs use httpx."""
    found: list[type[BaseException]] = [cast(type[BaseException], getattr(httpx, name))]
    try:
        mod = importlib.import_module("httpx2")
    except ImportError:  # pragma: no cover - older SDKs
        return tuple(found)
    found.append(cast(type[BaseException], getattr(mod, name)))
    return tuple(found)


_TRANSPORT_ERRORS = _http_error_types("TransportError")
_DECODING_ERRORS = _http_error_types("DecodingError")

_CONTEXT_PATTERNS = (
    "prompt is too long",  # Anthropic 400 invalid_request_error
    "context_length_exceeded",  # OpenAI error code
    "maximum context length",  # OpenAI message; vLLM and most compatible servers
    "context window",  # e.g. "exceeds the context window" (llama.cpp, LM Studio)
    "too many tokens",
    "exceeds the maximum number of tokens",  # Gemini "input token count ... exceeds ..."
)


def _mapping(value: object) -> Mapping[str, object] | None:
    if isinstance(value, Mapping):
        return cast(Mapping[str, object], value)
    return None


def error_object(body: object) -> Mapping[str, object]:
    """The error object inside an error body.

    Anthropic sends `{"type": "error", "error": {"type", "message"}}`; OpenAI sends
    `{"error": {"message", "type", "code", "param"}}` and its SDK stores the inner object on the
    exception. Returns the inner object when there is one, the body itself when it is a mapping,
    else an empty mapping.
    """
    outer = _mapping(body)
    if outer is None:
        return {}
    inner = _mapping(outer.get("error"))
    return inner if inner is not None else outer


def _body_text(body: object) -> str:
    if body is None:
        return ""
    if isinstance(body, str):
        return body
    try:
        return json.dumps(body, default=str)
    except (TypeError, ValueError):
        return str(body)


def _body_status(err: Mapping[str, object]) -> int | None:
    """A status code carried inside an in-stream error body (Groq `status_code`, OpenRouter `code`)."""
    for key in ("status_code", "code", "status"):
        value = err.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
        if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
            return int(value)
    return None


QUOTA_CODES = frozenset({"insufficient_quota", "billing_error"})
"""Exact error `type`/`code` values meaning the account's quota or credit is used up (OpenAI
`insufficient_quota`, Anthropic `billing_error`). Prose is never matched: a message that merely
mentions "quota" is not a quota error."""


def error_code(body: object) -> str | None:
    """The provider's exact error identifier: the error object's string `code`, else its `type`
    (OpenAI sends both, `code` being the more specific; Anthropic sends `type`). Lower-cased."""
    err = error_object(body)
    for key in ("code", "type"):
        value = err.get(key)
        if isinstance(value, str) and value and value.lower() != "error":
            return value.lower()
    return None


def is_quota_error(status: int | None, body: object) -> bool:
    """True when the status or the error body's exact `type`/`code` says the quota or credit is
    depleted (see `QUOTA_CODES`; HTTP 402 Payment Required)."""
    if status == 402:
        return True
    err = error_object(body)
    return any(
        isinstance(v, str) and v.lower() in QUOTA_CODES for v in (err.get("type"), err.get("code"))
    )


def classify_status(status: int | None, body: object) -> ErrorKind:
    """Classify an HTTP status and its error body.

    Args:
        status: the HTTP status (200 for an error event inside a 200 stream; None when unknown,
            as for the openai SDK's in-stream `APIError`, in which case a status inside the body
            is used).
        body: the decoded error body (dict), its raw text, or None.

    Returns:
        The error kind, by the rules in the module docstring.
    """
    err = error_object(body)
    etype = err.get("type")
    etype = etype.lower() if isinstance(etype, str) else ""
    code = err.get("code")
    code = code.lower() if isinstance(code, str) else ""
    text = _body_text(body).lower()
    if status is None or status == 200:
        status = _body_status(err) or status

    if is_quota_error(status, body):
        return "auth"
    if status in (401, 403) or etype in ("authentication_error", "permission_error"):
        return "auth"
    if status == 429 or etype in ("rate_limit_error", "rate_limit_exceeded"):
        return "rate_limited"
    if code == "rate_limit_exceeded":
        return "rate_limited"
    if status == 529 or etype == "overloaded_error" or "overloaded" in text:
        return "overloaded"
    if (status in (400, 413) or status is None or status == 200) and (
        code == "context_length_exceeded" or any(p in text for p in _CONTEXT_PATTERNS)
    ):
        return "context_overflow"
    return "provider"


def parse_retry_after(
    headers: Mapping[str, str] | None,
    *,
    now: Callable[[], float] = time.time,
    reset_headers: bool = True,
) -> float | None:
    """Seconds to wait, from `retry-after-ms` (OpenAI), `retry-after` (seconds or an HTTP date),
    else OpenAI's `x-ratelimit-reset-requests` / `-tokens` durations (the longer).

    Args:
        headers: the response headers (case-insensitive mapping such as `httpx2.Headers`, or a dict
            with lower-case keys).
        now: the clock (Unix seconds) for an HTTP-date value.
        reset_headers: also read the `x-ratelimit-reset-*` headers (meaningful on a 429 only:
            OpenAI sends them on every response).

    Returns:
        Non-negative seconds, or None when absent or unparseable.
    """
    if headers is None:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return _reset_headers(lowered) if reset_headers else None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now())


_RESET_HEADERS = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")


def _reset_headers(lowered: Mapping[str, str]) -> float | None:
    """OpenAI's `x-ratelimit-reset-requests` / `-tokens` ("1s", "6m0s", "20ms"): the longer
    of the two, used only when no Retry-After was sent."""
    found = [header_seconds(lowered.get(name) or "") for name in _RESET_HEADERS]
    return max((s for s in found if s is not None), default=None)


def _message(body: object, fallback: str) -> str:
    err = error_object(body)
    msg = err.get("message")
    return msg if isinstance(msg, str) and msg else fallback


def _status_event(
    status: int | None, body: object, headers: Mapping[str, str] | None, fallback: str
) -> StreamError:
    kind = classify_status(status, body)
    message = _message(body, fallback)
    if is_quota_error(status, body):
        message = f"quota or credit exhausted: {message}"
    return StreamError(
        kind=kind,
        message=message,
        status_code=status,
        retry_after_s=parse_retry_after(headers, reset_headers=kind == "rate_limited"),
        code=error_code(body),
    )


def classify_exception(exc: BaseException) -> StreamError:
    """Turn an exception raised while requesting or streaming into one terminal `StreamError`.

    Args:
        exc: what the SDK (or the HTTP layer under it) raised. Never pass
            `asyncio.CancelledError`: cancellation propagates, it is not a provider fault.

    Returns:
        The event. `status_code` is the HTTP status (200 for an error event inside a 200 stream);
        `retry_after_s` is set when the response sent `Retry-After` (or, on a 429, OpenAI's
        reset headers); `code` is the body's exact error type/code.
        Anything unrecognized is `provider`, with the exception type in the message.
    """
    # Status errors first: both SDKs' APIStatusError carry the response.
    sdk: Any = exc
    if isinstance(exc, _loaded("APIStatusError")):
        return _status_event(sdk.status_code, sdk.body, sdk.response.headers, sdk.message)
    if isinstance(exc, _loaded("APIConnectionError")):
        timed_out = isinstance(exc, _loaded("APITimeoutError"))
        what = "timed out" if timed_out else "connection error"
        return StreamError(kind="network", message=f"{what}: {sdk.message}")
    if isinstance(exc, _loaded("APIError")):
        # openai: an error event inside an HTTP 200 stream (no status code; the body tells).
        return StreamError(
            kind=classify_status(None, sdk.body),
            message=_message(sdk.body, sdk.message),
            status_code=200,
            code=error_code(sdk.body),
        )
    other = _other_sdk_error(exc)
    if other is not None:
        return other
    if isinstance(exc, json.JSONDecodeError):
        return StreamError(kind="malformed", message=f"a stream data line is not JSON: {exc.msg}")
    if isinstance(exc, _DECODING_ERRORS):
        return StreamError(kind="malformed", message=f"undecodable response body: {exc}")
    if isinstance(exc, (*_TRANSPORT_ERRORS, TimeoutError, ConnectionError)):
        return StreamError(kind="network", message=f"{type(exc).__name__}: {exc}".rstrip(": "))
    return StreamError(kind="provider", message=f"{type(exc).__name__}: {exc}")


def _retry_delay(details: object) -> float | None:
    """Gemini's `RetryInfo.retryDelay` (e.g. `"17s"`) inside an error's `details`, in seconds."""
    for item in _list(error_object(details).get("details")):
        delay = _mapping(item)
        value = delay.get("retryDelay") if delay is not None else None
        if isinstance(value, str) and value.endswith("s"):
            try:
                return max(0.0, float(value[:-1]))
            except ValueError:
                return None
    return None


def _list(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else []


def _other_sdk_error(exc: BaseException) -> StreamError | None:
    """google-genai `APIError` / ollama `ResponseError`, when those SDKs are loaded."""
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None and isinstance(exc, genai_errors.APIError):
        code = cast(object, getattr(exc, "code", None))
        status = code if isinstance(code, int) and 100 <= code <= 599 else None
        details = cast(object, getattr(exc, "details", None))
        message = cast(object, getattr(exc, "message", None))
        kind = classify_status(status, details)
        return StreamError(
            kind=kind,
            message=message if isinstance(message, str) and message else str(exc),
            status_code=status,
            retry_after_s=_retry_delay(details) if kind in ("rate_limited", "overloaded") else None,
            code=error_code(details),
        )
    ollama_mod = sys.modules.get("ollama")
    if ollama_mod is not None and isinstance(exc, ollama_mod.ResponseError):
        code = cast(object, getattr(exc, "status_code", -1))
        status = code if isinstance(code, int) and 100 <= code <= 599 else None
        error = cast(object, getattr(exc, "error", ""))
        text = error if isinstance(error, str) else str(error)
        return StreamError(
            kind=classify_status(status if status is not None else 200, {"message": text}),
            message=text,
            status_code=status if status is not None else 200,
        )
    return None


async def guard_stream(items: AsyncIterable[_T]) -> AsyncIterator[_T | StreamError]:
    """Relay an SDK stream; on a provider fault yield one classified `StreamError` and stop.

    Only the SDK's own iteration is guarded (translation bugs still raise), and
    `asyncio.CancelledError` is a BaseException: it propagates.
    """
    iterator = aiter(items)
    while True:
        try:
            item = await anext(iterator)
        except StopAsyncIteration:
            return
        except Exception as exc:
            yield classify_exception(exc)
            return
        yield item
