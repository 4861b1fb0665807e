"""harness/calling/redaction.py on tables of cases: every form of a secret out (as sent, URL-encoded, JSON-escaped,
base64 at every alignment, in pieces), nothing else touched; credentials read from a URL; quotes of a prompt out of
an error message. The encodings are made here with the standard library, not with the module's own helpers."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from harness.calling.redaction import (
    FRAGMENT,
    PROMPT_QUOTED,
    REDACTED,
    base64_cores,
    redact,
    redact_all,
    redact_completion,
    secrets_of,
    url_secrets,
    without_prompt,
)
from harness.types import Completion

KEY = "sk-test/41+enc=Zq9x7Lw3Rv"


def b64(text: str, urlsafe: bool = False) -> str:
    return (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(text.encode()).decode()


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (f"key {KEY}!", f"key {REDACTED}!"),
        (f"{KEY}{KEY}", f"{REDACTED}{REDACTED}"),
        (urllib.parse.quote(KEY, safe=""), REDACTED),
        (urllib.parse.quote(KEY, safe="").replace("%2F", "%2f").replace("%2B", "%2b"), REDACTED),  # hex in lower case
        (urllib.parse.quote_plus(KEY), REDACTED),
        (json.dumps(KEY), f'"{REDACTED}"'),
        (json.dumps(KEY).replace("/", "\\/"), f'"{REDACTED}"'),  # JSON may escape a slash
        ('"\\u0073k-test/41+enc=Zq9x7Lw3Rv"', f'"{REDACTED}"'),
        (b64(KEY), REDACTED),
        (f"Bearer {b64(KEY)}", f"Bearer {REDACTED}"),
        (b64("Bearer " + KEY), "QmVhcmVyIH" + REDACTED + "Y="),
        (b64("me:" + KEY), "bWU6" + REDACTED),  # at the alignment of the key's own encoding
        (b64("x" + KEY, urlsafe=True), "eH" + REDACTED + "Y="),
        (b64(KEY, urlsafe=True).rstrip("="), REDACTED),
        (f"begins {KEY[:12]} and ends {KEY[12:]}", f"begins {REDACTED} and ends {REDACTED}"),
        (f"a piece {KEY[3:11]}.", f"a piece {REDACTED}."),  # 8 characters: a piece
        (f"too short {KEY[3:10]}.", f"too short {KEY[3:10]}."),  # 7: not one
        (f"its tail {KEY[-7:]}.", f"its tail {KEY[-7:]}."),  # nor its last 7
        (f"{KEY[:10]} at the start", f"{REDACTED} at the start"),
        (f"at the end {KEY[-8:]}", f"at the end {REDACTED}"),  # the key's last piece
        (KEY[:8], REDACTED),  # a text no longer than one piece
        (KEY[:8] + KEY[:8], REDACTED),  # two pieces side by side: one run
        (b64("Bearer " + KEY + " and more"), "QmVhcmVyIH" + REDACTED + "YgYW5kIG1vcmU="),  # text after the key
        (b64("me:" + KEY + "!"), "bWU6" + REDACTED + "iE="),
        ("nothing of it here: 4.0", "nothing of it here: 4.0"),
        ("", ""),
        ("100% \\ sure", "100% \\ sure"),
    ],
)
def test_every_form_of_the_key_is_redacted_and_nothing_else(text: str, want: str) -> None:
    assert redact(text, KEY) == want


def test_the_cores_are_what_every_base64_encoding_of_a_text_holding_the_key_contains() -> None:
    cores = base64_cores(KEY)
    for prefix in ("", "x", "xy", "Bearer ", "user:", "a:"):
        encoded = b64(prefix + KEY)
        assert any(core in encoded for core in cores), prefix
        assert any(core in b64(prefix + KEY, urlsafe=True) for core in cores), prefix
    assert all(len(core) >= FRAGMENT for core in cores)
    assert base64_cores("abcd") == ("YWJjZA", "YWJjZA==")  # 4 bytes: its own encoding, no core of FRAGMENT


def test_short_keys_and_the_placeholder_are_not_looked_for() -> None:
    assert secrets_of(["abc", "abcd", "EMPTY", None, "", "longer-one"]) == ("longer-one", "abcd")
    assert redact("EMPTY abc", ["EMPTY", "abc"]) == "EMPTY abc"
    assert redact("key abcd.", "abcd") == f"key {REDACTED}."  # shorter than a piece: matched whole
    assert redact("text", None) == "text"


@pytest.mark.parametrize("key", [KEY, "sk-łódź-\U0001f600-secret", "abcdefg", "abcdefgh", "a?b>c~d" * 3])
def test_the_cores_are_the_characters_only_the_key_s_bytes_decide(key: str) -> None:
    """Computed another way: the characters on which two encodings agree whose bytes around the key differ in every
    bit (zeros, then ones), at each alignment; 8 characters or more; and the key's own encoding, padded or not."""
    data = key.encode()
    want = set()
    for offset in range(3):
        a = base64.b64encode(b"\0" * offset + data + b"\0\0").decode()
        b = base64.b64encode(b"\xff" * offset + data + b"\xff\xff").decode()
        same = "".join(x if x == y else " " for x, y in zip(a, b, strict=True)).split()
        core = max(same, key=len)
        if len(core) >= 8:
            want |= {core, core.translate(str.maketrans("+/", "-_"))}
    alone = b64(key)
    want |= {alone, alone.rstrip("="), b64(key, urlsafe=True), b64(key, urlsafe=True).rstrip("=")}
    assert set(base64_cores(key)) == want


