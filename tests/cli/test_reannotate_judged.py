"""`reannotate` judges Zhang et al.'s alpha and kappa like a run (model, repeats, split, a random 100, temperature,
label source), and `--sample` draws the rows as a run's `--sample` does; two models' outputs then merge into V()
through `reannotate-merge`. The real OpenAI SDK against tests/fake_server.py, on synthetic C-STS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.datasets.items import select
from harness.scoring.reannotation import merged_labels
from tests.fake_server import FakeServer
from tests.variants.test_reannotate_run import Fake, planted_ratings

CLAUDE, GPT = "claude-3-7-sonnet-20250219", "gpt-4o-2024-08-06"


def reannotate(csts_dir: Path, tmp_path: Path, model: str, out: str, *extra: str) -> list[str]:
    rows = load_dataset("csts", "train", data_dir=csts_dir).examples
    with FakeServer(answer=Fake(rows)) as server:
        argv = ["reannotate", "--backend", "openai", "--model", model, "--base-url", server.openai_url]
        argv += ["--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "results"), "--no-progress"]
        assert main([*argv, "--split", "train", "--out", str(tmp_path / out), *extra]) == 0
    return argv


def test_a_sampled_run_is_judged_against_both_published_figures(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reannotate(csts_dir, tmp_path, CLAUDE, "claude.tsv", "--sample", "5", "--sample-seed", "3", "--repeats", "3")
    printed = capsys.readouterr().out
    train = load_dataset("csts", "train", data_dir=csts_dir).examples
    drawn = [e.id for e in select(train, sample=5, sample_seed=3)]
    uids = [line.split("\t")[0] for line in (tmp_path / "claude.tsv").read_text().splitlines()[1:]]
    assert uids == drawn and drawn != [e.id for e in train[:5]]  # the seeded draw, not the first rows
    alpha = (
        "not comparable (repeats=3 (paper: 5); rows=5 (a seeded sample) (paper: a random 100); conditions=original "
        "(paper: rewritten by GPT-4o, Train-Mod); temperature 0: the paper states none)"
    )
    kappa = (
        f"not comparable (labels=V({CLAUDE}) (paper: V(human + GPT-4o + Claude-3.7-Sonnet), reannotate-merge); "
        f"repeats=3 (paper: one rating per model, §2.2); rows=5 (a seeded sample) (paper: all {len(train)}); "
        "conditions=original (paper: rewritten by GPT-4o, Train-Mod); temperature 0: the paper states none)"
    )
    assert f"  published (Zhang et al. 2025, §3): alpha 0.865: {alpha}\n" in printed
    assert f"  published (Zhang et al. 2025, §3): kappa vs original 0.247: {kappa}\n" in printed
    record = json.loads((tmp_path / "claude.agreement.json").read_text())
    assert record["published_verdicts"] == {"alpha": alpha, "kappa_vs_original": kappa}
    assert record["setup"] | {"split_rows": 0} == {
        "models": [CLAUDE], "repeats": 3, "split": "train", "split_rows": 0, "chosen": "sample", "rows": 5,
        "temperature": 0.0, "with_original": False, "rewritten_by": None,
    }  # fmt: skip


def test_two_runs_merge_into_v_of_three_sources(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for model, name in ((GPT, "gpt.tsv"), (CLAUDE, "claude.tsv")):
        reannotate(csts_dir, tmp_path, model, name, "--limit", "12")
    capsys.readouterr()
    out = tmp_path / "merged" / "v.tsv"
    argv = ["reannotate-merge", str(tmp_path / "gpt.tsv"), str(tmp_path / "claude.tsv"), "--out", str(out)]
    assert main([*argv, "--data-dir", str(csts_dir)]) == 0
    printed = capsys.readouterr().out
    train = load_dataset("csts", "train", data_dir=csts_dir).examples[:12]
    ratings = {e.id: planted_ratings(int(e.id))[:1] for e in train}  # each model's one (first) planted reply
    want = merged_labels([ratings, ratings], {e.id: e.label for e in train})
    got = dict(line.split("\t") for line in out.read_text().splitlines()[1:])
    assert got == {u: str(-1 if v is None else v) for u, v in want.items()}
    assert f"reannotate-merge ({GPT} + {CLAUDE}, train): 12 rows" in printed
    assert "kappa vs original 0.247: not comparable (rows=12 (part) (paper: all" in printed


def answer(prompt: str) -> str:
    """A stand-in for both models: Figure 3 prompts get one rewritten condition, Figure 4 prompts a rating that
    depends on the prompt (so on the condition it was rated under)."""
    if prompt.startswith("This is a Conditional STS task:"):
        return '{"improved_condition": "the colour of the object", "justification": "more specific"}'
    return json.dumps({"rating": 1 + sum(map(ord, prompt)) % 5, "justification": "stand-in"})


def test_the_papers_protocol_end_to_end_is_comparable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GPT-4o rewrites the conditions; Claude rates under them (--conditions): a random 100 rows five times for
    # alpha; both models rate every train row once, merged with the original labels for kappa (Zhang et al. §2-3)
    from tests.conftest import write_synthetic_csts

    csts = write_synthetic_csts(tmp_path / "csts", n_train=120)
    with FakeServer(answer=answer) as server:
        base = ["reannotate", "--backend", "openai", "--base-url", server.openai_url, "--data-dir", str(csts)]
        base += ["--results-dir", str(tmp_path / "results"), "--no-progress", "--split", "train"]
        run = [*base, "--model", GPT, "--rewrite-conditions", "--out", str(tmp_path / "gpt.tsv")]
        assert main(run) == 0
        given = ["--conditions", str(tmp_path / "gpt.tsv")]
        assert main([*base, "--model", CLAUDE, *given, "--out", str(tmp_path / "claude.tsv")]) == 0
        alpha_run = [*base, "--model", CLAUDE, *given, "--sample", "100", "--repeats", "5"]
        capsys.readouterr()
        assert main([*alpha_run, "--temperature", "1", "--out", str(tmp_path / "alpha.tsv")]) == 0
    assert (
        "  published (Zhang et al. 2025, §3): alpha 0.865: comparable (Claude-3.7-Sonnet, 5 repeats of a random "
        "100 train rows, GPT-4o's conditions; temperature 1: the paper states none)\n" in capsys.readouterr().out
    )
    claude = json.loads((tmp_path / "claude.agreement.json").read_text())
    gpt = json.loads((tmp_path / "gpt.agreement.json").read_text())
    assert claude["conditions"]["rewritten_by"] == GPT
    assert claude["conditions"]["conditions_sha256"] == gpt["conditions"]["conditions_sha256"]
    out = tmp_path / "v.tsv"
    assert main(["reannotate-merge", str(tmp_path / "gpt.tsv"), str(tmp_path / "claude.tsv"), "--out", str(out),
                 "--data-dir", str(csts)]) == 0  # fmt: skip
    assert (
        "kappa vs original 0.247: comparable (every train row, V(human + GPT-4o + Claude-3.7-Sonnet), GPT-4o's "
        "conditions; temperature 0: the paper states none)" in capsys.readouterr().out
    )
    header, *rows = out.read_text().splitlines()
    train = load_dataset("csts", "train", data_dir=csts).examples
    assert header == "uid\treannotated-label\tcondition" and len(rows) == len(train)
    assert {r.split("\t")[2] for r in rows} == {"the colour of the object"}


def test_conditions_from_a_file_without_them_is_one_error_line(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain.tsv"
    plain.write_text("uid\treannotated-label\n0\t3\n")
    argv = ["reannotate", "--model", CLAUDE, "--data-dir", str(csts_dir), "--conditions", str(plain)]
    assert main([*argv, "--out", str(tmp_path / "out" / "x.tsv"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --conditions {plain}: no condition column") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
