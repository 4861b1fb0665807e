"""Time a report over C-STS-validation-sized runs (2,834 samples each, ~2.5 KB prompts) and its index.html in a
headless Chromium: load, filter, sort, search, page. Synthetic text only. Not collected by pytest.

    python tests/bench/bench_report.py --runs 8 [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere: harness, tests

from harness.reporting.report import write_report
from harness.results.manifest import write_manifest
from tests.synthetic_runs import make_run


def _long_prompts(run_dir: Path, shots: int) -> None:
    """Prompts as long as a 4-shot, long-instruction C-STS prompt, shared by runs of one k (as in a sweep)."""
    lines = []
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        s = json.loads(line)
        s["prompt"] = f"k={shots} " + ("Synthetic instruction and shot text. " * 65) + s["prompt"]
        lines.append(json.dumps(s))
    (run_dir / "samples.jsonl").write_text("\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=8, help="run folders in the report (at least 2: side by side)")
    p.add_argument("--chromium", default=shutil.which("chromium"))
    a = p.parse_args()
    if a.runs < 2:
        p.error("--runs must be at least 2 (the page's side-by-side view needs two runs)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        dirs = []
        for i in range(a.runs):
            d = make_run(tmp / "results", f"run{i}", model=f"model-{i % 4}", shots=2 * (i // 4), n=2834,
                         invalid_every=3 + i, offset=i % 3, new_fields=True, manifest=False)  # fmt: skip
            _long_prompts(d, 2 * (i // 4))
            write_manifest(d)  # written last, as a runner does: the report must not flag the folder as altered
            dirs.append(d)
        t = time.perf_counter()
        out = write_report(dirs, tmp / "report")
        size = (out / "index.html").stat().st_size
        print(f"write_report: {a.runs} runs x 2,834 samples in {time.perf_counter() - t:.2f}s; "
              f"index.html {size / 1e6:.1f} MB")  # fmt: skip
        if a.chromium:
            _browser(out / "index.html", a.chromium, a.runs)
    finally:
        shutil.rmtree(tmp)


def _browser(page_path: Path, executable: str, runs: int) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page()
        t = time.perf_counter()
        page.goto(page_path.as_uri())
        print(f"chromium: page loaded and first run shown in {time.perf_counter() - t:.2f}s")
        steps = [
            ("select another run", lambda: page.select_option("#sb-run", f"R{runs}")),
            ("filter to no-number", lambda: page.select_option("#sb-reason", "no-number")),
            ("sort by |prediction - label|", lambda: page.select_option("#sb-sort", "diff-desc")),
            ("next page", lambda: page.click("#sb-next")),
            ("search (prompts included)", lambda: (page.fill("#sb-search", "item 17"), page.wait_for_timeout(200))),
            ("side by side: another pair", lambda: page.select_option("#sx-a", "R2")),
        ]
        for name, step in steps:
            t = time.perf_counter()
            step()
            page.evaluate("1")  # the page has handled the event
            print(f"chromium: {name}: {1000 * (time.perf_counter() - t):.0f} ms")
        browser.close()


if __name__ == "__main__":
    main()
