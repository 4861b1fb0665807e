"""--config FILE.toml and the bundled recipes: every option from a file, the command line over it, one error line
for a bad file, the resolved settings in config.json, and each recipe covering its published table."""

from __future__ import annotations

import argparse
import csv
import json
import os
from pathlib import Path

import pytest

from harness.cli.config_file import RECIPES, recipe_names
from harness.cli.config_run import parse_runs
from harness.cli.main import main
from harness.cli.options import run_parser
from harness.config.checks import shard
from harness.reporting.published import PAPER_RESULTS


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "run.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def sample(action: argparse.Action) -> object:
    """A value the option accepts that differs from its default, as TOML would hold it."""
    choices = action.choices or getattr(action.type, "choices", ())
    if choices:
        return [c for c in choices if c != action.default][-1]
    convert = getattr(action.type, "convert", action.type)
    if convert is int:
        return 7
    if convert is float:
        return 0.5
    if convert is shard:
        return "1/2"
    return "x"


def toml_value(value: object) -> str:
    return json.dumps(value)  # TOML's strings, numbers, booleans and arrays read like JSON's here


def test_every_option_from_a_file_parses_as_it_does_typed(tmp_path: Path) -> None:
    parser = run_parser()
    lines, typed = [], []
    for option in parser.options:
        flag = option.action.option_strings[0]
        key = flag.removeprefix("--")
        if key == "config":
            continue
        if option.kind == "store_true":
            lines.append(f"{key} = true")
            typed.append(flag)
        elif option.kind == "boolean":
            lines.append(f"{key} = false")
            typed.append("--no-" + key)
        elif option.kind == "append":
            lines.append(f'{key} = ["a", "b"]')
            typed += [flag, "a", flag, "b"]
        else:
            value = sample(option.action)
            lines.append(f"{key} = {toml_value(value)}")
            typed += [flag, str(value)]
    name = write(tmp_path, "\n".join(lines) + "\n")
    (from_file,), _ = parse_runs(name, [])
    expected = vars(run_parser().parse_args(typed)) | {"config": name}
    assert vars(from_file) == expected
    assert len(lines) == len(parser.options) - 1 > 50  # every option but --config itself


def test_sweep_lists_and_the_command_line_wins(tmp_path: Path) -> None:
    name = write(tmp_path, 'model = "overlap"\nshots = [0, 2]\ninstr = ["none", "long"]\nstop = ["A"]\nchat = true\n')
    (args,), _ = parse_runs(name, ["--shots", "4", "--stop", "B", "--no-chat"])
    assert (args.model, args.shots, args.instr) == ("overlap", 4, ["none", "long"])
    assert args.stop == ["B"] and args.chat is False  # replaced, not added to


