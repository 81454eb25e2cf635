"""Secrets out of what a run stores, in every form it can store them (jobs.store.redaction): a variable a model
names for its key whatever its name, the user:password of a URL, their URL-encoded and base64 forms (an HTTP
Basic header echoed back, a key inside a longer base64 text), and credential headers an endpoint echoes."""
from __future__ import annotations

import base64
import os
from urllib.parse import quote

import pytest

from jobs.store.redaction import (
    DECLARED,
    declare_secret_variables,
    declared_variables,
    redact,
    scrub,
    secret_values,
    url_credentials,
)

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


# ---- each rule against its nearest wrong variant (issue 64): inputs on which the variants' outputs differ --

def _declared(monkeypatch, **values: str) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    declare_secret_variables(list(values))


def test_every_declared_variable_is_secret_not_only_the_last(monkeypatch):
    _declared(monkeypatch, JUDGE_KEY="first-secret-1", OTHER_KEY="second-secret-2")
    assert redact("a first-secret-1 b second-secret-2 c") == "a [redacted] b [redacted] c"


def test_no_declaration_at_all_declares_nothing(monkeypatch):
    monkeypatch.delenv(DECLARED)
    assert declared_variables() == set()
    declare_secret_variables(["", "JUDGE_KEY"])  # an empty name (a model without api_key_env) declares nothing
    assert os.environ[DECLARED] == "JUDGE_KEY"


@pytest.mark.parametrize("name", ["judge_api_key", "MY_API_KEY", "CI_TOKEN", "DB_PASSWORD", "S3_ACCESS_KEY",
                                  "S3_ACCESS_KEY_ID", "TOKEN", "PASSWORD", "MY_SECRET_THING", "secretish",
                                  "hf_token"])
def test_a_name_of_the_credential_pattern_is_secret_in_any_case(monkeypatch, name):
    monkeypatch.setenv(name, "value-of-it")  # not in the fixed list, not declared: the pattern alone
    assert redact("got value-of-it") == "got [redacted]"


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "MYTOKEN", "PASSWORD_FILE", "API_KEYS", "ACCESS_KEYS_ID"])
def test_a_name_the_anchored_pattern_does_not_match_is_no_secret(monkeypatch, name):
    monkeypatch.setenv(name, "value-of-it")
    assert redact("got value-of-it") == "got value-of-it"


def test_a_secret_of_exactly_the_shortest_length_is_removed_and_a_shorter_one_is_not(monkeypatch):
    _declared(monkeypatch, JUDGE_KEY="wxyz", OTHER_KEY="abc")  # 4 characters: the least that is redacted
    assert redact("k=wxyz o=abc") == "k=[redacted] o=abc"
    assert "abc" not in secret_values()


def test_quote_escapes_the_slash_and_quote_plus_the_space(monkeypatch):
    """Each URL encoding on a secret whose forms all differ: quote(safe='') escapes '/', which quote's
    default keeps, and quote_plus writes the space '+'."""
    secret = "sEcr3t/x y+z"
    _declared(monkeypatch, JUDGE_KEY=secret)
    for form in ("sEcr3t%2Fx%20y%2Bz", "sEcr3t%2Fx+y%2Bz"):
        assert redact(f"sent {form}.") == "sent [redacted]."
    assert redact(f"raw {secret}.") == "raw [redacted]."


def test_a_whole_base64_secret_goes_whole(monkeypatch):
    """Standalone base64 of the secret, its last group holding padding bits: only the full form (offset 0)
    covers those characters; the '=' padding after it is no secret and stays."""
    _declared(monkeypatch, JUDGE_KEY="0123456")  # MDEyMzQ1Ng==
    assert redact("Basic MDEyMzQ1Ng== .") == "Basic [redacted]== ."
    assert redact("Basic MDEyMzQ1Ng .") == "Basic [redacted] ."
    _declared(monkeypatch, SECOND_KEY="jdg-key-W")  # three whole groups ending in 'X': nothing to strip but '='
    encoded = base64.b64encode(b"jdg-key-W").decode()
    assert encoded.endswith("X") and redact(f"t {encoded}") == "t [redacted]"


@pytest.mark.parametrize("prefix, expected", [
    # "0123456 and more" after 0-3 bytes: the characters of whole 3-byte groups of the secret alone go, those
    # that mix in a prefix or suffix byte stay.
    ("", "[redacted]NiBhbmQgbW9yZQ=="),  # MDEyMzQ1 | NiBh...: bytes 0-5 are the secret's
    # YTAx (a01) | MjM0 (234) | NTYg (56 ): one group of the secret alone, 4 characters, under the 8 that count
    ("a", "YTAxMjM0NTYgYW5kIG1vcmU="),
    ("ab", "YWIw[redacted]IGFuZCBtb3Jl"),  # YWIw (ab0) | MTIz NDU2 (123 456) | IGFu
    ("abc", "YWJj[redacted]NiBhbmQgbW9yZQ=="),  # YWJj (abc) | MDEy MzQ1 (012 345) | NiBh
])
def test_base64_inside_a_longer_text_loses_exactly_the_secrets_groups(monkeypatch, prefix, expected):
    _declared(monkeypatch, JUDGE_KEY="0123456")
    blob = base64.b64encode(f"{prefix}0123456 and more".encode()).decode()
    assert redact(f"payload {blob}") == f"payload {expected}"


def test_a_base64_fragment_under_8_characters_is_not_the_secret(monkeypatch):
    """'abcd' after 2 bytes is the group 'YmNk' (bcd): 4 characters match ordinary text by chance."""
    _declared(monkeypatch, JUDGE_KEY="abcd")
    assert redact("ids YmNk and QUJD") == "ids YmNk and QUJD"
    assert all(len(form) >= 4 for form in secret_values())


def test_longer_secrets_go_first(monkeypatch):
    """A secret inside another: the longer goes whole ('awxyz1b', not 'a[redacted]b'), whatever their order as
    text ('wxyz1' sorts after 'awxyz1b')."""
    _declared(monkeypatch, JUDGE_KEY="awxyz1b", OTHER_KEY="wxyz1")
    assert redact("x awxyz1b y wxyz1") == "x [redacted] y [redacted]"
    lengths = [len(form) for form in secret_values()]
    assert lengths == sorted(lengths, reverse=True)


def test_url_credentials_of_every_url_in_a_value():
    """A word that is no URL (an invalid IPv6 host) is passed over, not the end; every URL's password is kept,
    with its user, or with an empty user; a password of 4 characters is one."""
    value = "http://[broken https://bob:pw12@h1/x ftp://:s3cr3tpw@h2 http://carol:p%40ss%20w@h3"
    assert url_credentials(value) == {"pw12", "bob:pw12", "s3cr3tpw", ":s3cr3tpw", "p@ss w", "carol:p@ss w"}
    assert url_credentials("http://dave:abc@h") == {"dave:abc"}  # 'abc' alone is too short to be one


def test_credentials_in_a_url_and_an_at_sign_without_one():
    assert redact("mail me@example.org or see https://u:pass99@h/") == \
        "mail me@example.org or see https://[redacted]@h/"
