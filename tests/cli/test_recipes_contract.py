"""The recipes reproduce the published runs' settings (layout per model family, the reference shot stream, Tu et al.'s
answer model, T5 truncation), refuse a typed option that contradicts them, and say under the table, per run, whether
its settings are the paper's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.config_run import parse_runs
from harness.cli.main import main
from harness.reporting.published import load_published
from harness.reporting.recipe import recipe_table
from tests.synthetic_runs import make_run

DESHPANDE = ["deshpande2023-table11", "deshpande2023-table12", "deshpande2023-table4"]


@pytest.mark.parametrize("recipe", DESHPANDE)
def test_deshpande_recipes_ask_for_the_papers_layout_stream_and_truncation(recipe: str) -> None:
    (run,), _ = parse_runs(recipe, ["--model", "gpt-4o"])
    assert (run.template, run.shot_sampler, run.shot_seed, run.truncate_input) == ("paper", "reference", None, "paper")


def test_tus_recipe_answers_with_gpt35_whoever_scores() -> None:
    base, qa = parse_runs("tu2024-table4", ["--model", "gpt-4o"])[0]
    assert (base.template, base.variant, base.answer_model) == ("tu-base", "sentences", None)
    assert (qa.template, qa.variant, qa.answer_model) == (None, "qa", "gpt-3.5-turbo-1106")


def test_a_dry_run_of_table12_uses_each_familys_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = []
    for model, backend in (("gpt-4-0314", []), ("google/flan-t5-small", ["--backend", "hf"])):
        argv = ["--config", "deshpande2023-table12", "--model", model, *backend, "--dry-run", "--no-progress"]
        assert main([*argv, "--results-dir", str(tmp_path / model.replace("/", "_"))]) == 0
        lines += [line for line in capsys.readouterr().out.splitlines() if line.startswith("- ")]
    configs = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*/stsb-*/config.json"))]
    got = {(c["model"], c["shots"], c["template"], c["settings"]["shot_sampler"]) for c in configs}
    grid = [(i, k) for i in ("none", "short", "long") for k in (0, 2, 4)]
    want = {("gpt-4-0314", k, f"stsb/{i}.j2", "reference") for i, k in grid}
    want |= {("google/flan-t5-small", k, f"stsb/t5-{i}.j2", "reference") for i, k in grid}
    assert got == want
    t5 = "- google/flan-t5-small long k=4 sentences: template t5-long, shot_sampler reference (seed 42), "
    assert t5 + "truncate_input 512; dry run: settings as published" in lines
    gpt = "- gpt-4-0314 none k=0 sentences: template none, shot_sampler reference, truncate_input none; "
    assert gpt + "dry run: settings as published" in lines
    assert len(lines) == 18


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        (["--dataset", "csts"], "--dataset contradicts the recipe's dataset = 'stsb'"),
        (["--template", "short"], "--template contradicts the recipe's template = 'paper'"),
        (["--shot-sampler", "seeded"], "--shot-sampler contradicts the recipe's shot-sampler = 'reference'"),
    ],
)
def test_a_recipe_refuses_a_typed_option_that_contradicts_it(
    typed: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--config", "deshpande2023-table12", "--model", "gpt-4-0314", *typed, "--dry-run"]
    assert main([*argv, "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --config deshpande2023-table12: {said}") and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_another_setting_is_reported_as_not_the_papers(tmp_path: Path) -> None:
    """An option the recipe leaves to the user (here the model id) is judged under the table, run by run."""
    run = make_run(tmp_path / "results", "r", "gpt-4", dataset="stsb", n=1500, config={"shot_sampler": "reference"})
    table = recipe_table("Deshpande et al. 2023, Table 12", [run], load_published())
    (line,) = [line for line in table.splitlines() if line.startswith("- ")]
    assert line == (
        "- gpt-4 long k=4 sentences: template long, shot_sampler reference (seed 42), truncate_input none; "
        "not comparable (model=gpt-4 (paper: gpt-4-0314))"
    )


def test_a_run_of_other_data_is_never_shown_as_the_tables(tmp_path: Path) -> None:
    config = {"shot_sampler": "reference"}
    run = make_run(tmp_path / "results", "r", "gpt-4-0314", dataset="csts", n=2834, config=config)
    table = recipe_table("Deshpande et al. 2023, Table 12", [run], load_published())
    (ours,) = [line for line in table.splitlines() if "(yours)" in line]
    assert "(not this table's data: csts validation, original labels)" in ours
