"""index.html: self-contained, safe with any model output, and a sample browser that works in a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.reporting.html import _finite, _script, json_for_script
from harness.reporting.report import write_report
from tests.synthetic_runs import make_run

ATTACKS = {
    1: "</script><script>window.__pwned = 1</script>",
    2: '<img src=x onerror="window.__pwned = 2">',
    4: "Answer: 4 & <b>bold</b> \u2028 --> <!--",
    5: "@@SCRIPT@@ @@DATA@@",  # the page template's own placeholders, in a reply
}


def _report(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    results = tmp_path / "results"
    runs = {
        "old": make_run(results, "old", n=200, invalid_every=3, errors=4, outputs=ATTACKS),
        "new": make_run(results, "new", model="gpt-4o", n=200, offset=1.0, invalid_every=7, new_fields=True),
        "short": make_run(results, "short", model="other", n=30),
        "dry": make_run(results, "dry", model="gpt-4o-mini", n=10, dry_run=True),
    }
    return write_report(list(runs.values()), tmp_path / "report"), runs


def _samples(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def test_json_in_a_script_element_cannot_close_it() -> None:
    text = json_for_script({"a": "</script><!-- & \u2028", "b": float("nan")})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028", "b": None}


@pytest.mark.parametrize(
    "obj",
    [
        {"rows": [["1", 2.5, None, True, 3, "a<b & c\u2029"]] * 3, "fields": ("id", "x")},
        [1.0, float("inf"), [float("nan")], {"k": -float("inf")}],  # non-finite: null, by the slow path
        {"n": np.int64(3), "f": np.float32(0.5), "d": np.float64(2.25), "b": np.bool_(True), "nan": np.float64("nan")},
        {7: "int key", 2.5: "float key", True: "bool key", None: "None key", "s": {False: 0}},  # keys as str() has them
        [("tuple", 1), [], {}, "", 0],
    ],
    ids=["rows", "non-finite", "numpy", "keys", "containers"],
)
def test_json_for_script_writes_what_the_finite_walk_writes(obj: Any) -> None:
    """The C-encoder path must give the page exactly what json.dumps(_finite(obj)) gives, whatever it is handed."""
    slow = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw in "<>&\u2028\u2029":
        slow = slow.replace(raw, f"\\u{ord(raw):04x}")
    assert json_for_script(obj) == slow


def test_a_long_list_is_written_a_slice_at_a_time_as_it_would_be_whole() -> None:
    items: list[Any] = [f"prompt {i} <&>" for i in range(2500)]
    items[1700] = float("nan")  # one slice takes the _finite walk, the others the C encoder
    for some in (items, items[:3]):
        assert "".join(_script("p", some)) == f'<script type="application/json" id="p">{json_for_script(some)}</script>'


def test_the_page_is_self_contained_and_escapes_what_models_wrote(tmp_path: Path) -> None:
    out, _ = _report(tmp_path)
    page = (out / "index.html").read_text()
    assert "default-src 'none'" in page  # the page may fetch nothing
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert page.count("<script") == 1 + 5  # its own script; data: three runs with answers, prompts, the runs list
    assert "window.__pwned" in page and "<script>window.__pwned" not in page and "<img src=x" not in page
    blocks = dict(re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S))
    old = json.loads(blocks["samples-R1"])
    replies = {row[0]: row[old["fields"].index("output")] for row in old["rows"]}
    assert all(replies[str(i)] == text for i, text in ATTACKS.items())  # every byte back, nothing lost
    assert sorted(blocks) == ["prompts", "report-data", "samples-R1", "samples-R2", "samples-R3"]  # R4: dry
    assert (out / "spearman_vs_k.png").is_file() and page.count('src="data:image/png;base64,') == 2


def _browser() -> str:
    path = os.environ.get("CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )
    if path is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium); .ci/run installs it")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install -e '.[dev]')")
    return path


def _ids_on_every_page(page: Any, prefix: str) -> list[str]:
    ids: list[str] = []
    while True:
        ids += page.eval_on_selector_all(f"#{prefix}-table tbody tr", "rows => rows.map(r => r.dataset.id)")
        if page.is_disabled(f"#{prefix}-next"):
            return ids
        page.click(f"#{prefix}-next")


@pytest.mark.slow  # a real Chromium
def test_the_sample_browser_in_a_real_browser(tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    executable = _browser()
    out, runs = _report(tmp_path)
    old = _samples(runs["old"])
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on(
            "request",
            lambda r: problems.append(f"request {r.url}") if not r.url.startswith(("file:", "data:")) else None,
        )
        page.goto((out / "index.html").as_uri())
        assert page.title() == "C-STS prompting report"
        assert "dry run, no answers" in page.inner_text(".warnings")

        # Filter one run to "no-number": exactly its invalid samples, over every page.
        page.select_option("#sb-run", "R1")
        page.select_option("#sb-reason", "no-number")
        invalid = [s["id"] for s in old if not s["valid"] and s["error"] is None]
        assert len(invalid) > 50  # more than one page
        assert page.get_attribute("#sb-summary", "data-count") == str(len(invalid))
        assert _ids_on_every_page(page, "sb") == invalid

        # Failed requests only; then everything sorted by |prediction - label|, largest first.
        page.select_option("#sb-reason", "")
        page.select_option("#sb-error", "only")
        assert _ids_on_every_page(page, "sb") == [s["id"] for s in old if s["error"]]
        page.select_option("#sb-error", "none")
        page.select_option("#sb-sort", "diff-desc")
        diffs = page.eval_on_selector_all("#sb-table tbody tr td:nth-child(5)", "c => c.map(x => +x.textContent)")
        top = sorted((abs(s["prediction"] - s["label"]) for s in old if s["error"] is None), reverse=True)[:50]
        assert diffs == pytest.approx(top, abs=0.005)

        # Search finds the hostile replies, shown as text; none of them ran.
        page.select_option("#sb-sort", "id")
        page.fill("#sb-search", "window.__pwned")
        page.wait_for_selector('#sb-summary[data-count="2"]')  # the search waits for typing to pause
        replies = page.eval_on_selector_all("#sb-table pre.reply", "c => c.map(x => x.textContent)")
        assert replies == [ATTACKS[1], ATTACKS[2]]
        assert page.evaluate("window.__pwned") is None
        page.click("#sb-table tbody tr details summary")
        # The prompt is filled on the "toggle" event, which the browser fires after the click returns: wait for it.
        expect(page.locator("#sb-table tbody tr details pre").first).to_have_text(old[1]["prompt"])
        page.locator("#samples").screenshot(path=str(tmp_path / "samples.png"))

        # Side by side: only the run on the same items is offered; the largest disagreement comes first.
        page.select_option("#sx-a", "R1")
        assert page.eval_on_selector_all("#sx-b option", "o => o.map(x => x.value)") == ["R2"]
        new = {s["id"]: s for s in _samples(runs["new"])}
        gaps = sorted(
            (abs(s["prediction"] - new[s["id"]]["prediction"]) for s in old if s["prediction"] is not None),
            reverse=True,
        )
        first = page.eval_on_selector_all("#sx-table tbody tr td:nth-child(7)", "c => c.map(x => x.textContent)")
        assert first[:4] == ["–"] * 4  # the four failed requests have no difference to show: listed first
        assert float(first[4]) == pytest.approx(gaps[0], abs=0.005)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(tmp_path / "index.png"))  # the top: title, warnings, tables
        browser.close()
    assert problems == []
    assert (tmp_path / "index.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("REPORT_SCREENSHOTS"):  # to look at them: REPORT_SCREENSHOTS=dir pytest ...
        for name in ("index.png", "samples.png"):
            shutil.copy(tmp_path / name, Path(os.environ["REPORT_SCREENSHOTS"]) / name)


@pytest.mark.slow  # a real Chromium
def test_a_three_k_csts_table_fits_a_1400px_window(tmp_path: Path) -> None:
    """Deshpande et al.'s layout (k = 0, 2, 4, six columns each) with a long hub id must not need a scrollbar."""
    from playwright.sync_api import sync_playwright

    executable = _browser()
    results = tmp_path / "results"
    runs = [
        make_run(results, f"{m[:4]}-{instr}-{k}", model=m, instr=instr, shots=k, n=n, invalid_every=7)
        for m, n in (("gpt-4", 2834), ("Qwen/Qwen2.5-7B-Instruct", 40))
        for instr in ("none", "short", "long")
        for k in (0, 2, 4)
    ]
    out = write_report(runs, tmp_path / "report")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto((out / "index.html").as_uri())
        table = page.eval_on_selector("table.layout", "t => [t.scrollWidth, t.parentElement.clientWidth]")
        page.screenshot(path=str(tmp_path / "table.png"))
        browser.close()
    width, room = table
    assert width <= room, f"the table is {width}px wide in {room}px"


