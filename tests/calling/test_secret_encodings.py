"""A secret in every form it can take (issue 41): a server or proxy that echoes the key URL-encoded, base64-encoded
(alone, as `Bearer <key>`, as basic auth's `user:key`), or cut in two across the fields of a JSON error, in its replies,
its error replies and a batch's error file; and credentials in a --base-url or in the SDKs' OPENAI_BASE_URL and
ANTHROPIC_BASE_URL (`?api-key=`; a `user:pass@` there is refused before anything is sent). Real runs
through the CLI and the real SDKs against tests/fake_server.py on 127.0.0.1; then every byte of every file the run,
its cache and its reports (--shareable too) wrote, and everything it printed, is searched for every form."""

from __future__ import annotations

import base64
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from tests.calling.test_secrets_everywhere import files_holding
from tests.fake_batch_server import FakeBatchServer
from tests.fake_replies import key_forms
from tests.fake_server import FakeServer

KEY = "sk-test/41+enc=Zq9x7Lw3Rv"  # `/`, `+` and `=` are written otherwise URL-encoded


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def middle(encoded: str) -> str:
    """The middle half of an encoding: characters that encode the key's bytes alone, whatever came before it."""
    return encoded[len(encoded) // 4 : 3 * len(encoded) // 4]


# Every form the key may be found in: as is, URL-encoded (either case of hex), its halves, and the middle of its
# base64 encodings alone and after `Bearer ` or `me:` (a test's own arithmetic, not redaction.py's).
FORMS = (
    KEY,
    urllib.parse.quote(KEY, safe=""),
    urllib.parse.quote(KEY, safe="").lower(),
    KEY[: len(KEY) // 2],
    KEY[len(KEY) // 2 :],
    middle(b64(KEY)),
    middle(b64("Bearer " + KEY)),
    middle(b64("me:" + KEY)),
)


def echo_forms(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """Every form of the key, in the reply's `model`, its finish reason and its text."""
    said, rest = key_forms(KEY)
    reply["model"] = f"served {said}"
    if "choices" in reply:
        reply["choices"][0]["finish_reason"] = rest
        choice = reply["choices"][0]
        if "text" in choice:  # a raw completion (a --base-url model that is no OpenAI chat name)
            choice["text"] = f"4 ({said} {rest})"
        else:
            choice["message"]["content"] = f"4 ({said} {rest})"
    else:
        reply["stop_reason"] = rest
        reply["content"][0]["text"] = f"4 ({said} {rest})"
    return reply


def test_the_test_forms_are_found_in_what_the_server_sends() -> None:
    """The forms searched for are there before redaction (else the test below could not fail)."""
    said, rest = key_forms(KEY)
    assert all(form in f"{said} {rest}" for form in FORMS[1:2] + FORMS[3:])
    assert KEY not in said and KEY not in rest  # cut in two: no literal match would catch it


@pytest.mark.parametrize(("backend", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_key_echoed_in_any_encoding_reaches_no_file_and_no_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, backend: str, variable: str
) -> None:
    monkeypatch.setenv(variable, KEY)
    results = tmp_path / "results"

    def plan(prompt: str, attempt: int) -> str:
        return "400-echo" if len(prompt) % 3 == 0 else "ok"

    with FakeServer(extras=echo_forms, plan=plan) as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        args = ["--model", "m", "--backend", backend, "--base-url", url, "--dataset", "stsb", "--limit", "8"]
        args += ["--results-dir", str(results), "--run-id", "r", "--no-progress", "--cache", str(tmp_path / "c.db")]
        assert main(args) == 3  # some requests failed (their 400s)
        asked = len(server.answered)
        assert main([*args, "--run-id", "again"]) == 3
        assert len(server.answered) == asked  # the rerun bought no answer again
    assert main(["report", str(results / "r"), "--out", str(tmp_path / "report")]) == 0
    assert main(["report", str(results / "r"), "--out", str(tmp_path / "shared"), "--shareable"]) == 0
    printed = capsys.readouterr()
    rows = [json.loads(line) for line in (results / "r" / "samples.jsonl").read_text().splitlines()]
    assert any(r["error"] for r in rows) and any(not r["error"] for r in rows)
    assert all("[redacted]" in r["error"] for r in rows if r["error"])
    assert files_holding(tmp_path, FORMS) == {}
    assert [f for f in FORMS if f in printed.out + printed.err] == []


def test_a_batch_error_file_echoing_the_key_in_any_encoding_reaches_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def plan(prompt: str, attempt: int) -> str:
        return "400-echo" if len(prompt) % 3 == 0 else "ok"

    with FakeBatchServer(plan=plan, extras=echo_forms) as server:
        server.batch_key = KEY
        code = main(["--model", "m", "--backend", "openai", "--base-url", server.openai_url, "--dataset", "stsb",
                     "--limit", "8", "--results-dir", str(tmp_path / "results"), "--run-id", "b", "--no-progress",
                     "--batch", "--batch-poll", "0.05", "--cache", str(tmp_path / "c.db")])  # fmt: skip
    printed = capsys.readouterr()
    rows = [json.loads(line) for line in (tmp_path / "results" / "b" / "samples.jsonl").read_text().splitlines()]
    assert code == 3 and any(r["error"] for r in rows), printed.err
    assert files_holding(tmp_path, FORMS) == {}
    assert [f for f in FORMS if f in printed.out + printed.err] == []


@pytest.mark.parametrize(
    ("backend", "chat", "path", "given"),
    [
        ("openai", "--chat", "/v1/chat/completions", "--base-url"),
        ("openai", "--no-chat", "/v1/completions", "--base-url"),
        ("anthropic", "--stop=\n", "/v1/messages", "--base-url"),
        # The SDKs' own variables, without --base-url: read at the same door (it used to go to the SDK whole, which
        # put the endpoint's path after the query: a 404 from `/v1/?api-key=...chat/completions`)
        ("openai", "--chat", "/v1/chat/completions", "OPENAI_BASE_URL"),
        ("anthropic", "--stop=\n", "/v1/messages", "ANTHROPIC_BASE_URL"),
    ],
)
def test_a_base_url_query_goes_with_every_request_and_reaches_no_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    backend: str,
    chat: str,
    path: str,
    given: str,
) -> None:
    """A gateway that wants `?api-key=` (and `?api-version=`) on every request gets them on the endpoint's own URL
    (the SDKs would append the endpoint's path after the query: `/v1/?api-key=...chat/completions`), through the
    real SDKs, whether the URL is --base-url or the SDK's variable; the run, its rerun from the cache and its
    reports hold no form of the credential, echoed by the server in every form."""
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    results = tmp_path / "results"
    with FakeServer(extras=echo_forms) as server:
        root = server.openai_url if backend == "openai" else server.anthropic_url
        url = f"{root}?api-key={urllib.parse.quote(KEY, safe='')}&api-version=2024-06-01"
        args = ["--model", "m", "--backend", backend, chat, "--dataset", "stsb", "--limit", "6"]
        if given == "--base-url":
            args += ["--base-url", url]
        else:  # the provider's API as far as the harness knows, so its key is asked for (not the gateway's)
            monkeypatch.setenv(given, url)
            monkeypatch.setenv(f"{backend.upper()}_API_KEY", "sk-provider-side-0000")
        args += ["--results-dir", str(results), "--no-progress", "--cache", str(tmp_path / "c.db")]
        assert main([*args, "--run-id", "r"]) == 0
        assert main([*args, "--run-id", "again"]) == 0  # every answer from the cache
        calls = list(server.calls)
    assert main(["report", str(results / "r"), "--out", str(tmp_path / "report")]) == 0
    assert main(["report", str(results / "r"), "--out", str(tmp_path / "shared"), "--shareable"]) == 0
    printed = capsys.readouterr()
    assert [(c.path, c.query) for c in calls] == [(path, {"api-key": KEY, "api-version": "2024-06-01"})] * 6
    rows = [json.loads(line) for line in (results / "r" / "samples.jsonl").read_text().splitlines()]
    assert [r["prediction"] for r in rows] == [4.0] * 6
    recorded = json.loads((results / "r" / "config.json").read_text())["backend_params"]["base_urls"]
    assert [u.partition("?")[2] for u in recorded] == ["api-key=[redacted]&api-version=2024-06-01"]
    assert files_holding(tmp_path, FORMS) == {}
    assert [f for f in FORMS if f in printed.out + printed.err] == []


@pytest.mark.parametrize(
    ("backend", "given"),
    [("openai", "--base-url"), ("openai", "OPENAI_BASE_URL"), ("anthropic", "ANTHROPIC_BASE_URL")],
)
@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("api-key=Qs-s3cret-in-query&api-key=Qs-s3cret-in-query", "names 'api-key' twice"),
        ("Qs-s3cret-in-query", "not name=value pairs"),
        ("=Qs-s3cret-in-query", "a value without a name"),
        ("api-key=Qs-s3cret#in-query", "'#' ends the URL"),
    ],
)
def test_a_base_url_query_that_cannot_be_sent_is_one_error_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    query: str,
    says: str,
    backend: str,
    given: str,
) -> None:
    """A query no SDK can send as one value per name, in --base-url or in the SDK's variable: one `error:` line that
    names where and shows no value, exit 2, nothing sent and nothing written, by a dry run too."""
    monkeypatch.setenv(f"{backend.upper()}_API_KEY", "sk-provider-side-0000")
    with FakeServer() as server:
        root = server.openai_url if backend == "openai" else server.anthropic_url
        args = ["--model", "m", "--backend", backend, "--dataset", "stsb", "--limit", "2"]
        args += ["--results-dir", str(tmp_path / "results")]
        if given == "--base-url":
            args += ["--base-url", f"{root}?{query}"]
        else:
            monkeypatch.setenv(given, f"{root}?{query}")
        codes = [main(args), main([*args, "--dry-run"])]
        calls = list(server.calls)
    err = capsys.readouterr().err
    assert (codes, calls, list(tmp_path.iterdir())) == ([2, 2], [], [])
    assert err.startswith(f"error: {given} {root}: ") and says in err and len(err.splitlines()) == 2
    assert err.splitlines()[0] == err.splitlines()[1]
    assert "s3cret" not in err


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("{base}?api-key=Qs-s3cret-in-query", "Qs-s3cret-in-query"),
        ("{base}?key=Qs%2Fs3cret%2Bquoted", "Qs/s3cret+quoted"),
    ],
)  # a user:password@ in the address is refused before anything is sent or written (tests/cli/test_precedence.py)
def test_credentials_in_a_base_url_reach_no_file_and_no_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, url: str, secret: str
) -> None:
    """A gateway's `?api-key=` in --base-url is a credential: not in config.json (a dry run writes
    one), not in an error line (a real run: the server is asked, and says what went wrong)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeBatchServer() as server:
        base = url.format(base=server.openai_url)
        args = ["--model", "m", "--backend", "openai", "--base-url", base, "--dataset", "stsb", "--limit", "2"]
        args += ["--results-dir", str(tmp_path / "results"), "--no-progress", "--cache", str(tmp_path / "c.db")]
        assert main([*args, "--dry-run", "--run-id", "dry"]) == 0
        main([*args, "--run-id", "real"])
        main([*args, "--run-id", "batch", "--batch", "--batch-poll", "0.05"])  # the cache file's batch records
    printed = capsys.readouterr()
    config = (tmp_path / "results" / "dry" / "config.json").read_text()
    assert "[redacted]" in config
    forms = (secret, urllib.parse.quote(secret, safe=""))
    assert files_holding(tmp_path, forms) == {}
    assert [f for f in forms if f in printed.out + printed.err] == []
