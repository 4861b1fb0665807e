"""Issue 30's measures, for the record: per hostile reply, the paid answers a rerun asks for again (want 0), and the
peak memory of reading a 300 MB body and a gzip bomb. Run it from a checkout (PYTHONPATH at it):

    python tests/bench/hostile_rerun.py            # every class, 12 requests each, then the memory of one reply
    python tests/bench/hostile_rerun.py --memory   # only the memory measures (each in a fresh process)

Each run goes through run_eval's main() on a thread with a deadline: "hung" where it did not end in time.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.calling.test_hostile_replies import Hostile, first_logprobs, unquote
from tests.calling.test_transport_bounded import Redirector
from tests.fake_server import FakeServer

N = 12


def runs(server: FakeServer, *extra: str, wait: float = 60.0) -> str:
    from harness.cli.main import main

    tmp = Path(tempfile.mkdtemp())
    args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", str(N), "--no-progress"]
    args += ["--cache", str(tmp / "cache.sqlite"), "--concurrency", "1", *extra]
    seen, codes = [], []
    for run_id in ("first", "rerun"):
        before = len(server.calls)
        argv = [*args, "--results-dir", str(tmp), "--run-id", run_id]
        t = threading.Thread(target=lambda argv=argv: codes.append(main(argv)), daemon=True)
        t.start()
        t.join(wait)
        if t.is_alive():
            return f"hung in the {run_id} run (after {len(server.calls) - before} requests)"
        seen.append(len(server.calls) - before)
    return f"exit codes {codes}; requests: run {seen[0]}, rerun {seen[1]} (re-requested on rerun: {seen[1]})"


def bomb() -> FakeServer:
    class Bomb(FakeServer):
        def _reply(self, prompt: str, reply: dict[str, Any]) -> Any:
            from aiohttp import web

            self.served += 1
            reply["choices"][0]["text"] += " " * (2 * 1024 * 1024)
            packed = gzip.compress(json.dumps(reply).encode(), 9)
            return web.Response(body=packed, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    return Bomb()


def classes() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    cases: list[tuple[str, Any, tuple[str, ...]]] = [
        (
            "1 reset: inf (remaining 0)",
            Hostile(
                headers={
                    "x-ratelimit-limit-requests": "100",
                    "x-ratelimit-remaining-requests": "0",
                    "x-ratelimit-reset-requests": "inf",
                }
            ),
            (),
        ),
        (
            "1 reset: 1e9 s (remaining 0)",
            Hostile(
                headers={
                    "x-ratelimit-limit-requests": "100",
                    "x-ratelimit-remaining-requests": "0",
                    "x-ratelimit-reset-requests": "1000000000",
                }
            ),
            (),
        ),
        (
            "1 logprob 800 (exp overflows)",
            Hostile(answer=lambda p: "4", extras=first_logprobs("800"), mangle=unquote),
            ("--scoring", "expected", "--chat"),
        ),
        (
            "2 logprob +Infinity",
            Hostile(answer=lambda p: "4", extras=first_logprobs("Infinity"), mangle=unquote),
            ("--scoring", "expected", "--chat"),
        ),
        ("1 JSON nested 100,000 deep", Hostile(mangle=lambda t: t[:-1] + f', "x": {deep}}}'), ()),
        ("2 a 309-digit first number", Hostile(answer=lambda p: "9" * 309), ()),
        ("6 gzip bomb (2 MB inflated)", bomb(), ("--max-reply-mb", "1") if "--max-reply-mb" in _options() else ()),
    ]
    for name, server, extra in cases:
        with server:
            print(f"{name}: {runs(server, *extra)}", flush=True)
    with FakeServer() as elsewhere, Redirector(to=f"http://localhost:{elsewhere.port}") as server:
        server_url = f"http://127.0.0.1:{server.port}/old"
        from harness.cli.main import main

        tmp = Path(tempfile.mkdtemp())
        code = main(["--model", "m", "--base-url", server_url, "--dataset", "stsb", "--limit", "3", "--no-progress",
                     "--results-dir", str(tmp)])  # fmt: skip
        print(f"7 POST 307 to another host: exit {code}; prompts the other host received: {len(elsewhere.calls)}")


def _options() -> str:
    from harness.cli.options import run_parser

    return run_parser().format_help()


def memory(how: str) -> None:
    """One reply of 300 MB (plain) or a gzip bomb of 300 MB inflated, read by OpenAIBackend.send in this process
    (the server in another): the process's peak RSS."""
    from harness.calling.backends.openai import OpenAIBackend
    from harness.types import Request

    server = subprocess.Popen(
        [sys.executable, "-c", f"import sys, time; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r});"
         f"from tests.calling.test_transport_bounded import Big; s = Big({how!r}, size=300 * 1024 * 1024);"
         "s.__enter__(); print(s.port, flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

        async def go() -> str:
            backend = OpenAIBackend("m", "EMPTY", [f"http://127.0.0.1:{port}/v1"], chat=True, timeout=300)
            try:
                c = await backend.send(Request("q", "Sentence 1: a. Output:"))
                return f"malformed={getattr(c, 'malformed', None)!r:.60} text={len(c.text or '')} chars"
            except Exception as e:
                return f"{type(e).__name__}: {str(e)[:80]}"
            finally:
                await backend.aclose()

        result = asyncio.run(go())
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"6 {how} 300 MB body: peak RSS {peak / 1024:.0f} MB (before the request {base / 1024:.0f} MB); {result}")
    finally:
        server.kill()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--memory", action="store_true")
    p.add_argument("--one", choices=["plain", "gzip"])
    a = p.parse_args()
    if a.one:
        memory(a.one)
    else:
        if not a.memory:
            classes()
        for how in ("plain", "gzip"):
            subprocess.run([sys.executable, __file__, "--one", how], check=False)
