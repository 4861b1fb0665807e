"""Every setting of a run, declared once: RunConfig and its option groups (harness/config/sections.py), each field
with its default and its command-line option: flag, help, choices, --help section and its own check
(`option(...)`, harness/config/option.py). Flows one way: the parser made from these declarations
(harness/cli/declared.py) -> RunConfig -> runner.run(); a sweep or a test builds a RunConfig directly."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.config.checks import a_model, at_least, check_run_id, finite, non_empty, regular_file
from harness.config.checks import shard as k_of_n
from harness.config.option import Affects, option, section
from harness.config.sections import API, CASE, DTYPES, LOCAL, ApiOptions, BatchOptions, EmbedOptions, LocalOptions

__all__ = ["DTYPES", "ApiOptions", "BatchOptions", "EmbedOptions", "LocalOptions", "RunConfig"]

# The values RunConfig's choice fields take (their declarations offer and check them).
PARSE_MODES = ("first-number", "strict")
SHOT_SAMPLERS = ("seeded", "reference")
SCORINGS = ("parsed", "expected")
REDUCERS = ("mean", "median", "mode")  # --reduce: how an item's --repeats combine (harness/scoring/repeats.py)
# --constrain: native (each backend's own mechanism) or grammar (llama.cpp servers' GBNF `grammar` field)
CONSTRAIN_MODES = ("native", "grammar")
DECODING = "what is sent and how replies are read (every backend)"  # a --help section


@dataclass(frozen=True)
class RunConfig:
    """Every setting of one run, in the order `run_eval.py --help` lists them."""

    model: str = option(
        help="required: model name (gpt-4o, claude-..., a hub id or directory with --backend vllm|hf, "
        "or an offline baseline: overlap, random)",
        required=True,
        grid=True,
        check=a_model,
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    backend: str | None = option(  # None: chosen from the model name
        None,
        "{listed} (default: implied by the model name; with --base-url an unknown name means openai)",
        listed="harness.calling.backends:BACKENDS",
        affects=Affects.REQUEST,
    )
    dataset: str = option(
        "csts",
        "dataset to evaluate: {listed}, or a dataset file of your own (FILE.toml: docs/extending.md)",
        listed="harness.datasets:DATASETS",
        grid=True,
        affects=Affects.REQUEST | Affects.ITEMS | Affects.PUBLISHED,
    )
    split: str = option(
        "validation",
        "validation, test (C-STS: writes the submission) or train",
        affects=Affects.ITEMS | Affects.PUBLISHED,
    )
    shots: int = option(
        0,
        "in-context examples k (C-STS: k/2 sentence pairs, both conditions)",
        grid=True,
        check=at_least(0),
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    instr: str = option(
        "none",
        "instruction level: {listed}",
        listed="harness.prompting.render:INSTRUCTIONS",
        grid=True,
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    template: str | None = option(  # None: derived from dataset + instr
        None,
        "template name under templates/<dataset>/, or a .j2 file of your own; overrides --instr "
        "(default: from --instr)",
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    seed: int = option(
        0, "seeds shot choice and the invalid-output fallback", affects=Affects.REQUEST | Affects.READING
    )
    limit: int | None = option(
        None, "evaluate only the first N queries (default: all)", check=at_least(1), affects=Affects.ITEMS
    )
    # Which items, chosen and recorded (harness/datasets/items.py): the same for every model, order and --shard.
    sample: int | None = option(
        None,
        "evaluate a seeded random N of the queries (--sample-seed): the same N for every model, row order and "
        "--shard, a smaller N inside a larger (default: all)",
        metavar="N",
        check=at_least(1),
        affects=Affects.ITEMS | Affects.PUBLISHED,
    )
    sample_seed: int = option(0, "seed of --sample", metavar="S", affects=Affects.ITEMS | Affects.PUBLISHED)
    ids: Path | None = option(
        None,
        "evaluate only the items this file lists, one id a line (0-based row numbers, as samples.jsonl names "
        "them; # comments); default: all",
        metavar="FILE",
        check=regular_file("--ids file"),
        affects=Affects.ITEMS | Affects.PUBLISHED,
    )
    # The K-th of N deterministic parts of the queries (positions K-1, K-1+N, ...; 1-based K), for a job array;
    # `report` merges the parts (harness/results/shards.py). None: every query.
    shard: tuple[int, int] | None = option(
        None,
        "run the K-th of N deterministic parts of the queries (K-1, K-1+N, ...: a job of an array); `report` "
        "merges them (default: all)",
        metavar="K/N",
        convert=k_of_n,
        affects=Affects.ITEMS,
    )
    labels: str = option(
        "original",
        "original, reannotated (Tu et al. 2024) or a labels FILE",
        affects=Affects.READING | Affects.PUBLISHED,
    )
    subset: str = option(
        "all",
        "all, reannotated-test or reannotated-train (seeded 70/30 of re-annotated)",
        affects=Affects.ITEMS | Affects.PUBLISHED,
    )
    subset_seed: int = option(0, "seed of the 70/30 re-annotated split", affects=Affects.ITEMS | Affects.PUBLISHED)
    variant: str = option(
        "sentences",
        "sentences (the paper's prompt); qa: answer each condition as a question, then score the answers "
        "(Tu et al. 2024); qa-embed: cosine of the answers' embeddings (--model is the embedding model); case: "
        "sentence and condition embedded together (Zhang et al. 2025; --model embeds)",
        choices="harness.variants:VARIANTS",
        affects=Affects.REQUEST | Affects.READING | Affects.PUBLISHED,
    )
    answer_model: str | None = option(
        None,
        "qa variants: the model that answers the questions (default: --model)",
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    answer_backend: str | None = option(
        None,
        "qa variants: the answer model's backend (default: by its name, else --backend)",
        affects=Affects.REQUEST,
    )
    answers: Path | None = option(
        None,
        "qa variants: reuse answers.jsonl from an earlier run (default: none)",
        check=regular_file("answers file"),
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    data_dir: Path | None = option(
        None, "directory with csts_{train,validation,test}.csv (default: $CSTS_DATA_DIR)", affects=Affects.PRESENTATION
    )
    archive: Path | None = option(
        None,
        "the official encrypted release csts.tar.enc, decrypted in memory (default: none)",
        check=regular_file("C-STS archive"),
        affects=Affects.PRESENTATION,
    )
    password_file: Path | None = option(  # the path only: the password itself is never stored
        None,
        "file holding the archive's password (default: the password itself in $CSTS_PASSWORD)",
        check=regular_file("password file"),
        affects=Affects.PRESENTATION,
    )
    config_file: str | None = option(  # the TOML file or recipe these settings came from (with the command line)
        None,
        "a TOML file of options (keys as the options are named, without --; lists for a sweep), or a bundled "
        "recipe's name (run_eval.py --config list); the command line overrides it (default: none)",
        flag="--config",
        metavar="FILE|RECIPE",
        affects=Affects.PRESENTATION,
    )
    results_dir: Path = option(Path("results"), "where run folders are written", affects=Affects.PRESENTATION)
    run_id: str | None = option(
        None,
        "name of the run folder, a plain name (default: dataset-split-model-k-instr-time)",
        check=check_run_id,
        affects=Affects.PRESENTATION,
    )
    dry_run: bool = option(False, "render every prompt and count tokens; call no model", affects=Affects.OPERATION)
    progress: bool = option(True, "no progress bar", affects=Affects.PRESENTATION)
    # None: the backend's default: raw text for local engines and OpenAI-compatible servers (as the paper sent
    # open models), chat for hosted OpenAI and Anthropic (chat-only).
    chat: bool | None = option(
        None,
        "--chat: wrap the prompt in the model's chat template (one user message); --no-chat: raw text, "
        "as the paper sent it to open models (default: the backend's: raw for vllm, hf and --base-url servers, "
        "chat for the chat-only hosted APIs and OpenAI's model names)",
        group=DECODING,
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    stop: tuple[str, ...] = option(
        (), "stop sequence, repeatable (default: none, the paper's protocol)", group=DECODING, metavar="STR",
        check=non_empty, affects=Affects.REQUEST | Affects.PUBLISHED,
    )  # fmt: skip
    max_tokens: int = option(  # Deshpande et al. 2023, App. A.3: 20
        20,
        "output tokens per scoring request (Deshpande et al. 2023: 20; the reference code's GPT call used 5; "
        "reasoning models use --reasoning-tokens instead)",
        group=DECODING,
        metavar="N",
        check=at_least(1),
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    shot_sampler: str = option(  # the paper's shots by default: Deshpande et al. 2023's run_sts_fewshot.py stream
        "reference",
        "reference: the published script's one random stream, drawn over the whole split as filed (the paper's "
        "shots, whatever --limit, --shard or the order); seeded: shots drawn per query from (seed, query id)",
        group=DECODING,
        choices=SHOT_SAMPLERS,
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    shot_seed: int | None = option(  # None: --seed for "seeded", 42 for "reference" (run_sts_fewshot.py's default)
        None,
        "seed of the shot choice alone (default: --seed; 42 for --shot-sampler reference)",
        group=DECODING,
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    shot_ids: Path | None = option(  # harness/prompting/pinned.py
        None,
        "pin the in-context examples: the shot-pool (train) ids this file lists, one a line, the first k used "
        "in order before every query (C-STS: an id names its sentence pair, both conditions); default: drawn",
        group=DECODING,
        metavar="FILE",
        check=regular_file("--shot-ids file"),
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    # Repeated samples (harness/scoring/repeats.py): K replies per item, cached per repeat, reduced to one score.
    repeats: int = option(
        1,
        "ask each query K times (each repeat cached apart) and score the --reduce of its valid replies; the "
        "per-item spread goes in samples.jsonl and the report (default: once, as the paper)",
        group=DECODING,
        metavar="K",
        check=at_least(1),
        affects=Affects.REQUEST | Affects.READING | Affects.PUBLISHED,
    )
    temperature: float = option(
        0.0,
        "sampling temperature of the scoring requests (default: 0, the paper's greedy decoding; above 0 a run is "
        "never compared with the paper's numbers)",
        group=DECODING,
        metavar="T",
        check=finite(),
        affects=Affects.REQUEST | Affects.READING | Affects.PUBLISHED,
    )
    reduce: str = option(
        "mean",
        "--repeats: how an item's valid replies combine into its score: mean, median or mode (the smallest of "
        "the most frequent)",
        group=DECODING,
        choices=REDUCERS,
        affects=Affects.READING | Affects.PUBLISHED,
    )
    # Prompt tokens the hf backend keeps; "paper": for the T5 family the tokenizer's own model_max_length, where
    # the reference code's truncation=True cut them, none otherwise (harness/config/paper.py); None: the whole prompt.
    truncate_input: str | None = option(
        None,
        "hf backend: keep each prompt's first N tokens (paper: for the T5 family the tokenizer's own limit, "
        "where the reference code cut them; none for other models); default: the whole prompt",
        group=DECODING,
        metavar="N|paper",
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    scoring: str = option(
        "parsed",
        "parsed: the first number of the reply (the paper); expected: probability-weighted score",
        group=DECODING,
        choices=SCORINGS,
        affects=Affects.REQUEST | Affects.READING | Affects.PUBLISHED,
    )
    # The backend forces the answer into the label scale (harness/scoring/constrained.py), a protocol of its own
    # whose numbers are never set against the paper's; None: the reply as the model wrote it.
    constrain: str | None = option(
        None,
        "the backend forces the reply into the label scale: native (default: JSON schema, forced tool call, "
        "choice or token restriction) or grammar (a llama.cpp server's GBNF field); a protocol of its own, never "
        "compared with the paper's numbers",
        group=DECODING,
        choices=CONSTRAIN_MODES,
        const="native",
        affects=Affects.REQUEST | Affects.READING | Affects.PUBLISHED,
    )
    parse: str = option(  # "strict" adds a second metric set (spearman_strict, ...); never replaces it
        "first-number",
        "first-number: the paper's rule only; strict: also report *_strict metrics, where a score must "
        "stand alone or follow an answer cue (the paper's numbers are unchanged)",
        group=DECODING,
        choices=PARSE_MODES,
        affects=Affects.READING,
    )
    # Inline thought delimiters split off before parsing (harness/scoring/reasoning.py parse_tags)
    think_tags: str = option(
        "auto",
        "inline thought delimiters split off before the first number is read: auto (every known format: "
        "{listed}), none, or a comma list of those names and 'OPEN CLOSE' pairs",
        group=DECODING,
        metavar="auto|none|NAMES",
        listed="harness.scoring.reasoning:THINK_TAGS",
        affects=Affects.READING,
    )
    api: ApiOptions = section(ApiOptions, API)
    local: LocalOptions = section(LocalOptions, LOCAL)
    embed: EmbedOptions = section(EmbedOptions, CASE, prefix="case-")  # --variant case only
