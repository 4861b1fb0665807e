"""paper_settings.differences and matched, setting by setting (the report-level cases are test_comparability.py)."""

from __future__ import annotations

import pytest

from harness.reporting.paper_settings import differences, matched, paper_of, paper_template

D11, TU = "Deshpande et al. 2023, Table 11", "Tu et al. 2024, Table 4"
GPT = {"template": "long", "shot_sampler": "reference", "shot_seed": 42, "model": "gpt-4-0314", "max_tokens": 20}
T5 = GPT | {"template": "t5-long", "model": "google/flan-t5-xl", "truncate_input": 512}
# Tu et al. name gpt-3.5-turbo-1106 (§4.1) and gpt-3.5-turbo-0125 (Table 8); they state no protocol of their own
GPT35 = "gpt-3.5-turbo-1106 or gpt-3.5-turbo-0125"
BOTH = GPT35 + " (the paper names both: either accepted)"
ASSUMED = ", Deshpande et al.'s token budget, temperature and parse assumed (Tu et al. state none)"


@pytest.mark.parametrize(
    ("source", "model", "shots", "variant", "run", "why"),
    [
        (D11, "GPT-4", 4, "sentences", GPT, []),
        (D11, "GPT-4", 4, "sentences", GPT | {"max_tokens": 5}, []),
        (
            D11,
            "GPT-4",
            4,
            "sentences",
            GPT | {"max_tokens": 4},
            ["max_tokens=4 (paper: 20; the released code's GPT call: 5)"],
        ),
        (
            D11,
            "GPT-4",
            4,
            "sentences",
            GPT | {"max_tokens": 21},
            ["max_tokens=21 (paper: 20; the released code's GPT call: 5)"],
        ),
        (D11, "GPT-4", 0, "sentences", GPT | {"shot_sampler": "seeded", "shot_seed": 0}, []),  # k=0: no shots
        (
            D11,
            "GPT-4",
            2,
            "sentences",
            GPT | {"shot_sampler": "seeded"},
            ["shot_sampler=seeded (paper: reference, seed 42)"],
        ),
        (D11, "GPT-4", 1, "sentences", GPT | {"shot_seed": 41}, ["shot_seed=41 (paper: 42)"]),
        (D11, "GPT-4", 4, "sentences", GPT | {"template": "t5-long"}, ["template=t5-long (paper: long)"]),
        (D11, "GPT-4", 4, "sentences", GPT | {"model": "GPT-4-0314"}, []),  # ids are case-insensitive
        (
            D11,
            "GPT-4",
            4,
            "sentences",
            GPT | {"served_model": "gpt-4-0314, gpt-4-0613"},
            ["served_model=gpt-4-0613 (paper: gpt-4-0314)"],
        ),
        (D11, "GPT-4", 4, "sentences", GPT | {"model": "gpt-4", "served_model": "gpt-4-0314"}, []),
        (
            D11,
            "ChatGPT-3.5",
            4,
            "sentences",
            GPT | {"model": "gpt-3.5-turbo-1106"},
            ["model=gpt-3.5-turbo-1106 (paper: gpt-3.5-turbo-0301)"],
        ),
        (D11, "Flan-T5-XL", 4, "sentences", T5, []),
        (D11, "Flan-T5-XL", 4, "sentences", T5 | {"max_tokens": 5}, ["max_tokens=5 (paper: 20)"]),
        (
            D11,
            "Flan-T5-XL",
            4,
            "sentences",
            T5 | {"truncate_input": 256},
            ["truncate_input=256 (paper: 512, the reference code's T5 tokenizer)"],
        ),
        (TU, "GPT-3.5", 0, "sentences", GPT | {"template": "tu-base", "model": "gpt-3.5-turbo-1106"}, []),
        (
            TU,
            "GPT-3.5",
            0,
            "qa-answers",
            GPT | {"template": "qa", "model": "gpt-3.5-turbo-1106", "answer_model": "GPT-3.5-turbo-1106"},
            [],
        ),
        (
            TU,
            "GPT-4",
            0,
            "qa-answers",
            GPT | {"template": "qa", "model": "gpt-4-0125-preview", "answer_model": "gpt-3.5-turbo"},
            ["answer_model=gpt-3.5-turbo (paper: gpt-3.5-turbo-1106 or gpt-3.5-turbo-0125)"],
        ),
        (
            TU,
            "GPT-4",
            0,
            "sentences",
            GPT | {"template": "tu-base", "model": "gpt-4-0125-preview", "answer_model": "gpt-4"},
            [],
        ),
    ],
)
def test_differences(source: str, model: str, shots: int, variant: str, run: dict, why: list[str]) -> None:
    assert differences(source, model, "long", shots, variant, run) == why


