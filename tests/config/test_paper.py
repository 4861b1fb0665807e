"""harness/config/paper.py: the reference code's model families (run_sts_fewshot.py get_tokenizer_type), the
layout and the truncation `paper` asks for."""

from __future__ import annotations

import pytest

from harness.config.paper import paper_template, t5_family, truncation
from harness.types import HarnessError


def test_paper_is_512_for_the_t5_family_only() -> None:
    # run_sts_fewshot.py get_tokenizer_type: "t5", "t0", "tk-", "ul2" in the name -> the T5 tokenizer type
    family = ["google/flan-t5-xl", "google/flan-ul2", "allenai/tk-instruct-3b-def", "bigscience/T0pp"]
    assert [t5_family(m) for m in [*family, "gpt-4-0314", "meta-llama/Llama-3.1-8B"]] == [True] * 4 + [False] * 2
    assert [truncation("paper", m) for m in ("google/flan-ul2", "gpt-4-0314")] == [512, None]
    assert (truncation("300", "gpt-4"), truncation(None, "google/flan-t5-xl")) == (300, None)
    assert [paper_template(m, "long") for m in ("google/flan-t5-small", "gpt-3.5-turbo-0301")] == ["t5-long", "long"]
    with pytest.raises(HarnessError, match="neither 'paper' nor a positive integer"):
        truncation("0", "google/flan-t5-xl")
    with pytest.raises(HarnessError, match="neither 'paper' nor a positive integer"):
        truncation("12a", "gpt-4")
    assert truncation("1", "gpt-4") == 1
