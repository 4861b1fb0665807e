"""Reports: numbers recomputed from samples.jsonl, the Table 11/12 layout, published numbers beside ours."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as scipy_stats

from harness.cli.main import main
from harness.config.settings import RunConfig
from harness.reporting.compare import compare_runs
from harness.reporting.report import write_report
from harness.results.write import write_run
from harness.runner import run
from harness.types import HarnessError, Scored
from tests.synthetic_runs import make_run


def _offline_run(results: Path, model: str, dataset: str = "stsb", **kw: object) -> Path:
    config = RunConfig(model=model, dataset=dataset, results_dir=results, progress=False, **kw)  # type: ignore[arg-type]
    return run(config).run_dir


def _fake_run(
    results: Path,
    name: str,
    model: str,
    dataset: str = "csts",
    instr: str = "long",
    shots: int = 4,
    preds: list[float] | None = None,
    **extra: object,
) -> Path:
    """A run folder as the runner writes it, for a model we cannot call here (its outputs made up)."""
    golds = [float(1 + (i * 7) % 5) for i in range(40)]
    preds = preds if preds is not None else [g if i % 3 else 3.0 for i, g in enumerate(golds)]
    samples = [
        Scored(
            id=str(i),
            prompt="prompt",
            shot_ids=(),
            output=f"{p}",
            parsed=p,
            valid=True,
            prediction=p,
            label=g,
            pair=str(i - i % 2) if dataset == "csts" else None,
        )
        for i, (p, g) in enumerate(zip(preds, golds, strict=True))
    ]
    label_range = [1.0, 5.0] if dataset == "csts" else [0.0, 5.0]
    config = {
        "dataset": dataset,
        "split": "validation",
        "model": model,
        "shots": shots,
        "seed": 0,
        "template": f"{dataset}/{instr}.j2",
        "label_range": label_range,
        "config_hash": name,
        **extra,
    }
    return write_run(results, name, config, samples, {}).run_dir


def test_report_numbers_equal_those_recomputed_from_samples(tmp_path: Path) -> None:
    results = tmp_path / "results"
    dirs = [_offline_run(results, "overlap", limit=300, shots=2), _offline_run(results, "random", limit=300)]
    out = write_report(dirs, tmp_path / "report")
    table = pd.read_csv(out / "runs.csv")
    for run_dir, row in zip(dirs, table.itertuples(), strict=True):
        lines = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
        pred, gold = [s["prediction"] for s in lines], [s["label"] for s in lines]
        assert row.run_dir == str(run_dir)
        assert row.spearman == pytest.approx(100 * scipy_stats.spearmanr(pred, gold).statistic, abs=1e-3)
        assert row.pearson == pytest.approx(100 * scipy_stats.pearsonr(pred, gold).statistic, abs=1e-3)
        assert row.invalid_pct == pytest.approx(100 * sum(not s["valid"] for s in lines) / len(lines))
        assert row.spearman_lo < row.spearman < row.spearman_hi


def test_layout_has_instruction_by_model_rows_and_k_by_metric_columns(tmp_path: Path) -> None:
    results = tmp_path / "results"
    dirs = [
        _offline_run(results, model, limit=50, shots=k, instr=instr)
        for model in ("overlap", "random")
        for instr in ("none", "long")
        for k in (0, 2)
    ]
    out = write_report(dirs, tmp_path / "report")
    wide = pd.read_csv(out / "table_stsb-validation.csv")
    per_k = ["n", "errors", "invalid", "pearson", "spearman", "published_spearman", "published_note"]
    assert list(wide.columns) == ["instruction", "model"] + [f"k{k}_{c}" for k in (0, 2) for c in per_k]
    assert list(zip(wide["instruction"], wide["model"], strict=True)) == [
        ("none", "overlap"),
        ("none", "random"),
        ("long", "overlap"),
        ("long", "random"),
    ]
    assert set(wide["k0_invalid"]) == {0.0, 100.0}
    assert set(wide["k2_n"]) == {50} and set(wide["k2_errors"]) == {0}
    tex = (out / "table_stsb-validation.tex").read_text()
    assert "\\multicolumn{5}{c}{2-shot}" in tex and "\\toprule" in tex and "n & Err. & Invalid" in tex
    md = (out / "table_stsb-validation.md").read_text()
    assert md.startswith("| Instruction | Model | k=0 n | k=0 Errors | k=0 Invalid | k=0 Pearson | k=0 Spearman")
    assert "k=0 Published Spearman" in md


AS_PUBLISHED = {"shot_sampler": "reference"}  # the reference stream (seed 42 by default), as the paper's k=4 rows


def test_published_numbers_sit_beside_a_full_split_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    matching = make_run(results, "gpt4-long-k4", "gpt-4-0314", n=2834, config=AS_PUBLISHED)
    other_k = make_run(results, "gpt4-long-k3", "gpt-4-0314", shots=3, n=2834, config=AS_PUBLISHED)
    out = write_report([matching, other_k], tmp_path / "report")
    published = pd.read_csv(out / "published.csv")
    (row,) = published.itertuples()  # k=3 has no published counterpart
    # Deshpande et al. 2023, Table 11: GPT-4, long instruction, 4-shot, C-STS validation.
    assert (row.paper_model, row.paper_invalid_pct, row.paper_pearson, row.paper_spearman) == (
        "GPT-4",
        0.0,
        42.26,
        42.38,
    )
    assert pd.isna(row.paper_note)
    runs = pd.read_csv(out / "runs.csv").set_index("run")
    assert row.diff_spearman == pytest.approx(runs.loc["gpt4-long-k4", "spearman"] - 42.38)
    report = (out / "report.md").read_text()
    assert "Deshpande et al. 2023, Table 11" in report
    assert "| comparable: every setting as published (template long, reference shots, seed 42, gpt-4-0314) |" in report
    table = pd.read_csv(out / "table_csts-validation.csv")
    assert list(table["k4_published_spearman"].dropna()) == [42.38]


@pytest.mark.parametrize(
    ("n", "errors", "note"),
    [
        (9, 0, "not comparable (n=9 of 2,834)"),
        (2834, 3, "not comparable (n=2,831 of 2,834; 3 failed requests)"),
    ],
)
def test_a_partial_or_errored_run_is_not_set_against_the_published_number(
    n: int, errors: int, note: str, tmp_path: Path
) -> None:
    run_dir = make_run(tmp_path / "results", "gpt4", "gpt-4-0314", n=n, errors=errors, config=AS_PUBLISHED)
    out = write_report([run_dir], tmp_path / "report")
    (row,) = pd.read_csv(out / "published.csv").itertuples()
    assert row.paper_spearman == 42.38 and row.paper_note == note
    assert pd.isna(row.diff_spearman) and pd.isna(row.diff_pearson)  # no Δ beside a number it cannot be set against
    table = pd.read_csv(out / "table_csts-validation.csv")
    assert list(table["k4_published_note"]) == [note]
    assert list(table["k4_n"]) == [n - errors] and list(table["k4_errors"]) == [errors]
    assert f"42.38, {note}" in (out / "table_csts-validation.md").read_text()
    assert f"published Spearman 42.38 is {note}" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("template", "variant", "published"),
    [("qa", "qa", (64.4, 60.2)), ("tu-base", "sentences", (64.2, 63.3))],
)
def test_tu_et_al_runs_pick_their_published_row(
    template: str, variant: str, published: tuple[float, float], tmp_path: Path
) -> None:
    """Config as the runner writes it for --variant qa / --template tu-base, --labels reannotated,
    --subset reannotated-test: matched to Tu et al. Table 4 (short instruction, 30% test split)."""
    extra = {"variant": variant, "labels": "reannotated", "subset": "reannotated-test"}
    extra |= {"answer_model": "gpt-3.5-turbo-1106"} if variant == "qa" else {}  # Tu et al.: GPT-3.5's answers
    model = "gpt-4-0125-preview"  # Tu et al. 2024 §4.1's GPT-4
    run_dir = make_run(tmp_path / "results", "gpt4-tu", model, instr=template, shots=0, n=786, config=extra)
    out = write_report([run_dir], tmp_path / "report")
    (row,) = pd.read_csv(out / "published.csv").itertuples()
    assert row.paper_source == "Tu et al. 2024, Table 4"
    assert (row.paper_spearman, row.paper_pearson) == published
    assert pd.isna(row.paper_note)  # the 786 items of the 30% part: comparable


def test_csts_and_stsb_side_by_side_with_the_gap(tmp_path: Path) -> None:
    results = tmp_path / "results"
    a = _fake_run(results, "c", "gpt-4", dataset="csts")
    b = _fake_run(results, "s", "gpt-4", dataset="stsb", preds=[float(1 + (i * 7) % 5) for i in range(40)])
    out = write_report([a, b], tmp_path / "report")
    (row,) = pd.read_csv(out / "side_by_side.csv").itertuples()
    assert row.spearman_stsb == pytest.approx(100.0)
    assert row.spearman_gap == pytest.approx(row.spearman_stsb - row.spearman_csts)


def test_report_writes_the_plots(tmp_path: Path) -> None:
    results = tmp_path / "results"
    dirs = [_offline_run(results, "overlap", limit=40, shots=k) for k in (0, 2)]
    out = write_report(dirs, tmp_path / "report")
    for name in ("spearman_vs_k.png", "invalid_rate.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_metrics_json_that_disagrees_with_samples_is_flagged(tmp_path: Path) -> None:
    run_dir = _offline_run(tmp_path / "results", "overlap", limit=40)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    (run_dir / "metrics.json").write_text(json.dumps(metrics | {"spearman": 99.0}))
    out = write_report([run_dir], tmp_path / "report")
    assert "metrics.json differs from samples.jsonl for R1 (spearman)" in (out / "report.md").read_text()


def test_report_command_on_a_sweep_writes_into_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    results = tmp_path / "results"
    args = ["--model", "overlap,random", "--dataset", "stsb", "--limit", "20", "--results-dir", str(results)]
    assert main(args) == 0
    (sweep,) = results.glob("sweep-*")
    (sweep / "report" / "report.md").unlink()
    assert main(["report", str(sweep)]) == 0
    assert (sweep / "report" / "report.md").is_file()
    assert "| Instruction | Model |" in capsys.readouterr().out


def test_report_refuses_a_folder_that_is_no_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "neither a run folder" in capsys.readouterr().err


def test_compare_prints_paired_p_values(tmp_path: Path) -> None:
    results = tmp_path / "results"
    a = _offline_run(results, "overlap", limit=200)
    b = _offline_run(results, "random", limit=200)
    text = compare_runs(a, b, n_resamples=300)
    assert str(a) in text and str(b) in text
    row = next(line for line in text.splitlines() if line.startswith("| all (fallback included) | spearman"))
    p_boot = float(row.split("|")[8].strip(" ≤"))
    assert p_boot < 0.01


def test_compare_refuses_runs_on_different_data(tmp_path: Path) -> None:
    results = tmp_path / "results"
    with pytest.raises(HarnessError, match="differ in dataset"):
        compare_runs(_fake_run(results, "a", "gpt-4"), _fake_run(results, "b", "gpt-4", dataset="stsb"))


def test_csts_samples_carry_their_sentence_pair_for_the_bootstrap(tmp_path: Path, csts_dir: Path) -> None:
    run_dir = _offline_run(tmp_path / "results", "overlap", dataset="csts", data_dir=csts_dir)
    lines = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    # The synthetic release, like the real one, lists a pair's two conditions as rows 2i and 2i+1.
    assert [s["pair"] for s in lines] == [str(i - i % 2) for i in range(len(lines))]
