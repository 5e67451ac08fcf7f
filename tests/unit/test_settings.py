"""Settings from the environment: a bad value is one ConfigError naming the variable."""

from __future__ import annotations

import pytest

from server.config import ConfigError, Settings


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CASEWORK_POOL_MAX", "abc", "CASEWORK_POOL_MAX='abc': expected a whole number"),
        ("CASEWORK_POOL_MAX", "0", "CASEWORK_POOL_MAX='0': expected at least 1"),
        ("CASEWORK_POOL_MIN", "50", "CASEWORK_POOL_MIN=50 is more than CASEWORK_POOL_MAX=20"),
        ("CASEWORK_WORKER_CONCURRENCY", "1.5", "CASEWORK_WORKER_CONCURRENCY='1.5': expected"),
        ("CASEWORK_TOKEN_CACHE_SECONDS", "soon", "CASEWORK_TOKEN_CACHE_SECONDS='soon': expected"),
        ("CASEWORK_APPLY_BACKOFF_SECONDS", "-1", "CASEWORK_APPLY_BACKOFF_SECONDS='-1': expected"),
        ("CASEWORK_MAX_BODY_BYTES", "lots", "CASEWORK_MAX_BODY_BYTES='lots': expected"),
        ("CASEWORK_ALLOWED_ORIGINS", "console.example.com", "'console.example.com' is not an"),
        ("CASEWORK_ALLOWED_ORIGINS", "https://a.example/app", "'https://a.example/app' is not"),
        ("CASEWORK_ALLOWED_ORIGINS", "ftp://a.example", "'ftp://a.example' is not an origin"),
    ],
)
def test_a_bad_value_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    for variable in ("CASEWORK_POOL_MIN", "CASEWORK_POOL_MAX"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(name, value)

    with pytest.raises(ConfigError) as refused:
        Settings.from_env()

    assert message in str(refused.value)


def test_allowed_origins_are_written_as_browsers_send_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "CASEWORK_ALLOWED_ORIGINS",
        " https://Console.Example.com:443/, http://localhost:5173,,https://console.example.com",
    )

    assert Settings.from_env().allowed_origins == (
        "https://console.example.com",
        "http://localhost:5173",
    )


def test_no_allowed_origins_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CASEWORK_ALLOWED_ORIGINS", raising=False)

    assert Settings.from_env().allowed_origins == ()
