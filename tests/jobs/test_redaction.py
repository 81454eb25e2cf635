"""Secrets out of what a run stores, in every form it can store them (jobs.store.redaction): a variable a model
names for its key whatever its name, the user:password of a URL, their URL-encoded and base64 forms (an HTTP
Basic header echoed back, a key inside a longer base64 text), and credential headers an endpoint echoes."""
from __future__ import annotations

import base64
import os
from urllib.parse import quote

import pytest

from jobs.store.redaction import DECLARED, declare_secret_variables, redact, scrub, secret_values

KEY = "k3y-Of-The-Judge+/=42"
USER, PASSWORD = "alice", "pw:Op3n S3same"


@pytest.fixture(autouse=True)
def clean_declarations(monkeypatch):
    monkeypatch.setenv(DECLARED, "")  # restored after the test: declarations outlive a load otherwise


def test_a_variable_a_model_names_is_secret_whatever_its_name(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)  # no secret-looking name: only the declaration makes it one
    assert redact(f"key={KEY}") == f"key={KEY}"
    declare_secret_variables(["JUDGE_KEY"])
    assert redact(f"key={KEY}") == "key=[redacted]"
    assert KEY not in redact(f"sent {quote(KEY, safe='')} and {KEY.replace('+', '%2B')}")


def test_every_base64_offset_of_a_secret_is_found_inside_a_longer_text(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    declare_secret_variables(["JUDGE_KEY"])
    for prefix in ("", "a", "ab", "abc", "abcd"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            blob = encode(f"{prefix}{KEY} and more".encode()).decode()
            clean = redact(f"payload {blob}")
            assert blob not in clean and "[redacted]" in clean, (prefix, encode)


def test_the_user_and_password_of_a_url_go_in_every_form(monkeypatch):
    url = f"http://{USER}:{quote(PASSWORD, safe='')}@127.0.0.1:9/v1"
    monkeypatch.setenv("JUDGE_BASE", url)
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    text = f"url {url} | header Basic {basic} | raw {PASSWORD} | quoted {quote(PASSWORD, safe='')}"
    clean = redact(text)
    for secret in (PASSWORD, quote(PASSWORD, safe=""), basic, f"{USER}:{quote(PASSWORD, safe='')}"):
        assert secret not in clean, secret
    assert "http://[redacted]@127.0.0.1:9/v1" in clean  # the host stays readable


def test_a_url_password_never_in_the_environment_is_still_removed():
    clean = redact("could not reach https://bob:hunter22@db.internal:5432/x (refused)")
    assert "hunter22" not in clean and "https://[redacted]@db.internal:5432/x" in clean


@pytest.mark.parametrize("echo", ['"authorization": "Bearer abc.def-ghi"', "Authorization: Basic YWxpY2U6cHc=",
                                  "'x-api-key': 'k-123456'", "api-key=k-123456"])
def test_echoed_credential_headers_lose_their_value(echo):
    clean = redact(f"HTTP 400: request headers {{{echo}, 'accept': 'application/json'}}")
    assert "[redacted]" in clean and "application/json" in clean
    assert not any(v in clean for v in ("abc.def-ghi", "YWxpY2U6cHc", "k-123456"))


def test_rows_are_scrubbed_like_texts(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    declare_secret_variables(["JUDGE_KEY"])
    row = {"error": f"echo {KEY}", "nested": [{"t": base64.b64encode(KEY.encode()).decode()}], "n": 3}
    assert scrub(row, secret_values()) == {"error": "echo [redacted]", "nested": [{"t": "[redacted]"}], "n": 3}


def test_declarations_reach_processes_started_later(monkeypatch):
    declare_secret_variables(["JUDGE_KEY", "JUDGE_BASE"])
    declare_secret_variables(["OTHER_KEY"])
    assert sorted(os.environ[DECLARED].split(",")) == ["JUDGE_BASE", "JUDGE_KEY", "OTHER_KEY"]


def test_short_and_ordinary_values_do_not_shred_text(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "on")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    declare_secret_variables(["JUDGE_KEY"])
    assert redact("turned on: tokenizers false") == "turned on: tokenizers false"
