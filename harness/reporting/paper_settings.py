"""The settings behind each published number that move it, beyond the protocol (reporting/published.py): the prompt
layout, the shot stream, the model snapshot (as requested and as served), who wrote the QA answers and the
input truncation. `differences` names each one a run does not share with the paper, with the paper's value;
`uncertain` each one where the paper's own value is not known (Flan-UL2's tokenizer limit).

Which settings are judged comes from their declarations: every setting marked PUBLISHED (harness/config/option.py
`Affects`) is judged here, by published.py's protocol, or by the published row it is matched with (JUDGED says
which); any other PUBLISHED setting, a new one included, is judged against its declared default, the harness's
paper protocol. A template named as a bundled one but holding other text is the user's own (results/read.py
`own_template`), never the paper's.

docs/comparability.md is the table of these settings with their pages in the papers.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.config.keys import recorded
from harness.config.option import Affects, name_of
from harness.config.paper import T5_MAX_INPUT, truncation
from harness.results.read import Run, setting
from harness.types import HarnessError

DESHPANDE, TU = "Deshpande et al. 2023", "Tu et al. 2024"
CHAT_MODELS = ("GPT-4", "ChatGPT-3.5", "GPT-3.5")  # the API models; the others are the T5 family
# The dated API versions each paper names: Deshpande et al. 2023 §4.2: gpt-3.5-turbo-0301, gpt-4-0314;
# Tu et al. 2024 §4.1: gpt-3.5-turbo-1106, gpt-4-0125-preview; their Table 8 ("Pricing of GPT models used in the
# paper") names gpt-3.5-turbo-0125 instead, and §5.1 says only "GPT-3.5": either may be the paper's, so both are
# accepted and a comparable verdict says the paper names both. A floating id (gpt-4) is whatever the API serves
# today under it, not that snapshot.
SNAPSHOTS: dict[tuple[str, str], tuple[str, ...]] = {
    (DESHPANDE, "GPT-4"): ("gpt-4-0314",),
    (DESHPANDE, "ChatGPT-3.5"): ("gpt-3.5-turbo-0301",),
    (DESHPANDE, "GPT-3.5"): ("gpt-3.5-turbo-0301",),  # Table 4's name for ChatGPT-3.5
    (TU, "GPT-3.5"): ("gpt-3.5-turbo-1106", "gpt-3.5-turbo-0125"),
    (TU, "GPT-4"): ("gpt-4-0125-preview",),
}
# Tu et al. 2024 §4.1: "we choose to use GPT-3.5" for the answers; Table 4's QA rows score those answers,
# whichever model scores them (either GPT-3.5 snapshot the paper names, as above).
TU_ANSWER_MODELS = SNAPSHOTS[TU, "GPT-3.5"]
TU_ANSWER_MODEL = TU_ANSWER_MODELS[0]
# Tu et al. 2024 state no token budget, temperature or parsing rule for their prompted rows (§5.1, App. A.1): the
# harness assumes Deshpande et al.'s (published.py PAPER_PROTOCOL), and a Tu et al. verdict says so.
TU_ASSUMED = "Tu et al. state none"
TU_UNSTATED = ("max_tokens", "temperature", "parse", "scoring")
# The limit each published open model's prompts were cut at: run_sts_fewshot.py's truncation=True cuts at the
# tokenizer's own model_max_length. Flan-T5's tokenizers: 512 (Tk-Instruct's taken to be 512, unchecked). Flan-UL2's
# said 512 when it was released and says 2048 in today's revision, and Deshpande et al. do not say which revision
# they loaded: either may be the published run's, so a Flan-UL2 cell is uncertain unless no prompt of the run
# reached 512 tokens (its usage's input_tokens), where neither limit cut anything.
PAPER_INPUT_LIMITS: dict[str, tuple[int, ...]] = {"Flan-UL2": (T5_MAX_INPUT, 2048)}
REFERENCE_SHOT_SEED = 42  # run_sts_fewshot.py --seed default: the one stream the published k>0 rows drew from
# Output tokens: App. A.3's text says 20 (the T5 generation_kwargs too); the released openai_utils.py asks the GPT
# models for max_tokens=5. A GPT run with either is the paper's.
MAX_TOKENS_GPT = (20, 5)
MAX_TOKENS_OPEN = (20,)
# PUBLISHED settings and where each is judged; any other is compared with its declared default (`differences`).
JUDGED = {
    **dict.fromkeys(("dataset", "split", "labels", "subset", "variant", "instr", "shots"), "the published row"),
    **dict.fromkeys(("embed.setting", "embed.ffn"), "the published row (its variant: case-<setting>-ffn-<kind>)"),
    # (temperature and repeats were judged twice, by the protocol and against their defaults: named once here)
    **dict.fromkeys(
        ("scoring", "constrain", "stop", "chat", "api.reasoning", "temperature", "repeats"),
        "published.py PAPER_PROTOCOL",
    ),
    **dict.fromkeys(("model", "template", "shot_sampler", "shot_seed", "max_tokens"), "differences"),
    **dict.fromkeys(("answers", "answer_model", "truncate_input"), "differences"),
}


def paper_of(source: str) -> str:
    """ "Deshpande et al. 2023, Table 11" -> "Deshpande et al. 2023"."""
    return source.split(",")[0].strip()


def paper_template(source: str, model: str, instr: str, variant: str) -> str:
    """The template stem the published row's prompts had: Deshpande et al.'s GPT layout (`short`) or T5 layout
    (`t5-short`, the reference code's for Flan-T5, Flan-UL2, Tk-Instruct); Tu et al.'s Figure 8 base prompt
    (`tu-base`) or Figure 9 QA prompt (`qa`)."""
    if paper_of(source) == TU:
        return "qa" if variant.startswith("qa") else "tu-base"
    return instr if model in CHAT_MODELS else f"t5-{instr}"


def differences(source: str, model: str, instr: str, shots: int, variant: str, run: Mapping[str, object]) -> list[str]:
    """Each setting of `run` (its identity, plus `model`, `served_model`, `shot_seed`, `shot_ids`, `answers`,
    `truncate_input` and `published` where known) that differs from the published row's, as
    "setting=ours (paper: theirs)"."""
    why = []
    template = paper_template(source, model, instr, variant)
    if run.get("template") is not None and run["template"] != template:
        why.append(f"template={run['template']} (paper: {template})")
    if shots > 0:  # a zero-shot prompt has no shots to draw
        sampler, seed = run.get("shot_sampler", "reference"), run.get("shot_seed", REFERENCE_SHOT_SEED)
        if run.get("shot_ids"):  # --shot-ids: the same shots before every query, not the paper's per-row draw
            why.append(f"shot_ids={run['shot_ids']} (paper: reference, seed {REFERENCE_SHOT_SEED})")
        elif sampler != "reference":
            why.append(f"shot_sampler={sampler} (paper: reference, seed {REFERENCE_SHOT_SEED})")
        elif seed != REFERENCE_SHOT_SEED:
            why.append(f"shot_seed={seed} (paper: {REFERENCE_SHOT_SEED})")
    snapshot = SNAPSHOTS.get((paper_of(source), model))
    if snapshot is not None:
        why += _snapshot(run, snapshot)
    budgets = MAX_TOKENS_GPT if model in CHAT_MODELS else MAX_TOKENS_OPEN
    if run.get("max_tokens", 20) not in budgets:
        paper = "20; the released code's GPT call: 5" if model in CHAT_MODELS else "20"
        why.append(f"max_tokens={run['max_tokens']} (paper: {paper}{assumed(source, 'max_tokens')})")
    if paper_of(source) == TU and variant.startswith("qa"):
        why += _answers(run)
    limits = input_limits(model)
    if model not in CHAT_MODELS and run.get("truncate_input") not in limits:
        ours = run.get("truncate_input") or "none"
        paper = " or ".join(map(str, limits))
        why.append(f"truncate_input={ours} (paper: {paper}, the reference code's T5 tokenizer)")
    published = run.get("published")  # the PUBLISHED settings JUDGED leaves to their declared defaults
    for name, (ours, paper) in (published if isinstance(published, Mapping) else {}).items():
        if ours != paper:
            why.append(f"{name}={_words(ours)} (paper: {_words(paper)})")
    return why


def assumed(source: str, key: str) -> str:
    """After a protocol value in a verdict: where it is Deshpande et al.'s assumed for a paper that states none."""
    return f"; Deshpande et al.'s, {TU_ASSUMED}" if paper_of(source) == TU and key in TU_UNSTATED else ""


def input_limits(model: str) -> tuple[int, ...]:
    """The prompt lengths the published row of `model` may have been cut at (PAPER_INPUT_LIMITS)."""
    return PAPER_INPUT_LIMITS.get(model, (T5_MAX_INPUT,))


def uncertain(model: str, run: Mapping[str, object]) -> list[str]:
    """Settings of `run` that may or may not be the published row's, because the paper's own value is not known:
    a cut at one of Flan-UL2's two tokenizer limits, unless the run's longest prompt (`longest_prompt`, from its
    usage) was under both."""
    limits, ours = input_limits(model), run.get("truncate_input")
    if model in CHAT_MODELS or len(limits) < 2 or ours not in limits:
        return []
    longest = run.get("longest_prompt")
    if isinstance(longest, int) and longest < min(limits):
        return []
    seen = f"its longest prompt {longest:,} tokens" if isinstance(longest, int) else "its prompt lengths unknown"
    paper = " or ".join(map(str, limits))
    return [
        f"truncate_input={ours} (paper: {paper}: {model}'s tokenizer said {limits[0]} when released and says "
        f"{limits[-1]} now, and which one the published run loaded is not known; {seen})"
    ]


def _words(value: object) -> str:
    return "none" if value is None else str(value)


def published_settings(settings: Mapping[str, object]) -> dict[str, tuple[object, object]]:
    """Every PUBLISHED setting that JUDGED does not name, as (the run's recorded value, its declared default)."""
    marked = recorded(dict(settings), Affects.PUBLISHED)
    return {name_of(d): (v, d.default) for d, v in marked.items() if name_of(d) not in JUDGED}


def _snapshot(run: Mapping[str, object], snapshots: tuple[str, ...]) -> list[str]:
    """The model that answered: the served model where the run recorded one, else the id it asked for."""
    paper = " or ".join(snapshots)
    served = [s.strip() for s in str(run.get("served_model") or "").split(",") if s.strip()]
    if served:
        other = [s for s in served if s.lower() not in snapshots]
        return [f"served_model={', '.join(other)} (paper: {paper})"] if other else []
    asked = str(run.get("model") or "")
    if asked and asked.lower() not in snapshots:
        return [f"model={asked} (paper: {paper})"]  # no served model recorded: the id asked for is judged
    return []


def _named(snapshots: tuple[str, ...], what: str = "") -> str:
    """The snapshot in a comparable verdict; where the paper names two, that it does and either was accepted."""
    if len(snapshots) == 1:
        return snapshots[0] + what
    return f"{' or '.join(snapshots)}{what} (the paper names both: either accepted)"


def _answers(run: Mapping[str, object]) -> list[str]:
    """Tu et al.'s Table 4 QA rows score GPT-3.5's (gpt-3.5-turbo-1106) answers for every model."""
    paper = " or ".join(TU_ANSWER_MODELS)
    if run.get("answers"):
        return [f"answers={run['answers']} (paper: {paper}'s answers; a reused file's writer is not checked)"]
    ours = run.get("answer_model")
    if ours is not None and str(ours).lower() not in TU_ANSWER_MODELS:
        return [f"answer_model={ours} (paper: {paper})"]
    return []


def matched(source: str, model: str, instr: str, shots: int, variant: str) -> str:
    """What a comparable run shares with the paper, said in the report's "comparable?" cell."""
    parts = [f"template {paper_template(source, model, instr, variant)}"]
    if shots > 0:
        parts.append(f"reference shots, seed {REFERENCE_SHOT_SEED}")
    snapshot = SNAPSHOTS.get((paper_of(source), model))
    if snapshot is not None:
        parts.append(_named(snapshot))
    if paper_of(source) == TU and variant.startswith("qa"):
        parts.append(_named(TU_ANSWER_MODELS, "'s answers"))
    limits = input_limits(model)
    if model not in CHAT_MODELS and len(limits) == 1:
        parts.append(f"input cut at {limits[0]} tokens")
    elif model not in CHAT_MODELS:  # `uncertain`: comparable only where no prompt reached either limit
        parts.append(
            f"no prompt reached {min(limits)} tokens, under either tokenizer limit ({', '.join(map(str, limits))})"
        )
    if paper_of(source) == TU:
        parts.append(f"Deshpande et al.'s token budget, temperature and parse assumed ({TU_ASSUMED})")
    return "comparable: every setting as published (" + ", ".join(parts) + ")"


def run_settings(run: Run, served_model: object) -> dict[str, object]:
    """The run's identity with what `differences` reads beyond it: the model asked for and the one served, the
    shot seed in effect, pinned shots, a reused answers file, the prompt tokens the backend kept (and the tokenizer
    revision that said how many), the longest prompt it sent (input tokens, where the backend counted them)."""
    settings = run.config.get("settings") or {}
    sampler = setting(run.config, "shot_sampler")
    seed = settings.get("shot_seed")
    if seed is None:  # --shot-seed's default: 42 for the reference stream, --seed for the seeded draw
        seed = REFERENCE_SHOT_SEED if sampler == "reference" else setting(run.config, "seed")
    return run.identity() | {
        "model": run.config.get("model"),
        "served_model": served_model if isinstance(served_model, str) else None,  # pandas: NaN for none
        "shot_seed": seed,
        "answers": settings.get("answers"),
        "shot_ids": settings.get("shot_ids"),
        "truncate_input": _truncation(run),
        "tokenizer_revision": _tokenizer_revision(run),
        "longest_prompt": _longest_prompt(run),
        "published": published_settings(settings),
    }


def _tokenizer_revision(run: Run) -> str | None:
    """The hub revision of the tokenizer whose limit `--truncate-input paper` cut at (hf backend), where known."""
    tokenizer = (run.config.get("backend_params") or {}).get("tokenizer")
    revision = tokenizer.get("revision") if isinstance(tokenizer, dict) else None
    return revision if isinstance(revision, str) else None


def _longest_prompt(run: Run) -> int | None:
    """The most input tokens any answered request had (usage in samples.jsonl); None where none was counted."""
    counts = []
    for extra in run.extras:
        usage = extra.get("usage")
        tokens = usage.get("input_tokens") if isinstance(usage, dict) else None
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            counts.append(tokens)
    return max(counts) if counts else None


def _truncation(run: Run) -> int | None:
    """What the backend recorded it cut prompts to; a dry run (no backend built): what --truncate-input asks."""
    params = run.config.get("backend_params")
    if params:
        return params.get("truncate_input")
    try:
        return truncation((run.config.get("settings") or {}).get("truncate_input"), str(run.config.get("model")))
    except HarnessError:
        return None
