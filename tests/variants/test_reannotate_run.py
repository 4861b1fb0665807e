"""`run_eval.py reannotate` end to end: the real OpenAI SDK against tests/fake_server.py replying JSON (and
malformed JSON, planted on known rows); the labels file it writes evaluated by `run_eval.py --labels FILE`."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.types import Example
from tests.fake_server import FakeServer
from tests.real_model import MODEL, requires_smollm2

CONDITION_PROMPT = "This is a Conditional STS task:"  # Figure 3's first words
RATING_PROMPT = "Definition: Evaluate the similarity"  # Figure 4's
REPEATS = 3


def planted(uid: int) -> list[str]:
    """The replies one row gets to its REPEATS rating prompts (in whatever order they arrive)."""
    r = 1 + uid % 5
    other = r if uid % 2 == 0 else min(5, r + 1)  # odd rows: the repeats disagree by one
    ok = [f'{{"rating": {r}, "justification": "Planté."}}'] * 2 + [f'{{"rating": {other}, "justification": "x"}}']
    match uid:
        case 3:
            return ["The rating is 4 because both are similar.", *ok[1:]]  # prose: invalid JSON
        case 5:
            return ['{"rating": 2, "justification": "cut off at max_to'] * REPEATS  # every repeat truncated
        case 7:
            return [f'```json\n{{"rating": {r}, "justification": "fenced"}}\n```', *ok[1:]]  # embedded
        case 9:
            return [f'{{"rating": "{r}"}}', *ok[1:]]  # a string rating: bad field
    return ok


def planted_ratings(uid: int) -> list[int | None]:
    """What each planted reply should read as (None: no valid rating)."""
    out: list[int | None] = []
    for reply in planted(uid):
        try:
            obj = json.loads(reply.strip().removeprefix("```json").removesuffix("```"))
        except json.JSONDecodeError:
            out.append(None)
            continue
        out.append(obj["rating"] if isinstance(obj["rating"], int) else None)
    return out


class Fake:
    """Answers Figure 3 prompts with "aspect <uid>" (rows 2 and 4: no usable condition) and Figure 4 prompts with
    planted(uid), each row's replies handed out one by one. Rows are found by their sentence and condition."""

    def __init__(self, rows: tuple[Example, ...]) -> None:
        self.rows = {(e.sentence1, e.condition): int(e.id) for e in rows}
        self.rows |= {(e.sentence1, f"aspect {e.id}"): int(e.id) for e in rows}
        self.given: Counter[int] = Counter()

    def uid(self, prompt: str) -> int:
        s1 = prompt.rsplit("Sentence1: ", 1)[1].split("\n", 1)[0]
        condition = prompt.rsplit("Condition: ", 1)[1].split("\n", 1)[0]
        return self.rows[(s1, condition)]

    def __call__(self, prompt: str) -> str:
        uid = self.uid(prompt)
        if prompt.startswith(CONDITION_PROMPT):
            if uid == 2:
                return "I would change it to aspect 2."
            if uid == 4:
                return '{"improved_condition": "", "justification": "unchanged"}'
            return json.dumps({"improved_condition": f"aspect {uid}", "justification": ""})
        assert prompt.startswith(RATING_PROMPT), prompt[:80]
        self.given[uid] += 1
        return planted(uid)[self.given[uid] - 1]


def argv(csts_dir: Path, tmp_path: Path, server: FakeServer, *extra: str) -> list[str]:
    return [
        "reannotate", "--backend", "openai", "--model", "annotator", "--base-url", server.openai_url,
        "--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "results"), "--no-progress",
        "--out", str(tmp_path / "out" / "labels.tsv"), *extra,
    ]  # fmt: skip


@pytest.fixture
def validation(csts_dir: Path) -> tuple[Example, ...]:
    return load_dataset("csts", "validation", data_dir=csts_dir).examples