def test_json_escapes_of_any_character_are_redacted() -> None:
    key = "sk-łódź-\U0001f600-secret"
    escaped = json.dumps(key)  # "sk-\u0142\u00f3d\u017a-\ud83d\ude00-secret"
    assert "\\u0142" in escaped and "\\ud83d\\ude00" in escaped
    assert redact(escaped, key) == f'"{REDACTED}"'
    assert redact(escaped.replace("\\u0142", "\\u0142".replace("42", "4A")), key) != f'"{REDACTED}"'  # another letter
    assert redact(escaped.replace("\\u017a", "\\u017A"), key) == f'"{REDACTED}"'  # hex in upper case


def test_a_piece_is_redacted_wherever_it_repeats() -> None:
    assert redact("x" + "a" * 9, "a" * 10) == f"x{REDACTED}"  # overlapping finds of one piece


def test_the_longer_secret_goes_first() -> None:
    assert redact("me:pr0xy-s3cret", ["pr0xy-s3cret", "me:pr0xy-s3cret"]) == REDACTED


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("http://127.0.0.1:8000/v1", set()),
        ("https://h/v1?api-key=abc12345", {"abc12345"}),
        ("https://h/v1?api-version=2024-02-01&key=k3y-value", {"k3y-value"}),  # a version is no credential
        ("https://h/v1?token=a%2Fb%2Bc%3Dd", {"a/b+c=d", "a%2Fb%2Bc%3Dd", "a%2Fb%2Bc%3Dd".replace("%2F", "%2F")}),
        ("https://me:p%40ssword@h/v1", {"me:p%40ssword", "p%40ssword", "me:p@ssword", "p@ssword"}),
        ("https://tok-123456@h/v1", {"tok-123456"}),
        ("", set()),
        (None, set()),
        ("http://[::1/v1", set()),  # not a URL: nothing read from it, and no exception
    ],
)
def test_credentials_are_read_from_a_url(url: str | None, want: set[str]) -> None:
    assert set(url_secrets(url)) == want


def test_a_url_s_credentials_are_redacted_where_it_is_written() -> None:
    url = "https://me:p%40ssword@h/v1?api-key=abc12345"
    record = {"api": {"base_urls": [url]}, "n": 3, "t": ("x", url)}
    clean = redact_all(record, url_secrets(url))
    assert clean == {
        "api": {"base_urls": [f"https://{REDACTED}@h/v1?api-key={REDACTED}"]},
        "n": 3,
        "t": ("x", f"https://{REDACTED}@h/v1?api-key={REDACTED}"),
    }
    assert redact_all(record, ()) is record


def test_every_server_string_of_a_completion_is_redacted() -> None:
    c = Completion(
        "r", f"4 {KEY}", error=None, finish_reason=b64(KEY), refusal=KEY, served_model=f"m-{KEY[:10]}",
        reasoning=urllib.parse.quote(KEY, safe=""), malformed=f"unreadable: {KEY}", raw=json.dumps({"k": KEY}),
    )  # fmt: skip
    clean = redact_completion(c, KEY)
    assert clean == Completion(
        "r", f"4 {REDACTED}", finish_reason=REDACTED, refusal=REDACTED, served_model=f"m-{REDACTED}",
        reasoning=REDACTED, malformed=f"unreadable: {REDACTED}", raw=json.dumps({"k": REDACTED}),
    )  # fmt: skip
    plain = Completion("r", "4")
    assert redact_completion(plain, KEY) is plain and redact_completion(c, None) is c


@pytest.mark.parametrize(
    ("message", "prompt", "want"),
    [
        ("bad: 'The cat sat on the mat' here", "Rate: The cat sat on the mat.", f"bad: '{PROMPT_QUOTED}' here"),
        ("short", "The cat sat on the mat", "short"),
        ("The cat sat on the mat", "short", "The cat sat on the mat"),
        ("no quote of it at all here", "The cat sat on the mat", "no quote of it at all here"),
        ("a" * 12, "a" * 12, PROMPT_QUOTED),  # 12 characters: a quote
        ("abcdefghijk!", "abcdefghijkl", "abcdefghijk!"),  # 11: not one
        ("It ends: the mat here", "the mat here", f"It ends: {PROMPT_QUOTED}"),  # the prompt's last 12
        ("ABCDEFGHIJKLmnopqrstuvwx", "ABCDEFGHIJKL, mnopqrstuvwx", PROMPT_QUOTED),  # two quotes side by side
        ("x ABCDEFGHIJKL", "ABCDEFGHIJKL", f"x {PROMPT_QUOTED}"),  # at the message's end
        ("x The cat sat on y The cat sat on z", "The cat sat on the mat", f"x {PROMPT_QUOTED}y {PROMPT_QUOTED}z"),
    ],
)
def test_quotes_of_the_prompt_leave_an_error_message(message: str, prompt: str, want: str) -> None:
    assert without_prompt(message, prompt) == want