def test_nothing_recorded_is_taken_as_the_papers() -> None:
    assert differences(D11, "GPT-4", "long", 4, "sentences", {}) == []
    assert differences(D11, "Flan-T5-XL", "long", 4, "sentences", {}) == [
        "truncate_input=none (paper: 512, the reference code's T5 tokenizer)"
    ]


def test_matched_lists_what_a_comparable_run_shares() -> None:
    assert matched(D11, "Flan-T5-XL", "short", 2, "sentences") == (
        "comparable: every setting as published (template t5-short, reference shots, seed 42, input cut at 512 tokens)"
    )
    assert (
        matched(D11, "GPT-4", "none", 0, "sentences")
        == "comparable: every setting as published (template none, gpt-4-0314)"
    )
    assert matched(TU, "GPT-3.5", "short", 0, "qa-answers") == (
        f"comparable: every setting as published (template qa, {BOTH}, {GPT35}'s answers"
        f" (the paper names both: either accepted){ASSUMED})"
    )
    assert (paper_of(" Tu et al. 2024 , Table 4"), paper_template(TU, "GPT-4", "short", "qa-embed")) == (
        "Tu et al. 2024",
        "qa",
    )


@pytest.mark.parametrize(
    ("config", "served", "want"),
    [
        ({"shot_sampler": "reference"}, None, {"shot_seed": 42, "truncate_input": None, "answers": None}),
        ({"seed": 3}, float("nan"), {"shot_seed": 3, "served_model": None}),  # seeded: --seed; pandas' NaN: none
        ({"shot_sampler": "reference", "settings": {"shot_seed": 7}}, "x", {"shot_seed": 7, "served_model": "x"}),
        ({"backend_params": {"truncate_input": 512}}, None, {"truncate_input": 512}),
        (
            {"backend_params": None, "settings": {"truncate_input": "paper"}, "model": "google/flan-ul2"},
            None,
            {"truncate_input": 512},
        ),
        ({"backend_params": None, "settings": {"truncate_input": "bad"}}, None, {"truncate_input": None}),
        ({"settings": {"answers": "a.jsonl"}}, None, {"answers": "a.jsonl", "model": "gpt-4"}),
    ],
)
def test_run_settings_reads_what_differences_needs(tmp_path: object, config: dict, served: object, want: dict) -> None:
    from pathlib import Path

    from harness.reporting.paper_settings import run_settings
    from harness.results.read import load_run
    from tests.synthetic_runs import make_run

    run = load_run(make_run(Path(str(tmp_path)), "r", "gpt-4", n=4, config=config))
    got = run_settings(run, served)
    assert {k: got[k] for k in want} == want


def test_a_published_setting_without_a_rule_is_judged_against_its_default() -> None:
    """`published` (run_settings: every PUBLISHED setting JUDGED does not name, as (ours, the declared default))."""
    run = GPT | {
        "published": {
            "subset_seed": (3, 0),
            "embed.inputs": ("instruct", "instruct"),
            "api.anthropic_greedy": (None, False),
        }
    }
    assert differences(D11, "GPT-4", "long", 4, "sentences", run) == [
        "subset_seed=3 (paper: 0)",
        "api.anthropic_greedy=none (paper: False)",
    ]
    assert differences(D11, "GPT-4", "long", 4, "sentences", GPT | {"published": "not a mapping"}) == []


def test_judged_names_published_settings_and_the_rest_are_compared_with_their_defaults() -> None:
    from harness.config.option import Affects, marked, name_of
    from harness.config.settings import RunConfig
    from harness.reporting.paper_settings import JUDGED, published_settings

    published = {name_of(d) for d in marked(RunConfig, Affects.PUBLISHED)}
    assert set(JUDGED) <= published and {"model", "template", "embed.ffn", "api.reasoning"} <= set(JUDGED)
    got = published_settings({"subset_seed": 3, "embed": {"ffn_dim": 256}})
    assert set(got) == published - set(JUDGED)
    assert got["subset_seed"] == (3, 0) and got["embed.ffn_dim"] == (256, 512) and got["embed.inputs"][0] == "instruct"


def test_matched_at_one_shot_and_for_tus_base_prompt() -> None:
    assert matched(D11, "GPT-4", "none", 1, "sentences") == (
        "comparable: every setting as published (template none, reference shots, seed 42, gpt-4-0314)"
    )
    assert matched(TU, "GPT-3.5", "short", 0, "sentences") == (
        f"comparable: every setting as published (template tu-base, {BOTH}{ASSUMED})"
    )
