"""The embedding protocol (--variant case, Zhang et al. 2025) end to end through /v1/embeddings: the real OpenAI SDK
against tests/fake_server.py on 127.0.0.1 (its vectors are bags of words), synthetic C-STS only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from harness.cli.main import main
from harness.config.sections import EmbedOptions
from harness.config.settings import RunConfig
from harness.config.validate import validate
from harness.datasets.choose import load_dataset
from harness.scoring.isotropy import cosine_to_mean, isotropy
from harness.types import HarnessError
from harness.variants.case_inputs import TABLE1_SETTINGS, sides, texts_for, vector_texts
from tests.fake_server import FakeServer, bag_of_words


def args(csts_dir: Path, results: Path, run_id: str, server: FakeServer, *extra: str) -> list[str]:
    return [
        "--variant", "case", "--backend", "openai", "--model", "text-embedding-3-small", "--data-dir", str(csts_dir),
        "--results-dir", str(results), "--run-id", run_id, "--base-url", server.openai_url, "--no-progress", *extra,
    ]  # fmt: skip


def test_the_paper_s_instruction_and_concatenation_texts() -> None:
    t = texts_for("A cat sat.", "the animal", "instruct")
    assert t.cond == (
        "Instruct: Retrieve semantically similar texts to a given Condition, given the Sentence : A cat sat.\n"
        "Query: the animal"
    )
    assert t.sent == (
        "Instruct: Retrieve semantically similar texts to a given Sentence, given the Condition : the animal\n"
        "Query: A cat sat."
    )
    assert t.base == "Instruct: Retrieve semantically similar texts\nQuery: the animal"
    c = texts_for("A cat sat.", "the animal", "concat")
    assert (c.cond, c.sent) == ("the animal A cat sat.", "A cat sat. the animal")
    assert (c.base, c.plain) == ("the animal", "A cat sat.")


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("style", ["instruct", "concat"])
def test_every_setting_is_the_cosine_of_the_server_s_vectors(csts_dir: Path, tmp_path: Path, style: str) -> None:
    with FakeServer() as server:
        extra = ("--limit", "10", "--case-inputs", style, "--case-setting", "sent-c")
        assert main(args(csts_dir, tmp_path, "e", server, *extra)) == 0
    embedded = [c.prompt for c in server.calls if c.path == "/v1/embeddings"]
    assert len(embedded) == len(set(embedded))  # one request per distinct text, the cache's unit
    queries = load_dataset("csts", "validation", data_dir=csts_dir).examples[:10]
    metrics = json.loads((tmp_path / "e" / "metrics.json").read_text())
    samples = [json.loads(line) for line in (tmp_path / "e" / "samples.jsonl").read_text().splitlines()]
    gold = [q.label for q in queries]
    for setting in (*TABLE1_SETTINGS, "plain"):
        vectors, cosines = [], []
        for q in queries:
            pair = []
            for t in sides(q, style):
                main_text, minus = vector_texts(t, setting)
                v = np.array(bag_of_words(main_text), dtype=float)
                pair.append(v - np.array(bag_of_words(minus), dtype=float) if minus else v)
            vectors += pair
            cosines.append(_cos(*pair))
        got = metrics["case"]["settings"][setting]
        assert got["spearman"] == pytest.approx(100 * spearmanr(cosines, gold).statistic)
        assert got["pearson"] == pytest.approx(100 * pearsonr(cosines, gold).statistic)
        assert got["spearman_ci"][0] <= got["spearman"] <= got["spearman_ci"][1]
        draws = [isotropy(np.vstack(vectors), seed=seed) for seed in range(10)]
        assert got["isotropy"] == pytest.approx(np.mean(draws)) and got["isotropy_draws"] == 10
        assert got["isotropy_sd"] == pytest.approx(np.std(draws, ddof=1))
        assert got["cos_to_mean"] == pytest.approx(cosine_to_mean(np.vstack(vectors)))
        if setting == "sent-c":  # the samples' predictions are the chosen setting's cosines
            assert [s["prediction"] for s in samples] == pytest.approx(cosines)
            assert metrics["spearman"] == pytest.approx(got["spearman"])
    config = json.loads((tmp_path / "e" / "config.json").read_text())
    assert config["case"]["setting"] == "sent-c" and config["case"]["inputs"] == style
    # an embeddings API pools what it is sent: the run says so, and its identity is what it was before --case-pooling
    assert metrics["case"]["pooling"] == "whole" and "pooling" not in config["case"]
    assert ("pooling_note" in metrics["case"]) is (style == "instruct")


def test_dry_run_prices_every_distinct_text_and_max_cost_stops_sending(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer() as server:
        assert main(args(csts_dir, tmp_path, "d", server, "--limit", "6", "--dry-run")) == 0
    assert server.calls == []
    estimate = json.loads((tmp_path / "d" / "metrics.json").read_text())
    queries = load_dataset("csts", "validation", data_dir=csts_dir).examples[:6]
    texts = {x for q in queries for t in sides(q, "instruct") for x in (t.cond, t.sent, t.base, t.plain)}
    assert estimate["embeddings"]["requests"] == len(texts)
    assert estimate["max_cost_usd"] is not None and estimate["max_cost_usd"] > 0
    with FakeServer() as server:
        code = main(args(csts_dir, tmp_path, "m", server, "--limit", "6", "--max-cost", "0"))
    assert code != 0 and not [c for c in server.calls if c.path == "/v1/embeddings"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--case-setting", "cond-x"), "--case-setting: invalid choice: 'cond-x'"),
        (("--case-inputs", "prose"), "--case-inputs: invalid choice: 'prose'"),
        (("--case-ffn", "deep"), "--case-ffn: invalid choice: 'deep'"),
        (("--case-ffn-dim", "0"), "--case-ffn-dim must be at least 1, got 0"),
        (("--dataset", "stsb", "--case-setting", "cond-c"), "stsb has only `plain`"),
        (("--dataset", "stsb", "--case-ffn", "linear"), "trains on the train split of a dataset with conditions"),
        (("--variant", "sentences", "--case-ffn", "linear"), "belong to --variant case"),
    ],
)
def test_bad_options_are_one_line_exit_2_nothing_sent_nothing_written(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    with FakeServer() as server:
        assert main(args(csts_dir, tmp_path / "r", "b", server, *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and message in err[0]
    assert server.calls == [] and not (tmp_path / "r" / "b").exists()


@pytest.mark.parametrize(
    ("embed", "message"),
    [
        (
            EmbedOptions(setting="cond-x"),
            "unknown --case-setting 'cond-x'; choose from cond-c, cond, sent-c, sent, plain",
        ),
        (EmbedOptions(inputs="prose"), "unknown --case-inputs 'prose'; choose from instruct, concat"),
        (EmbedOptions(ffn="deep"), "unknown --case-ffn 'deep'; choose from none, linear, nonlinear"),
        (EmbedOptions(ffn_epochs=0), "--case-ffn-epochs must be at least 1, got 0"),
    ],
)
def test_the_case_options_are_checked_where_they_are_declared(embed: EmbedOptions, message: str) -> None:
    """A configuration from Python or a file, not only the command line: the declaration's choices and checks
    (harness/config/sections.py EmbedOptions), which config/validate.py runs for every option."""
    with pytest.raises(HarnessError, match=f"^{re.escape(message)}$"):
        validate(RunConfig(model="m", variant="case", embed=embed))
