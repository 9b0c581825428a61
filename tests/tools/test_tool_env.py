"""Environment scrubbing and secret redaction (T31)."""

from __future__ import annotations

from tether.tools import DEFAULT_REFUSED, redact_secrets, scrubbed_env, secret_values
from tether.tools.env import is_refused


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