def test_config_json_records_the_resolved_settings_and_the_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    name = write(
        tmp_path, f'model = "overlap"\ndataset = "stsb"\nlimit = 30\nshots = 2\nresults-dir = "{tmp_path}/r"\n'
    )
    assert main(["--config", name, "--limit", "20", "--no-progress"]) == 0
    (run_dir,) = [p for p in (tmp_path / "r").iterdir() if p.is_dir()]
    settings = json.loads((run_dir / "config.json").read_text())["settings"]
    assert (settings["limit"], settings["shots"], settings["dataset"], settings["config_file"]) == (20, 2, "stsb", name)
    assert capsys.readouterr().out.splitlines()[0].startswith("overlap: n=20")  # the metrics line names the model


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('model = "overlap"\nshot = 2\n', "unknown key 'shot' (did you mean 'shots'?)"),
        ('model = "overlap"\nshots = "x"\n', "argument --shots: invalid int value: 'x'"),
        ('model = "overlap"\nlimit = [1, 2]\n', "limit takes one value, not a list"),
        ('model = "overlap"\ndry-run = "yes"\n', "dry-run must be true or false"),
        ('model = "overlap"\nshots = [0,\n', "not valid TOML"),
        ('dataset = "stsb"\n', "names no model"),
        ('model = "overlap"\n[[runs]]\nvariant = "nope"\n', "invalid choice: 'nope'"),
        # issue 41: a RecursionError's traceback; a path cut at its NUL (the cache's: every answer left uncached)
        ('model = "overlap"\nshots = ' + "[" * 3000 + "]" * 3000 + "\n", "nested deeper than a TOML reader goes"),
        ('model = "overlap"\ncache = "c\\u0000.sqlite"\n', "cache holds a NUL character"),
        ('model = "overlap"\nrun-id = "a\\u0000b"\n', "run-id holds a NUL character"),
        ('model = "overlap"\n# ' + "x" * 2**20 + "\n", "larger than the 1 MiB this reader takes"),
    ],
)
def test_a_bad_file_is_one_error_line_exit_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, text: str, message: str
) -> None:
    name = write(tmp_path, text)
    assert main(["--config", name, "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --config") and message in err
    assert not (tmp_path / "r").exists()


def test_an_unknown_recipe_gets_a_did_you_mean(capsys: pytest.CaptureFixture) -> None:
    assert main(["--config", "deshpande-table11", "--model", "overlap"]) == 2
    assert "did you mean 'deshpande2023-table11'?" in capsys.readouterr().err


def published_settings(source: str) -> set[tuple[str, str, str, int]]:
    with PAPER_RESULTS.open(encoding="utf-8") as f:
        return {
            (r["dataset"], r["instr"], r["variant"], int(r["shots"]))
            for r in csv.DictReader(f)
            if r["source"] == source
        }


@pytest.mark.parametrize("recipe", recipe_names())
def test_each_recipe_runs_every_setting_of_its_published_table(recipe: str) -> None:
    runs, source = parse_runs(recipe, ["--model", "gpt-4o"])
    assert source is not None
    wanted = published_settings(source)
    assert wanted, f"{recipe}: no published rows for {source!r}"
    from harness.prompting.render import TEMPLATE_INSTR

    covered = set()
    for a in runs:
        instrs = a.instr if isinstance(a.instr, list) else [TEMPLATE_INSTR.get(a.template, a.instr)]
        shots = a.shots if isinstance(a.shots, list) else [a.shots]
        variant = "qa-answers" if a.variant == "qa" else a.variant
        instrs = ["short"] if a.variant == "qa" else instrs  # Tu et al.'s QA prompt is listed under "short"
        covered |= {(a.dataset, i, variant, k) for i in instrs for k in shots}
    assert wanted <= covered


def test_recipes_are_listed(capsys: pytest.CaptureFixture) -> None:
    assert main(["--config", "list"]) == 0
    out = capsys.readouterr().out
    assert (
        [line.split()[0] for line in out.splitlines()]
        == recipe_names()
        == sorted(p.stem for p in RECIPES.glob("*.toml"))
    )


def test_a_recipe_prints_the_papers_table_beside_yours(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["--config", "deshpande2023-table12", "--model", "overlap", "--limit", "30", "--no-progress"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| ")}
    # Table 12, GPT-4, long k=4: 90.65 Spearman, 0.0 % invalid (Deshpande et al. 2023)
    assert rows["GPT-4 (paper)"].rstrip(" |").endswith("90.65 (inv 0.0%)")
    ours = rows["**overlap** (yours)"].split(" | ")[1:]
    metrics = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("stsb-*-k0-none-*/metrics.json"))]
    assert ours[0] == f"{metrics[0]['spearman']:.2f} (inv 0.0%, n=30)" and len(ours) == 9
    assert out.rstrip().splitlines()[-1].endswith("report/index.html")


def test_a_fifo_as_the_config_file_is_refused_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    os.mkfifo(tmp_path / "run.toml")
    assert main(["--config", str(tmp_path / "run.toml"), "--results-dir", str(tmp_path / "r")]) == 2
    assert (
        capsys.readouterr().err == f"error: --config file {tmp_path / 'run.toml'} is a FIFO (named pipe), not a file\n"
    )


@pytest.mark.parametrize("value", ["1e308", "1e13"])
def test_a_number_past_any_setting_s_range_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, value: str
) -> None:
    """--max-reply-mb 1e308 ended in an OverflowError's traceback when the first request was read (issue 41)."""
    name = write(tmp_path, f'model = "m"\nbase-url = "http://127.0.0.1:9/v1"\nmax-reply-mb = {value}\n')
    assert main(["--config", name, "--results-dir", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == f"error: --max-reply-mb must be at most 1e+12, got {float(value):g}\n"
    assert not (tmp_path / "r").exists()