def test_reannotation_with_rewritten_conditions_end_to_end(
    csts_dir: Path, tmp_path: Path, validation: tuple[Example, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    rows = validation
    fake = Fake(rows)
    extra = ["--rewrite-conditions", "--repeats", str(REPEATS), "--temperature", "0.7", "--model", "annotatör"]
    with FakeServer(answer=fake) as server:
        assert main(argv(csts_dir, tmp_path, server, *extra)) == 0
        sent = len(server.calls)
        out = capsys.readouterr().out
        # The same command again (--overwrite: the files exist): every answer from the cache, the same files.
        first = (tmp_path / "out" / "labels.tsv").read_bytes()
        assert main(argv(csts_dir, tmp_path, server, *extra, "--overwrite")) == 0
        assert len(server.calls) == sent == len(rows) * (1 + REPEATS)
        assert (tmp_path / "out" / "labels.tsv").read_bytes() == first
    # Every repeat was asked anew (not answered from the cache by the first).
    assert all(n == REPEATS for n in fake.given.values()) and len(fake.given) == len(rows)
    assert {c.body.get("temperature") for c in server.calls} == {0.7, 0.0}  # ratings 0.7; conditions greedy

    lines = (tmp_path / "out" / "labels.tsv").read_text().splitlines()
    assert lines[0] == "uid\treannotated-label\tcondition"
    written = {u: (int(label), cond) for u, label, cond in (x.split("\t") for x in lines[1:])}
    for e in rows:
        ratings = [r for r in planted_ratings(int(e.id)) if r is not None]
        label = math.floor(sum(ratings) / len(ratings) + 0.5) if ratings else -1
        condition = e.condition if e.id in ("2", "4") else f"aspect {e.id}"
        assert written[e.id] == (label, condition), e.id
    assert written["5"][0] == -1

    text = (tmp_path / "out" / "labels.agreement.json").read_text(encoding="utf-8")
    record = json.loads(text)
    assert text == json.dumps(record, indent=2, ensure_ascii=False) + "\n" and '"annotatör"' in text
    assert record["labelled"] == sum(label != -1 for label, _ in written.values())
    assert (record["model"], record["repeats"], record["temperature"]) == ("annotatör", REPEATS, 0.7)
    assert record["ratings"] | {"invalid_pct": None, "not_bare_json_pct": None} == {
        "replies": len(rows) * REPEATS, "json": len(rows) * REPEATS - 6, "embedded": 1, "invalid-json": 4,
        "bad-field": 1, "unencodable": 0, "echo": 0, "error": 0, "invalid_pct": None, "not_bare_json_pct": None,
    }  # fmt: skip
    assert record["ratings"]["invalid_pct"] == round(100 * 5 / (len(rows) * REPEATS), 2)
    assert record["conditions"]["invalid-json"] == 1 and record["conditions"]["bad-field"] == 1
    assert record["conditions"]["changed"] == len(rows) - 2
    assert record["conditions"]["kept_original_after_invalid_reply"] == 2  # rows 2 and 4
    # Alpha of the planted ratings, by the krippendorff package directly (alpha ignores the order within a row).
    matrix = np.array([[np.nan if r is None else r for r in planted_ratings(int(e.id))] for e in rows]).T
    for level in ("ordinal", "interval"):
        domain = [1, 2, 3, 4, 5] if level == "ordinal" else None
        want = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level, value_domain=domain)
        assert record[f"alpha_{level}"]["value"] == pytest.approx(want, abs=1e-6)
    assert record["kappa_vs_original"]["n"] == len(rows) - 1  # row 5 has no label
    assert record["kappa_vs_tu2024"]["n"] == 0  # 24 synthetic rows: not the official file, not matched by row
    assert "Krippendorff's alpha (repeats): ordinal" in out
    assert f"invalid {record['ratings']['invalid_pct']:.1f}% (invalid-json 4, bad-field 1, echo 0, embedded 1" in out

    written_replies = (tmp_path / "out" / "labels.replies.jsonl").read_text(encoding="utf-8")
    assert "Planté." in written_replies  # UTF-8 as the model wrote it, not \u escapes
    replies = [json.loads(x) for x in written_replies.splitlines()]
    assert len(replies) == len(rows) * (1 + REPEATS)
    assert sorted(r["reply"] for r in replies if r["step"] == "rating" and r["uid"] == "3")[0].startswith("The rating")

    # The labels file as a run's label set: its labels, its conditions, its hashes in config.json.
    with FakeServer() as server:
        run = ["--backend", "openai", "--model", "scorer", "--base-url", server.openai_url, "--no-progress"]
        run += ["--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "results"), "--run-id", "eval"]
        assert main([*run, "--labels", str(tmp_path / "out" / "labels.tsv")]) == 0
    config = json.loads((tmp_path / "results" / "eval" / "config.json").read_text())
    assert config["data_hashes"]["labels:labels.tsv"] == hashlib.sha256(first).hexdigest()
    assert config["data_hashes"]["conditions"] == record["conditions"]["conditions_sha256"]
    samples = [json.loads(x) for x in (tmp_path / "results" / "eval" / "samples.jsonl").read_text().splitlines()]
    assert {s["id"]: s["label"] for s in samples} == {u: float(v[0]) for u, v in written.items() if v[0] != -1}
    assert "aspect 0" in next(s["prompt"] for s in samples if s["id"] == "0")


def test_tu_labels_are_compared_on_an_official_sized_validation_split(tmp_path: Path) -> None:
    """Tu et al.'s file is matched by row position, so only a validation file of its 2,834 rows is compared with
    it; the pairs are the uids both label (Tu et al.'s -1 rows left out)."""
    from scipy.stats import spearmanr

    from harness.datasets.labels import load_reannotated
    from tests.conftest import write_synthetic_csts

    csts_dir = write_synthetic_csts(tmp_path / "csts", n_val=1417)  # 2,834 synthetic rows
    rows = load_dataset("csts", "validation", data_dir=csts_dir).examples[:40]
    with FakeServer(answer=Fake(rows)) as server:
        assert main(argv(csts_dir, tmp_path, server, "--limit", "40", "--repeats", str(REPEATS))) == 0
    record = json.loads((tmp_path / "out" / "labels.agreement.json").read_text())
    tu = load_reannotated()
    labels = {}
    for e in rows:
        ratings = [r for r in planted_ratings(int(e.id)) if r is not None]
        if ratings and tu[e.id] is not None:
            labels[e.id] = math.floor(sum(ratings) / len(ratings) + 0.5)
    want = spearmanr(list(labels.values()), [tu[u] for u in labels]).statistic
    assert record["spearman_vs_tu2024"]["n"] == len(labels)
    assert record["spearman_vs_tu2024"]["value"] == pytest.approx(want, abs=1e-6)


def test_a_small_validation_file_is_not_matched_to_tu_et_al(
    csts_dir: Path, tmp_path: Path, validation: tuple[Example, ...]
) -> None:
    with FakeServer(answer=Fake(validation)) as server:
        assert main(argv(csts_dir, tmp_path, server, "--repeats", str(REPEATS))) == 0
    record = json.loads((tmp_path / "out" / "labels.agreement.json").read_text())
    assert record["temperature"] == 0.0 and {c.body["temperature"] for c in server.calls} == {0.0}  # the default
    assert record["kappa_vs_tu2024"]["value"] is None
    assert record["kappa_vs_tu2024"]["note"].startswith(f"not the official validation file ({len(validation)} rows")
    assert "conditions" not in record
    assert (tmp_path / "out" / "labels.tsv").read_text().splitlines()[0] == "uid\treannotated-label"


def test_dry_run_counts_every_prompt_and_writes_nothing(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:
        extra = ["--rewrite-conditions", "--repeats", "2", "--limit", "5", "--dry-run"]
        assert main(argv(csts_dir, tmp_path, server, *extra)) == 0
    assert server.calls == []
    assert capsys.readouterr().out.startswith("dry run: 15 requests")  # 5 conditions + 2 x 5 ratings
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--repeats", "0"], "--repeats must be at least 1"),
        (["--temperature", "-1"], "--temperature must be at least 0"),
        (["--backend", "offline", "--model", "random"], "needs a language model that writes JSON"),
        (["--split", "dev"], "dev"),
        (["--max-tokens", "0"], "--max-tokens"),
        (["--out", "."], "exists and is not a regular file"),
    ],
)
def test_bad_input_is_one_line_and_nothing_sent_or_written(
    extra: list[str], message: str, csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    with FakeServer() as server:
        assert main(argv(csts_dir, tmp_path, server, *extra)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error:") and message in err, err
    assert server.calls == []
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_failed_requests_write_the_files_and_exit_3(
    csts_dir: Path, tmp_path: Path, validation: tuple[Example, ...]
) -> None:
    """Row 1's rating is refused (a 400): its label is -1, the rest are written, and the exit status says so."""
    fake = Fake(validation)
    with FakeServer(answer=fake, plan=lambda prompt, attempt: "400" if fake.uid(prompt) == 1 else "ok") as server:
        assert main(argv(csts_dir, tmp_path, server, "--limit", "4")) == 3
    labels = dict(line.split("\t") for line in (tmp_path / "out" / "labels.tsv").read_text().splitlines()[1:])
    assert labels == {"0": "1", "1": "-1", "2": "3", "3": "-1"}  # row 3: prose, invalid
    assert json.loads((tmp_path / "out" / "labels.agreement.json").read_text())["ratings"]["error"] == 1


def test_out_is_required_and_a_folder_in_a_sidecars_place_is_one_line(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:
        args = argv(csts_dir, tmp_path, server)
        assert main(args[: args.index("--out")]) == 2
        assert "the following arguments are required: --out" in capsys.readouterr().err
        (tmp_path / "out" / "labels.replies.jsonl").mkdir(parents=True)
        assert main(args) == 2
        assert server.calls == []
    sidecar = tmp_path / "out" / "labels.replies.jsonl"
    assert capsys.readouterr().err == f"error: a file beside --out {sidecar} exists and is not a regular file\n"


def test_batch_mode_gives_the_labels_of_one_by_one(
    csts_dir: Path, tmp_path: Path, validation: tuple[Example, ...]
) -> None:
    """--batch (OpenAI's batch API, tests/fake_batch_server.py): both steps as batches, every repeat its own item."""
    from tests.fake_batch_server import FakeBatchServer

    extra = ["--rewrite-conditions", "--repeats", "2", "--limit", "8", "--backend", "openai", "--model", "gpt-4o-mini"]
    files = {}
    for mode in ("one", "batch"):
        with FakeBatchServer(answer=Fake(validation)) as server:
            batch = ["--batch", "--batch-poll", "0.05"] if mode == "batch" else []
            assert main(argv(csts_dir, tmp_path / mode, server, *extra, *batch)) == 0
        files[mode] = (tmp_path / mode / "out" / "labels.tsv").read_text()
        if mode == "batch":
            assert server.calls == [] and sum(server.submitted.values()) == 8 + 2 * 8
    assert files["batch"] == files["one"]
    assert files["one"].count("\taspect ") == 6  # rows 2 and 4 keep their conditions


@requires_smollm2
@pytest.mark.slow  # the real SmolLM2 on CPU
def test_smollm2_replies_are_read_and_counted_as_they_are(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real model (SmolLM2-135M through hf, CPU) on 2 synthetic rows: whatever it writes, each reply's status is
    what the json module alone says of it, and the counts printed are those of the replies file.
    tests/bench/bench_reannotate_smollm2.py measures its invalid rate on more rows."""
    argv = ["reannotate", "--model", MODEL, "--chat", "--data-dir", str(csts_dir), "--limit", "2", "--no-cache"]
    argv += ["--max-tokens", "64"]  # bounds the CPU time; a cut reply is counted as what it is
    argv += ["--no-progress", "--out", str(tmp_path / "labels.tsv"), "--results-dir", str(tmp_path)]
    assert main(argv) == 0
    replies = [json.loads(x) for x in (tmp_path / "labels.replies.jsonl").read_text().splitlines()]
    assert len(replies) == 2
    for r in replies:
        try:
            whole = json.loads(r["reply"].strip())
        except json.JSONDecodeError:
            whole = None
        rating = whole.get("rating") if isinstance(whole, dict) else None
        if type(rating) in (int, float) and rating in (1, 2, 3, 4, 5):  # type() is: JSON true is no rating
            assert (r["status"], r["value"]) == ("json", rating)
        else:
            assert r["status"] != "json" and r["value"] in (None, 1, 2, 3, 4, 5)
    record = json.loads((tmp_path / "labels.agreement.json").read_text())
    assert record["ratings"]["json"] == sum(r["status"] == "json" for r in replies)
    assert "rating replies: 2, invalid" in capsys.readouterr().out


class Hostile(Fake):
    """Rating replies no JSON reader should choke on (issue 30), by row: nested 1,200 deep, 300 KB of braces, an
    object whose value nests 1,200 deep; every fourth row a plain rating of 3."""

    def __call__(self, prompt: str) -> str:
        return ["[" * 1200, "{" * 300_000, '{"rating": ' + "[" * 1200, '{"rating": 3, "justification": "ok"}'][
            self.uid(prompt) % 4
        ]


def test_hostile_replies_are_counted_invalid_and_the_rerun_buys_none(
    csts_dir: Path, tmp_path: Path, validation: tuple[Example, ...]
) -> None:
    with FakeServer(answer=Hostile(validation)) as server:
        assert main(argv(csts_dir, tmp_path, server, "--repeats", "1")) == 0
        bought, first = len(server.answered), (tmp_path / "out" / "labels.tsv").read_bytes()
        assert main(argv(csts_dir, tmp_path, server, "--repeats", "1", "--overwrite")) == 0  # replies from the cache
    assert bought == len(validation) and len(server.answered) == bought  # the rerun re-requested 0 answers
    assert (tmp_path / "out" / "labels.tsv").read_bytes() == first
    plain = sum(int(e.id) % 4 == 3 for e in validation)
    record = json.loads((tmp_path / "out" / "labels.agreement.json").read_text())
    assert (record["ratings"]["json"], record["ratings"]["invalid-json"]) == (plain, len(validation) - plain)
    labels = dict(line.split("\t")[:2] for line in first.decode().splitlines()[1:])
    assert labels == {e.id: "3" if int(e.id) % 4 == 3 else "-1" for e in validation}
