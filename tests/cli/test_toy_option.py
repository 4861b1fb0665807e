"""An option is one declaration and its one use (docs/extending.md "Adding an option"): a toy option, declared as a
field with `option(...)` exactly as RunConfig's own are, appears in `--help`, is a key of a `--config` TOML file,
is checked, lands in RunConfig and config.json, and is in docs/options.md as harness.cli.reference writes it,
with nothing else written for it. Its one use is a toy baseline's `from_config`, which answers with its value."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.calling.backends import BACKENDS, Description
from harness.calling.backends.offline import OverlapScorer
from harness.cli.main import main
from harness.cli.options import run_parser
from harness.cli.reference import render
from harness.config import settings
from harness.config.checks import finite
from harness.config.option import Affects, option
from harness.types import Completion, Request
from tests.conftest import ROOT

# What docs/extending.md "Adding an option" must name: the declaration's file (the use is the reader's own module).
DOCUMENTED = ("harness/config/settings.py", "harness/config/sections.py")


@dataclass(frozen=True)
class ToyConfig(settings.RunConfig):
    # The one declaration: in harness/config/settings.py this is one more field of RunConfig.
    toy_answer: float | None = option(
        None,
        "toy: the score every reply gives (default: the word overlap)",
        metavar="SCORE",
        check=finite(),
        affects=Affects.READING,  # what it changes: how a reply is scored (the run's identity, not the cache key)
    )


def from_config(config: ToyConfig, line: Description) -> ToyScorer:
    """The one use: the stage that needs the setting reads it from the RunConfig it is given."""
    return ToyScorer(config.model, config.toy_answer)


class ToyScorer(OverlapScorer):
    def __init__(self, model: str, answer: float | None) -> None:
        super().__init__(model, label_range=(0.0, 5.0))
        self.answer = answer

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        for r in requests:
            yield Completion(r.id, self.score(r.prompt) if self.answer is None else f"{self.answer}")


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "RunConfig", ToyConfig)  # as if the field were in settings.py
    monkeypatch.setitem(BACKENDS, "toy", Description("tests.cli.test_toy_option", "baseline", models=("toy",)))


def _run(tmp_path: Path, run_id: str, *argv: str) -> tuple[dict[str, object], list[float]]:
    run_dir = tmp_path / "r" / run_id
    assert main([*argv, "--run-id", run_id, "--no-progress"]) == 0
    settings_ = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))["settings"]
    lines = (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return settings_, [json.loads(line)["prediction"] for line in lines]


def test_a_toy_option_is_in_help_toml_config_json_and_the_reference(
    toy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    help_text = " ".join(run_parser().format_help().split())
    assert "--toy-answer SCORE toy: the score every reply gives (default: the word overlap)" in help_text
    rows = [line for line in render().splitlines() if "--toy-answer" in line]
    assert rows == [
        "| `--toy-answer SCORE` |  | toy: the score every reply gives (default: the word overlap) |",
        "| `--toy-answer` | READING |",
    ]

    path = tmp_path / "toy.toml"
    path.write_text(
        f'model = "toy"\ndataset = "stsb"\nlimit = 6\ntoy-answer = 3.5\nresults-dir = "{tmp_path}/r"\n',
        encoding="utf-8",
    )
    recorded, predictions = _run(tmp_path, "file", "--config", str(path))
    assert recorded["toy_answer"] == 3.5 and predictions == [3.5] * 6
    recorded, predictions = _run(tmp_path, "typed", "--config", str(path), "--toy-answer", "2")
    assert recorded["toy_answer"] == 2.0 and predictions == [2.0] * 6  # the command line over the file
    recorded, predictions = _run(tmp_path, "unset", "--model", "toy", "--dataset", "stsb", "--limit", "6",
                                 "--results-dir", str(tmp_path / "r"))  # fmt: skip
    overlap = [p for p in predictions if p not in (2.0, 3.5)]
    assert recorded["toy_answer"] is None and len(overlap) >= 4  # its default: the overlap baseline's answers

    capsys.readouterr()
    assert main(["--config", str(path), "--toy-answer", "nan", "--run-id", "bad"]) == 2  # its declared check
    assert capsys.readouterr().err == "error: --toy-answer must be a number 0 or more, got nan\n"
    assert not (tmp_path / "r" / "bad").exists()


def test_without_the_declaration_there_is_no_such_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--toy-answer" not in run_parser().format_help() and "--toy-answer" not in render()
    assert main(["--model", "overlap", "--dataset", "stsb", "--toy-answer", "2"]) == 2
    assert "unrecognized argument --toy-answer" in capsys.readouterr().err


def test_docs_extending_names_the_files_an_option_touches() -> None:
    text = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    start = text.index("## Adding an option\n")
    end = text.find("\n## ", start + 1)
    part = text[start : end if end >= 0 else len(text)]
    for name in DOCUMENTED:
        assert f"`{name}`" in part and (ROOT / name).is_file()
    assert "option(" in part and "python -m harness.cli.reference" in part
