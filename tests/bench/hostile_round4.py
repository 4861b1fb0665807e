"""Issue 41's measures, for the record: per class of hostile input, what the command printed (exit status, its
error line) and, where answers are paid for, how many a rerun asks for again (want 0). Run it from a checkout
(PYTHONPATH at it):

    python tests/bench/hostile_round4.py

Each command goes through run_eval's main() on a thread with a deadline: "hung" where it did not end in time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.calling.test_secret_encodings import FORMS, KEY, echo_forms
from tests.fake_server import FakeServer
from tests.variants.test_hostile_embeddings import BAD

N = 12


def run(argv: list[str], wait: float = 120.0) -> tuple[str, str]:
    """(exit status or "hung", the last line it printed on stderr)."""
    from harness.cli.main import main

    err, codes = io.StringIO(), []

    def go() -> None:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            codes.append(main(argv))

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(wait)
    if t.is_alive():
        return "hung", ""
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    return str(codes[0]), (lines[-1][:150] if lines else "")


def usage_classes() -> None:
    kinds: dict[str, Any] = {
        "negative": {"prompt_tokens": -(10**6), "completion_tokens": 1},
        "missing": None,
        "text": {"prompt_tokens": "many", "completion_tokens": "few"},
        "400 digits": {"prompt_tokens": 10**399, "completion_tokens": 1},
    }
    for kind, usage in kinds.items():

        def hostile(endpoint: str, request: dict, reply: dict, usage: Any = usage) -> dict:
            reply.pop("usage", None) if usage is None else reply.__setitem__("usage", usage)
            return reply

        tmp = Path(tempfile.mkdtemp())
        with FakeServer(extras=hostile) as server:
            args = ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", str(N),
                    "--no-progress", "--results-dir", str(tmp), "--cache", str(tmp / "c.db"),
                    "--concurrency", "1"]  # fmt: skip
            run([*args, "--run-id", "dry", "--dry-run"])
            limit = json.loads((tmp / "dry" / "metrics.json").read_text())["max_cost_usd"] / 3
            code, _ = run([*args, "--run-id", "capped", "--max-cost", f"{limit:.8f}"])
            capped = len(server.answered)
            run([*args, "--run-id", "all"])
            paid = len(server.answered)
            again, _ = run([*args, "--run-id", "again"])
            rebought = len(server.answered) - paid
        print(f"usage {kind}: --max-cost a third of the estimate: exit {code}, {capped} of {N} sent; "
              f"rerun exit {again}, paid answers re-requested on rerun: {rebought}")  # fmt: skip


def embedding_classes(csts_dir: Path, only: str | None = None) -> None:
    kinds = {**BAD, "4M floats": [0.5] * 4_000_000}
    kinds = {k: v for k, v in kinds.items() if only is None or k == only}
    for kind, vector in kinds.items():

        def corrupt(endpoint: str, request: dict, reply: dict, vector: Any = vector) -> dict:
            if endpoint.endswith("/embeddings") and len(request["input"][0]) % 3 == 0:  # a third of the texts
                reply["data"][0]["embedding"] = vector
            return reply

        tmp = Path(tempfile.mkdtemp())
        with FakeServer(extras=corrupt) as server:
            args = ["--variant", "case", "--backend", "openai", "--model", "text-embedding-3-small", "--limit", "10",
                    "--data-dir", str(csts_dir), "--base-url", server.openai_url, "--no-progress",
                    "--case-setting", "plain", "--results-dir", str(tmp), "--cache", str(tmp / "c.db")]  # fmt: skip
            code, line = run([*args, "--run-id", "first"], wait=600)
            paid = len(server.calls)
            again, _ = run([*args, "--run-id", "again"], wait=600)
            rebought = len(server.calls) - paid
        metrics = json.loads((tmp / "first" / "metrics.json").read_text()) if (tmp / "first").is_dir() else {}
        print(f"embedding {kind}: --variant case: exit {code} ({line[:110]}); n with predictions {metrics.get('n')}, "
              f"errors {metrics.get('errors')}, unusable {metrics.get('unusable_embeddings')}; rerun exit {again}, "
              f"re-requested on rerun: {rebought}")  # fmt: skip


def report_classes() -> None:
    from tests.results.test_shards import _with_shard
    from tests.synthetic_runs import make_run

    tmp = Path(tempfile.mkdtemp())
    good = make_run(tmp / "results", "a", n=40)
    (good / "errors-x").mkdir()
    os.mkfifo(good / "errors-x" / "scores.json")
    code, line = run(["report", str(good), "--out", str(tmp / "r1")], 60)
    print(f"report, a FIFO at errors-x/scores.json: exit {code} {line}")
    parts = Path(tempfile.mkdtemp()) / "results"
    base = ["--model", "overlap", "--dataset", "stsb", "--limit", "31", "--no-progress", "--results-dir", str(parts)]
    code, line = run([*base, "--shard", "1/10000000000"])
    print(f"run --shard 1/10000000000: exit {code} {line}")
    run([*base, "--shard", "1/3"])
    (part,) = [p for p in parts.iterdir() if p.is_dir()]
    shard = json.loads((part / "config.json").read_text())["shard"]
    for name, changes in (("of 10**12", {"of": 10**12}), ('of "three"', {"of": "three"})):
        bad = _with_shard(part, tmp / name.replace(" ", "_").replace('"', ""), shard | changes)
        code, line = run(["report", str(bad), "--out", str(tmp / "r")], 60)
        print(f"report, a recorded shard {name}: exit {code} {line}")


def toml_classes() -> None:
    tmp = Path(tempfile.mkdtemp())
    with FakeServer() as server:
        head = f'model = "m"\nbase-url = "{server.openai_url}"\ndataset = "stsb"\nlimit = 3\n'
        for name, text in (
            ("nested 3,000 deep", head + "shots = " + "[" * 3000 + "]" * 3000 + "\n"),
            ("a NUL in cache", head + 'cache = "c\\u0000x.sqlite"\n'),
            ("max-reply-mb = 1e308", head + "max-reply-mb = 1e308\n"),
        ):
            (tmp / "run.toml").write_text(text)
            code, line = run(["--config", str(tmp / "run.toml"), "--results-dir", str(tmp / "r"), "--no-progress"])
            print(f"--config, {name}: exit {code} {line}; requests sent: {len(server.calls)}")


def secret_classes() -> None:
    from tests.calling.test_secrets_everywhere import files_holding

    def plan(prompt: str, attempt: int) -> str:
        return "400-echo" if len(prompt) % 3 == 0 else "ok"

    for backend, variable in (("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")):
        os.environ[variable] = KEY
        tmp = Path(tempfile.mkdtemp())
        out = io.StringIO()
        with FakeServer(extras=echo_forms, plan=plan) as server, contextlib.redirect_stderr(out):
            url = server.openai_url if backend == "openai" else server.anthropic_url
            args = ["--model", "m", "--backend", backend, "--base-url", url, "--dataset", "stsb", "--limit", "8",
                    "--results-dir", str(tmp), "--no-progress", "--cache", str(tmp / "c.db")]  # fmt: skip
            run([*args, "--run-id", "r"])
            run(["report", str(tmp / "r"), "--out", str(tmp / "rep"), "--shareable"])
        held = files_holding(tmp, FORMS)
        print(f"secret echoed in {len(FORMS)} forms ({backend} SDK): files holding one: {len(held)}")


if __name__ == "__main__":
    from tests.conftest import write_synthetic_csts  # the synthetic C-STS fixture's builder

    usage_classes()
    embedding_classes(write_synthetic_csts(Path(tempfile.mkdtemp()) / "csts"))
    report_classes()
    toml_classes()
    secret_classes()