def test_a_shareable_report_has_the_same_tables_and_no_csts_text(tmp_path: Path) -> None:
    from harness.cli.main import main

    results = tmp_path / "results"
    csts = make_run(results, "csts", model="gpt-4o", n=40, outputs={3: "Sentence 1: an echoed C-STS sentence"})
    stsb = make_run(results, "stsb", model="gpt-4o", dataset="stsb", n=40)
    assert main(["report", str(csts), str(stsb), "--out", str(tmp_path / "full")]) == 0
    assert main(["report", str(csts), str(stsb), "--out", str(tmp_path / "shared"), "--shareable"]) == 0
    full, shared = tmp_path / "full", tmp_path / "shared"
    assert "an echoed C-STS sentence" in (full / "index.html").read_text()
    for path in shared.iterdir():
        if path.suffix in (".html", ".md", ".csv", ".tex"):
            text = path.read_text()
            assert "an echoed C-STS sentence" not in text, path.name
    page = (shared / "index.html").read_text()
    assert "C-STS text left out" in page
    assert page.count("Synthetic prompt for item") == 40  # the STS-B run's prompts stay (its licence allows sharing)
    for name in ("table_csts-validation.md", "table_stsb-validation.md", "runs.csv"):
        assert (shared / name).read_text() == (full / name).read_text()
