"""Chosen items end to end (issue 44, item 1): two models given the same --sample get the same items whatever --shard
says, the choice is in config.json and its config_hash, an id list's order in its file changes nothing, and the
comparability check names how a part of the split was chosen. Pinned shots reach every prompt, and are judged too."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from harness.cli.main import main
from harness.config.settings import RunConfig
from harness.reporting.paper_settings import run_settings
from harness.reporting.published import load_published, not_comparable
from harness.results.read import load_run
from harness.runner import plan, prepare
from tests.datasets.test_items import GOLDEN_FIRST


def _ids(run: Path) -> list[str]:
    return [json.loads(line)["id"] for line in (run / "samples.jsonl").read_text().splitlines()]


def test_two_models_and_every_shard_get_the_same_sample(tmp_path: Path) -> None:
    common = ["--dataset", "stsb", "--sample", "500", "--sample-seed", "3", "--no-progress"]
    common += ["--results-dir", str(tmp_path)]
    for model in ("overlap", "random"):
        assert main([*common, "--model", model, "--run-id", model]) == 0
    for k in (1, 2):
        assert main([*common, "--model", "overlap", "--shard", f"{k}/2", "--run-id", f"part{k}"]) == 0
    overlap, random_ = _ids(tmp_path / "overlap"), _ids(tmp_path / "random")
    assert overlap == random_
    assert overlap[:12] == GOLDEN_FIRST and len(overlap) == 500
    parts = [_ids(tmp_path / f"part{k}") for k in (1, 2)]
    assert sorted(parts[0] + parts[1], key=int) == overlap and not set(parts[0]) & set(parts[1])
    config = json.loads((tmp_path / "overlap" / "config.json").read_text())
    assert (config["sample"], config["sample_seed"], config["n_queries"]) == (500, 3, 500)


def test_the_choice_of_items_is_part_of_the_config_hash(tmp_path: Path) -> None:
    base = RunConfig(model="overlap", dataset="stsb", dry_run=True)
    hashes = {
        name: plan(dataclasses.replace(base, **kw)).record["config_hash"]
        for name, kw in {
            "all": {},
            "limit": {"limit": 20},
            "sample": {"sample": 20},
            "seed": {"sample": 20, "sample_seed": 1},
        }.items()
    }
    assert len(set(hashes.values())) == 4
    assert "sample" not in plan(base).record  # runs made before --sample keep their hashes
    (tmp_path / "a.txt").write_text("5\n9\n2\n")
    (tmp_path / "b.txt").write_text("# the same ids\n2\n5\n9\n")
    a = plan(dataclasses.replace(base, ids=tmp_path / "a.txt")).record
    b = plan(dataclasses.replace(base, ids=tmp_path / "b.txt")).record
    assert a["config_hash"] == b["config_hash"] and a["n_queries"] == 3
    assert a["ids_hash"] != plan(dataclasses.replace(base, limit=3)).record.get("ids_hash")


def test_the_comparability_check_names_a_sample_and_an_id_list(tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("\n".join(str(i) for i in range(0, 1500, 3)))
    common = ["--dataset", "stsb", "--model", "overlap", "--no-progress", "--results-dir", str(tmp_path)]
    assert main([*common, "--sample", "500", "--sample-seed", "3", "--run-id", "s"]) == 0
    assert main([*common, "--ids", str(tmp_path / "ids.txt"), "--run-id", "i"]) == 0
    assert main([*common, "--sample", "5000", "--run-id", "whole"]) == 0
    row = next(p for p in load_published() if p.source.endswith("Table 12") and p.shots == 0 and p.instr == "none")
    verdicts = {}
    for name in ("s", "i", "whole"):
        run = load_run(tmp_path / name)
        verdicts[name] = not_comparable(row, int(run.stored_metrics["n"]), 0, run_settings(run, None)) or ""
    assert "n=500 of 1,500, a seeded sample (--sample 500 --sample-seed 3)" in verdicts["s"]
    assert "n=500 of 1,500, the items of an id list (--ids)" in verdicts["i"]
    assert "n=" not in verdicts["whole"]  # a sample as large as the split is the split


def test_pinned_shots_reach_every_prompt_and_are_judged(csts_dir: Path, tmp_path: Path) -> None:
    base = RunConfig(model="overlap", data_dir=csts_dir, shots=4, limit=5)
    drawn = prepare(base)
    train = {e.id: e for e in drawn.dataset.pool}
    # The synthetic train split lists each pair's two conditions in turn: rows 7 and 2 are in pairs 3 and 1.
    (tmp_path / "shots.txt").write_text("7\n2\n6  # 7's pair again: once\n")
    pinned = prepare(dataclasses.replace(base, shot_ids=tmp_path / "shots.txt"))
    pairs = [{"6", "7"}, {"2", "3"}]
    for shots in pinned.shots:
        assert [{s.id for s in shots[:2]}, {s.id for s in shots[2:]}] == pairs
        assert shots[0].label >= shots[1].label and shots[2].label >= shots[3].label  # type: ignore[operator]
        assert all(s == train[s.id] for s in shots)
    assert pinned.shots != drawn.shots
    argv = ["--model", "overlap", "--data-dir", str(csts_dir), "--shots", "4", "--limit", "5", "--no-progress"]
    argv += ["--shot-ids", str(tmp_path / "shots.txt"), "--results-dir", str(tmp_path / "r"), "--run-id", "p"]
    assert main(argv) == 0
    ident = run_settings(load_run(tmp_path / "r" / "p"), None)
    row = next(p for p in load_published() if p.source.endswith("Table 11") and p.shots == 4 and p.instr == "none")
    assert f"shot_ids={tmp_path / 'shots.txt'} (paper: reference, seed 42)" in (not_comparable(row, 5, 0, ident) or "")
