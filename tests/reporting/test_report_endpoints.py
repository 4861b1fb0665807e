"""A published number is set beside a run only when the run called the provider's own API, not a proxy or a local
stand-in through --base-url (or OPENAI_BASE_URL): such a server may answer for the model name with another model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from harness.cli.main import main
from harness.reporting.report import write_report
from harness.results.provenance import endpoints
from tests.fake_server import FakeServer
from tests.synthetic_runs import make_run


def published_row(tmp_path: Path, base_urls: list[str]) -> tuple[object, str]:
    params = {"api": "chat.completions", "base_urls": base_urls}
    config = {"backend_params": params, "shot_sampler": "reference"}  # as the paper but for the endpoint
    run_dir = make_run(tmp_path / "results", "gpt4", "gpt-4-0314", n=2834, config=config)
    out = write_report([run_dir], tmp_path / "report")
    (row,) = pd.read_csv(out / "published.csv").itertuples()
    return row, (out / "report.md").read_text()


def test_a_full_run_against_the_providers_api_is_comparable(tmp_path: Path) -> None:
    row, report = published_row(tmp_path, ["https://api.openai.com/v1/"])  # what the openai SDK resolves by default
    assert pd.isna(row.paper_note) and not pd.isna(row.diff_spearman)
    assert "| comparable: every setting as published (" in report


def test_a_full_run_through_another_endpoint_is_not_comparable_and_names_it(tmp_path: Path) -> None:
    row, report = published_row(tmp_path, ["http://127.0.0.1:8000/v1/"])
    assert row.paper_note == "not comparable (called http://127.0.0.1:8000/v1/, not the provider's API)"
    assert pd.isna(row.diff_spearman)  # no Δ against Table 11
    assert "| comparable:" not in report and "called http://127.0.0.1:8000/v1/" in report


def test_a_real_run_records_the_base_url_the_comparability_check_reads(tmp_path: Path, capsys: object) -> None:
    """The real openai SDK against the local server: what config.json holds is what endpoints() finds."""
    with FakeServer() as server:
        argv = ["--model", "gpt-4", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "4"]
        assert main([*argv, "--results-dir", str(tmp_path), "--run-id", "r", "--no-progress"]) == 0
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert [u.rstrip("/") for u in endpoints(config)] == [server.openai_url.rstrip("/")]
    assert endpoints({"backend": "openai", "backend_params": {"base_urls": ["https://api.openai.com/v1/"]}}) == []
    assert endpoints({"backend": "anthropic", "backend_params": {"base_urls": ["https://api.anthropic.com"]}}) == []
    # Older config.json files without the backend's record: the --base-url given in the settings.
    assert endpoints({"backend": "openai", "settings": {"api": {"base_urls": ["http://x/v1"]}}}) == ["http://x/v1"]
