"""Environment scrubbing and secret redaction (T31)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.tools import DEFAULT_REFUSED, redact_secrets, scrubbed_env, secret_values
from tether.tools.env import (  # pyright: ignore[reportPrivateUsage]
    _SECRET_GATES,  # pyright: ignore[reportPrivateUsage]
    _SECRET_PREFIXES,  # pyright: ignore[reportPrivateUsage]
    _SECRET_SHAPES,  # pyright: ignore[reportPrivateUsage]
    is_refused,
    may_hold_secret,
)


def test_scrubbed_env_drops_keys_by_name_and_pattern() -> None:
    base = {
        "ANTHROPIC_API_KEY": "a",
        "OPENAI_API_KEY": "b",
        "HF_TOKEN": "c",
        "GOOGLE_API_KEY": "d",
        "some_api_key": "e",  # case-insensitive
        "GITHUB_TOKEN": "f",
        "DJANGO_SECRET": "g",
        "DB_PASSWORD": "h",
        "AWS_SECRET_ACCESS_KEY": "i",
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "KEYBOARD": "us",
        "TOKENIZERS_PARALLELISM": "false",
    }
    out = scrubbed_env(base)
    assert out == {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "KEYBOARD": "us",
        "TOKENIZERS_PARALLELISM": "false",
    }
    assert "ANTHROPIC_API_KEY" in base  # the input is not modified


def test_refused_list_is_configurable() -> None:
    base = {"ANTHROPIC_API_KEY": "a", "CORP_CRED": "b", "PATH": "/bin"}
    assert scrubbed_env(base, refused=["corp_*"]) == {"ANTHROPIC_API_KEY": "a", "PATH": "/bin"}
    assert scrubbed_env(base, refused=[*DEFAULT_REFUSED, "CORP_*"]) == {"PATH": "/bin"}
    assert is_refused("x_token") and not is_refused("PATH")


def test_redaction() -> None:
    key = "sk-ant-api03-" + "A1b2" * 10
    text = f"ANTHROPIC_API_KEY={key}\nDB=my-long-db-password\nghp_{'x' * 36}\nok"
    red = redact_secrets(text, values=["my-long-db-password", "short"])
    assert key not in red and "my-long-db-password" not in red and "ghp_" not in red
    assert red.endswith("\nok") and red.count("[REDACTED]") == 3
    env = {"OPENAI_API_KEY": "sk-value-12345678", "PATH": "/usr/bin:/bin"}
    assert secret_values(env) == ("sk-value-12345678",)


_PREFIXES = st.sampled_from(
    [
        "sk-",
        "sk-ant-",
        "sk-proj-",
        "sk-or-v1-",
        "gsk_",
        "hf_",
        "AIza",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "AKIA",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
    ]
)
_BODY = st.text(alphabet="AZaz09_-", min_size=0, max_size=70)


def _joined(*parts: str) -> str:
    return "".join(parts)


_KEYISH = st.builds(_joined, _PREFIXES, st.text(alphabet="AZ09", min_size=8, max_size=60))


_ONE_KEY = st.builds(_joined, _BODY, _KEYISH, _BODY)
_MIXED = st.lists(
    st.one_of(_PREFIXES, _BODY, _KEYISH, st.sampled_from([" ", "\n"])), max_size=10
).map("".join)


@settings(max_examples=600, deadline=None)
@given(st.one_of(_ONE_KEY, _MIXED))
def test_redaction_prefilter_never_skips_a_secret(text: str) -> None:
    """The literal pre-check in `redact_secrets` skips the pattern only when it cannot match:
    the result equals running the pattern itself, on texts built from every prefix's pieces."""
    assert redact_secrets(text) == _SECRET_SHAPES.sub("[REDACTED]", text)


def test_the_gates_group_every_prefix_once_by_a_character_it_holds() -> None:
    grouped = [p for char, prefixes in _SECRET_GATES for p in prefixes if char in p]
    assert sorted(grouped) == sorted(_SECRET_PREFIXES)


@settings(max_examples=600, deadline=None)
@given(st.one_of(_ONE_KEY, _MIXED, st.text(alphabet="kAo_-sgxhfIzaKBEGIN", max_size=40)))
def test_the_gated_precheck_equals_searching_every_prefix(text: str) -> None:
    """The one-character gates skip a group's searches only when none of them can hit."""
    assert may_hold_secret(text) == any(p in text for p in _SECRET_PREFIXES)


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-" + "Ab1_" * 6,
        "sk-proj-" + "Ab1-" * 6,
        "sk-or-v1-" + "a" * 24,
        "sk-" + "B" * 24,
        "gsk_" + "c1" * 12,
        "hf_" + "D2" * 16,
        "AIza" + "e-" * 18,
        *(f"gh{kind}_" + "F3" * 19 for kind in "pousr"),
        "github_pat_" + "g_4" * 18,
        *(f"xox{kind}-" + "h-5" * 4 for kind in "abprs"),
        "AKIA" + "J6" * 8,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
    ],
)
def test_redaction_covers_every_key_shape(secret: str) -> None:
    """One secret of each shape the pattern knows, inside 2 KB of ordinary output: the
    literal pre-check lets each through to the pattern, which masks it."""
    text = "x" * 1000 + " " + secret + "\n" + "y" * 1000
    assert _SECRET_SHAPES.search(secret) is not None
    red = redact_secrets(text)
    assert secret not in red and "[REDACTED]" in red
