"""Token counts: OpenAI models counted by tiktoken from the shipped encoding files, offline; others estimated."""

from __future__ import annotations

import gzip
import hashlib
import math
from pathlib import Path

import pytest

from harness.prompting import tokens
from harness.prompting.tokens import (
    CHARS_PER_TOKEN,
    ENCODINGS_DIR,
    SHA256,
    _ranks,
    count_tokens,
    counter,
    encoding,
    encoding_for,
)

TEXTS = [
    "Sentence 1: A man is playing a guitar. Sentence 2: A woman slices an onion. Output:",
    "On a scale between 1 and 5, how similar are the following two sentences with respect to the condition?",
    "Ünïcödé, emoji 🎸, numbers 12345.678 and  double  spaces\n\nnew lines\tand tabs <|endoftext|>",
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_shipped_encodings_are_tiktokens_own(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the encoding the way tiktoken does (its constructor, its URL, its pinned hash), fed our file through
    tiktoken's cache directory, and compare it with ours: same split pattern, specials and token ids."""
    import tiktoken_ext.openai_public as public

    data = gzip.decompress((ENCODINGS_DIR / f"{name}.tiktoken.gz").read_bytes())
    assert hashlib.sha256(data).hexdigest() == SHA256[name]
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    spec = getattr(public, name)()
    assert _ranks(name) == spec["mergeable_ranks"]  # our reader of the file is tiktoken's, token for token
    ours = encoding(name)
    assert ours._pat_str == spec["pat_str"] and ours._special_tokens == spec["special_tokens"]
    reference = __import__("tiktoken").Encoding(**spec)
    for text in TEXTS:
        assert ours.encode(text, disallowed_special=()) == reference.encode(text, disallowed_special=())


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo-0301", "cl100k_base"),
        ("gpt-4o", "o200k_base"),
        ("o3-mini", "o200k_base"),
    ],
)
def test_openai_models_get_their_encoding_without_any_download(
    model: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: tiktoken itself would have to download
    encoding.cache_clear()
    total, method = count_tokens(TEXTS, model)
    assert method == f"tiktoken {name}" and encoding_for(model).name == name
    assert total == sum(len(encoding(name).encode(t, disallowed_special=())) for t in TEXTS)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "Qwen/Qwen2.5-7B-Instruct", "my-model"])
def test_other_models_get_the_high_side_estimate(model: str) -> None:
    total, method = count_tokens(TEXTS, model)
    assert total == sum(math.ceil(len(t) / CHARS_PER_TOKEN) for t in TEXTS)
    assert method.startswith("estimate (3 characters per token")


def test_the_estimate_is_on_the_high_side_of_tiktoken_on_the_bundled_prompts() -> None:
    """The calibration the estimate rests on: on this package's prompts it never counts fewer than cl100k."""
    from harness.config.settings import RunConfig
    from harness.runner import prepare

    enc = encoding("cl100k_base")
    for instr in ("none", "short", "long"):
        for shots in (0, 4, 8):
            prep = prepare(RunConfig(model="overlap", dataset="stsb", instr=instr, shots=shots, limit=100))
            texts = [r.prompt for r in prep.requests]
            estimate, _ = count_tokens(texts, "some-open-model")
            assert estimate >= sum(len(enc.encode(t)) for t in texts), (instr, shots)


def test_overhead_is_added_per_request() -> None:
    count, method = counter("gpt-4o", overhead=7)
    assert count(TEXTS[0]) == len(encoding("o200k_base").encode(TEXTS[0])) + 7 and "+7 per request" in method


def test_a_corrupted_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "cl100k_base.tiktoken.gz"
    bad.write_bytes(gzip.compress(b"IQ== 0\n"))
    monkeypatch.setattr(tokens, "ENCODINGS_DIR", tmp_path)
    with pytest.raises(ValueError, match="sha256"):
        tokens._ranks("cl100k_base")
