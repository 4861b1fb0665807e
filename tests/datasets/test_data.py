"""Loading and validating C-STS and STS-B: every malformed input is handled on purpose."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.datasets import DATASETS
from harness.datasets import load as loaders
from harness.datasets.choose import load_dataset
from harness.datasets.description import LoadCache
from harness.types import Example, HarnessError
from tests.conftest import csv_bytes, synthetic_rows


def parse_csts_csv(data: bytes, source: str, split: str) -> tuple[Example, ...]:
    """The C-STS parser on its scale from the table (DATASETS' line)."""
    return loaders.parse_csts_csv(data, source, split, DATASETS["csts"].label_range)


def parse_stsb_tsv(data: bytes, source: str) -> tuple[Example, ...]:
    return loaders.parse_stsb_tsv(data, source, DATASETS["stsb"].label_range)


def test_loads_a_directory_with_train_as_pool(csts_dir: Path) -> None:
    ds = load_dataset("csts", "validation", data_dir=csts_dir)
    assert len(ds.examples) == 24 and len(ds.pool) == 80
    assert ds.label_range == (1.0, 5.0)
    assert set(ds.file_hashes) == {"csts_train.csv", "csts_validation.csv"}


def test_loads_the_encrypted_archive(csts_archive: tuple[Path, Path], csts_dir: Path) -> None:
    archive, pw = csts_archive
    from_archive = load_dataset("csts", "validation", archive=archive, password_file=pw)
    assert from_archive.examples == load_dataset("csts", "validation", data_dir=csts_dir).examples


def test_data_dir_from_environment(csts_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CSTS_DATA_DIR", str(csts_dir))
    assert len(load_dataset("csts", "validation").examples) == 24


def test_no_data_tells_how_to_obtain_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CSTS_DATA_DIR", raising=False)
    with pytest.raises(HarnessError, match="request the C-STS archive"):
        load_dataset("csts", "validation")


def test_missing_data_dir(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="does not exist"):
        load_dataset("csts", "validation", data_dir=tmp_path / "nowhere")


def test_missing_split_file(csts_dir: Path) -> None:
    (csts_dir / "csts_validation.csv").unlink()
    with pytest.raises(HarnessError, match="has no csts_validation.csv"):
        load_dataset("csts", "validation", data_dir=csts_dir)


def test_renamed_column_names_what_is_missing() -> None:
    data = b"sentence1,sentence2,cond,label\na,b,c,3\n"
    with pytest.raises(HarnessError, match="missing column\\(s\\) condition; found sentence1, sentence2, cond, label"):
        parse_csts_csv(data, "x.csv", "validation")


def test_empty_file() -> None:
    with pytest.raises(HarnessError, match="x.csv is empty"):
        parse_csts_csv(b"", "x.csv", "validation")


def test_header_only_file() -> None:
    with pytest.raises(HarnessError, match="no rows"):
        parse_csts_csv(b"sentence1,sentence2,condition,label\n", "x.csv", "validation")


def test_non_numeric_label_names_the_row() -> None:
    data = b"sentence1,sentence2,condition,label\na,b,c,3\nd,e,f,high\n"
    with pytest.raises(HarnessError, match="x.csv row 3: label 'high' is not a number"):
        parse_csts_csv(data, "x.csv", "validation")


def test_missing_condition_is_empty_text() -> None:
    data = b"sentence1,sentence2,condition,label\na,b,,3\nc,d,e,4\n"
    ex = parse_csts_csv(data, "x.csv", "validation")
    assert ex[0].condition == "" and ex[1].condition == "e"


def test_text_is_kept_verbatim() -> None:
    data = b'sentence1,sentence2,condition,label\n"NA ","  null",None,2\n'
    ex = parse_csts_csv(data, "x.csv", "validation")[0]
    assert (ex.sentence1, ex.sentence2, ex.condition) == ("NA ", "  null", "None")


def test_test_split_labels_are_hidden() -> None:
    ex = parse_csts_csv(csv_bytes(synthetic_rows(3, 5, hidden=True)), "t.csv", "test")
    assert all(e.label is None for e in ex)


@pytest.mark.parametrize(
    ("label", "split", "message"),
    [
        ("17", "validation", "label 17 is outside the 1-5 scale"),
        ("-1", "validation", "label -1 is outside the 1-5 scale (-1 means hidden only in the test split)"),
        ("0", "train", "label 0 is outside the 1-5 scale"),
        ("5.5", "test", "label 5.5 is outside the 1-5 scale"),
    ],
)
def test_csts_label_off_the_scale_is_an_error(label: str, split: str, message: str) -> None:
    with pytest.raises(HarnessError, match=r"x.csv row 2: " + message.replace("(", r"\(").replace(")", r"\)")):
        parse_csts_csv(f"sentence1,sentence2,condition,label\na,b,c,{label}\n".encode(), "x.csv", split)


def test_csts_scale_ends_and_hidden_test_labels_are_kept() -> None:
    rows = b"sentence1,sentence2,condition,label\na,b,c,1\na,b,d,5.0\n"
    assert [e.label for e in parse_csts_csv(rows, "x.csv", "validation")] == [1.0, 5.0]
    hidden = parse_csts_csv(b"sentence1,sentence2,condition,label\na,b,c,-1\n", "x.csv", "test")
    assert hidden[0].label is None


def test_stsb_label_off_the_scale_is_an_error() -> None:
    assert parse_stsb_tsv(b"sentence1\tsentence2\tscore\na\tb\t0.0\n", "x.tsv")[0].label == 0.0
    with pytest.raises(HarnessError, match="x.tsv row 3: label 5.2 is outside the 0-5 scale"):
        parse_stsb_tsv(b"sentence1\tsentence2\tscore\na\tb\t5\nc\td\t5.2\n", "x.tsv")


def test_cell_over_the_csv_field_limit_is_one_line() -> None:
    """csv.field_size_limit() is 131,072: a longer cell (usually an unclosed quote) is named, not a traceback."""
    rows = b'sentence1,sentence2,condition,label\na,b,c,1\n"' + b"x" * 140_000 + b'",b,c,2\n'
    with pytest.raises(HarnessError, match=r"x.csv line \d+: field larger than field limit .*unclosed quote"):
        parse_csts_csv(rows, "x.csv", "validation")
    header = b'"sentence1,sentence2,condition,label\n' + b"x" * 140_000 + b"\n"  # the quote opens in the header
    with pytest.raises(HarnessError, match=r"^x.csv line 1: field larger than field limit .*unclosed quote\?\)$"):
        parse_csts_csv(header, "x.csv", "validation")


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_split_file_that_is_not_a_regular_file_fails_at_once(csts_dir: Path, kind: str) -> None:
    """A FIFO would block open() forever; a directory is named as such."""
    target = csts_dir / "csts_validation.csv"
    target.unlink()
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    expected = r"a FIFO \(named pipe\)" if kind == "fifo" else "a directory"
    with pytest.raises(HarnessError, match=f"csts_validation.csv is {expected}, not a file"):
        load_dataset("csts", "validation", data_dir=csts_dir)


def test_row_ids_are_file_positions() -> None:
    ex = parse_csts_csv(csv_bytes(synthetic_rows(2, 5)), "x.csv", "validation")
    assert [e.id for e in ex] == ["0", "1", "2", "3"]


def test_bundled_stsb_validation_is_glue_dev() -> None:
    ds = load_dataset("stsb", "validation")
    assert (len(ds.examples), len(ds.pool)) == (1500, 5749)
    assert ds.label_range == (0.0, 5.0)
    assert ds.examples[0].label == 5.0 and ds.examples[0].condition == ""


def test_stsb_keeps_quotes_literal() -> None:
    pool = load_dataset("stsb", "validation").pool
    assert any('"' in e.sentence2 for e in pool)


def test_unknown_dataset_and_split() -> None:
    with pytest.raises(HarnessError, match="unknown dataset 'sick'"):
        load_dataset("sick", "validation")
    with pytest.raises(HarnessError, match="stsb has no split 'test'"):
        load_dataset("stsb", "test")


def test_a_load_cache_keeps_what_it_read_and_nothing_that_failed(
    tmp_path: Path, csts_archive: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.datasets import load

    archive, password = csts_archive
    decrypted: list[Path] = []
    real = load.decrypt_release

    def counting(archive: Path, password: str, source: str) -> dict[str, bytes]:
        decrypted.append(archive)
        return real(archive, password, source)

    monkeypatch.setattr(load, "decrypt_release", counting)
    cache = LoadCache()
    first = load_dataset("csts", "validation", archive=archive, password_file=password, cache=cache)
    assert load_dataset("csts", "validation", archive=archive, password_file=password, cache=cache) is first
    test = load_dataset("csts", "test", archive=archive, password_file=password, cache=cache)
    assert test.pool is first.pool and len(decrypted) == 1  # one decryption, the train split parsed once
    assert load_dataset("csts", "validation", archive=archive, password_file=password) == first  # no cache: reads
    wrong = tmp_path / "WRONG"
    wrong.write_text("not it\n")
    for _ in range(2):  # a failure is not kept: the next load fails the same way
        with pytest.raises(HarnessError, match="wrong password"):
            load_dataset("csts", "validation", archive=archive, password_file=wrong, cache=cache)
    assert len(decrypted) == 4


# --- rows whose field count is not the header's (issue 20, class 4) ----------------------------------------------


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (b"a,b,The cond.,3,5", "x.csv row 3: 5 fields, the header has 4 \\(an unquoted comma in a text, or a decimal"),
        (b"a,b,c,3," + b",".join([b"9"] * 9_996), "x.csv row 3: 10000 fields, the header has 4$"),
        (b"a,b,3", "x.csv row 3: 3 fields, the header has 4 \\(too few fields\\)"),
        (b"a", "x.csv row 3: 1 fields, the header has 4 \\(too few fields\\)"),
    ],
)
def test_a_row_with_the_wrong_field_count_is_one_error_naming_it(row: bytes, message: str) -> None:
    data = b"sentence1,sentence2,condition,label\nok,fine,c,2\n" + row + b"\n"
    with pytest.raises(HarnessError, match=message):
        parse_csts_csv(data, "x.csv", "validation")


def test_a_quoted_comma_is_text_and_an_empty_condition_is_kept() -> None:
    data = b'sentence1,sentence2,condition,label\n"a, b",c,"The cond., twice",3.5\nx,y,,2\n'
    first, second = parse_csts_csv(data, "x.csv", "validation")
    assert (first.sentence1, first.condition, first.label) == ("a, b", "The cond., twice", 3.5)
    assert (second.condition, second.label) == ("", 2.0)


@pytest.mark.parametrize("blank", [" ", "\t", "\u00a0\u3000", "  \u2003"])
def test_whitespace_only_sentences_are_refused(blank: str) -> None:
    for row in (f"{blank},b,c,3", f"a,{blank},c,3"):
        data = f"sentence1,sentence2,condition,label\n{row}\n".encode()
        with pytest.raises(HarnessError, match="x.csv row 2: empty sentence"):
            parse_csts_csv(data, "x.csv", "validation")
    stsb = f"sentence1\tsentence2\tscore\na\t{blank.replace(chr(9), ' ')}\t3\n".encode()
    with pytest.raises(HarnessError, match="dev.tsv row 2: empty sentence"):
        parse_stsb_tsv(stsb, "dev.tsv")


def test_stsb_rows_with_the_wrong_field_count_are_refused() -> None:
    with pytest.raises(HarnessError, match="dev.tsv row 3: 4 fields, the header has 3 \\(a tab in a text\\?\\)"):
        parse_stsb_tsv(b"sentence1\tsentence2\tscore\na\tb\t3\na\tb\t3\t5\n", "dev.tsv")
    with pytest.raises(HarnessError, match="dev.tsv row 2: 2 fields, the header has 3"):
        parse_stsb_tsv(b"sentence1\tsentence2\tscore\na\tb\n", "dev.tsv")


def test_a_byte_order_mark_is_stripped() -> None:
    plain = b"sentence1,sentence2,condition,label\na,b,c,3\n"
    assert parse_csts_csv(b"\xef\xbb\xbf" + plain, "x.csv", "validation") == parse_csts_csv(
        plain, "x.csv", "validation"
    )
    tsv = b"sentence1\tsentence2\tscore\na\tb\t3\n"
    assert parse_stsb_tsv(b"\xef\xbb\xbf" + tsv, "t.tsv") == parse_stsb_tsv(tsv, "t.tsv")
    with pytest.raises(HarnessError, match="x.csv is not UTF-8 text"):
        parse_csts_csv(b"\xff\xfe" + plain, "x.csv", "validation")


def test_the_split_is_in_every_load_cache_key(csts_dir: Path) -> None:
    cache = LoadCache()
    val = load_dataset("csts", "validation", data_dir=csts_dir, cache=cache)
    test = load_dataset("csts", "test", data_dir=csts_dir, cache=cache)
    train = load_dataset("csts", "train", data_dir=csts_dir, cache=cache)
    assert (val.split, test.split, train.split) == ("validation", "test", "train")
    assert val.examples != test.examples != train.examples and train.examples == val.pool
    assert (len(val.examples), len(test.examples), len(train.examples)) == (24, 20, 80)
    assert all(e.label is None for e in test.examples) and None not in {e.label for e in val.examples}
    assert load_dataset("csts", "validation", data_dir=csts_dir, cache=cache) is val
    stsb = load_dataset("stsb", "validation", cache=cache), load_dataset("stsb", "train", cache=cache)
    assert [len(d.examples) for d in stsb] == [1500, 5749]


# --- precedence: a flag beats its environment variable, which beats the default ----------------------------------


def test_data_dir_flag_beats_csts_data_dir(csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import write_synthetic_csts

    other = write_synthetic_csts(tmp_path / "other", n_val=5)
    monkeypatch.setenv("CSTS_DATA_DIR", str(other))
    assert len(load_dataset("csts", "validation", data_dir=csts_dir).examples) == 24
    assert len(load_dataset("csts", "validation").examples) == 10  # the variable, when no flag is given


def test_archive_beats_csts_data_dir(
    csts_archive: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, pw = csts_archive
    monkeypatch.setenv("CSTS_DATA_DIR", str(tmp_path / "nowhere"))
    assert len(load_dataset("csts", "validation", archive=archive, password_file=pw).examples) == 24


def test_password_file_beats_csts_password(csts_archive: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    archive, pw = csts_archive
    monkeypatch.setenv("CSTS_PASSWORD", "not it")
    assert len(load_dataset("csts", "validation", archive=archive, password_file=pw).examples) == 24
    with pytest.raises(HarnessError, match="wrong password"):
        load_dataset("csts", "validation", archive=archive)  # the variable, when no flag is given
    monkeypatch.setenv("CSTS_PASSWORD", "synthetic-secret")
    assert len(load_dataset("csts", "validation", archive=archive).examples) == 24
    monkeypatch.delenv("CSTS_PASSWORD")
    with pytest.raises(HarnessError, match="--archive needs --password-file"):
        load_dataset("csts", "validation", archive=archive)
