"""The first hour, round 2 (issue 34): model names checked against the price table with a did-you-mean, reasoning
options a model cannot take refused, and a dry run refusing what the real run would refuse at once."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.calling.pricing import price_for
from harness.cli.main import main
from tests.fake_server import FakeServer

DRY = ["--dataset", "stsb", "--limit", "5", "--dry-run", "--no-progress"]


def up(cost: float) -> float:
    """A dry run's figure: each run's cost rounded up to 1/100 cent (an upper bound --max-cost can be set to)."""
    return math.ceil(cost * 1e4 - 1e-9) / 1e4


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    return captured.err


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("gpt-4o-mnii", "gpt-4o-mini"), ("o3-mni", "o3-mini"), ("claude-sonet-4-6", "claude-sonnet-4-6"),
     ("claude-sonnet-4.6", "claude-sonnet-4-6")],
)  # fmt: skip
def test_a_typo_of_a_priced_model_is_refused_with_the_name_meant(
    typed: str, meant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--model", typed, *DRY, "--results-dir", str(tmp_path)]) == 2
    assert one_error(capsys).startswith(f"error: unknown model {typed!r}: did you mean {meant!r}?")
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_a_typo_is_not_priced_as_the_model_it_starts_with() -> None:
    assert price_for("gpt-4o-mnii") is None and price_for("o3-mni") is None
    assert price_for("gpt-4o-2024-08-06").entry == "gpt-4o"  # type: ignore[union-attr]  # a snapshot is its model
    assert price_for("claude-3-5-sonnet-20241022").entry == "claude-3-5-sonnet"  # type: ignore[union-attr]


def test_a_name_in_the_users_price_file_or_at_a_base_url_server_is_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"o3-mni": {"input": 1, "output": 2}}}))
    assert main(["--model", "o3-mni", "--prices", str(prices), *DRY, "--results-dir", str(tmp_path / "a")]) == 0
    assert "cost at most $0.0" in capsys.readouterr().out
    with FakeServer() as server:
        argv = ["--model", "gpt-4o-mnii", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "3"]
        assert main([*argv, "--no-progress", "--results-dir", str(tmp_path / "b")]) == 0
        assert {c.body["model"] for c in server.calls} == {"gpt-4o-mnii"}


def test_reasoning_no_on_an_o_series_model_is_refused_and_sends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer() as server:
        # o3 at a gateway that serves OpenAI's names: the name still says it is a reasoning model
        argv = ["--model", "o3", "--reasoning", "no", "--base-url", server.openai_url, "--dataset", "stsb"]
        assert main([*argv, "--limit", "3", "--no-progress", "--results-dir", str(tmp_path)]) == 2
        assert server.calls == []
    assert one_error(capsys).startswith("error: --reasoning no: o3 is one of OpenAI's reasoning models")


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-6"])
def test_reasoning_effort_on_a_model_that_takes_none_is_refused(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--model", model, "--reasoning-effort", "low", *DRY, "--results-dir", str(tmp_path)]) == 2
    assert one_error(capsys).startswith("error: --reasoning-effort low: only OpenAI's reasoning models")
    assert main(["--model", "o3", "--reasoning-effort", "low", *DRY, "--results-dir", str(tmp_path)]) == 0


def test_a_dry_run_refuses_a_base_url_without_a_scheme(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", "gpt-4o", "--base-url", "localhost:8000", *DRY, "--results-dir", str(tmp_path)]) == 2
    assert one_error(capsys) == (
        "error: --base-url 'localhost:8000' needs http:// or https:// in front (e.g. http://localhost:8000)\n"
    )


def test_a_dry_run_refuses_a_local_model_path_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["--backend", "hf", *DRY, "--results-dir", str(tmp_path / "r")]
    assert main(["--model", "path/to/checkpoint", *argv]) == 2
    assert one_error(capsys) == (
        "error: no model directory at path/to/checkpoint, and it is no hub id (NAME or NAMESPACE/NAME)\n"
    )
    (tmp_path / "path" / "to" / "checkpoint").mkdir(parents=True)
    assert main(["--model", "path/to/checkpoint", *argv]) == 0  # the directory, once it exists
    assert main(["--model", "HuggingFaceTB/SmolLM2-135M-Instruct", *argv]) == 0  # a hub id: fetched when run


def test_a_dry_run_sweep_prices_each_cell_and_the_total_and_names_no_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--model", "gpt-4o", "--shots", "0,2", "--instr", "none,long", *DRY, "--results-dir", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "html:" not in out and "index.html" not in out and not list(tmp_path.glob("*/report"))
    price = price_for("gpt-4o")
    assert price is not None
    cells, total = [line for line in out.splitlines() if line.startswith("[")], [0, 0, 0.0, 0.0]
    assert len(cells) == 4
    for line in cells:  # each cell's own numbers, as its metrics.json holds them, priced from the table here
        m = json.loads((Path(line.split(" -> ")[1]) / "metrics.json").read_text())
        tokens_in, tokens_out = m["prompt_tokens"], m["max_output_tokens"]
        one, batched = up(price.cost(tokens_in, tokens_out)), up(price.batch().cost(tokens_in, tokens_out))
        assert (
            f"dry run, 5 requests, {tokens_in} prompt tokens, at most {tokens_out} output tokens; "
            f"at most ${one:.4f} one by one, ${batched:.4f} with --batch -> "
        ) in line
        total = [total[0] + tokens_in, total[1] + tokens_out, total[2] + one, total[3] + batched]
    assert out.splitlines()[-1] == (
        f"dry run total (4 cells): 20 requests, {total[0]} prompt tokens, at most {total[1]} output tokens; cost at "
        f"most ${total[2]:.4f} one by one, ${total[3]:.4f} with --batch; no model called"
    )


def test_a_dry_run_recipe_of_several_runs_prints_the_whole_files_cost_and_no_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "two.toml"
    config.write_text('dataset = "stsb"\nlimit = 5\n[[runs]]\nshots = 0\n[[runs]]\nshots = 2\ninstr = "none,long"\n')
    argv = ["--config", str(config), "--model", "gpt-4o", "--dry-run", "--results-dir", str(tmp_path / "r")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "html:" not in out and not list((tmp_path / "r").glob("two-*"))
    estimates = [json.loads(p.read_text()) for p in (tmp_path / "r").glob("stsb-*/metrics.json")]
    price = price_for("gpt-4o")
    assert price is not None and len(estimates) == 3
    tokens = [(m["prompt_tokens"], m["max_output_tokens"]) for m in estimates]
    one, batched = sum(up(price.cost(*t)) for t in tokens), sum(up(price.batch().cost(*t)) for t in tokens)
    assert out.splitlines()[-1] == (
        f"dry run total (2 runs, 3 cells): 15 requests, {sum(t[0] for t in tokens)} prompt tokens, at most "
        f"{sum(t[1] for t in tokens)} output tokens; cost at most ${one:.4f} one by one, ${batched:.4f} with "
        "--batch; no model called"
    )
