"""The run command's options: argparse -> RunConfig, every option with its help and its default shown.

Nothing is checked here beyond what argparse parses; every check of the values lives in validate.py, so
a RunConfig built by a sweep or a test is held to the same rules as one built from the command line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.calling.backends import BACKENDS
from harness.calling.batch.options import add_batch_args
from harness.cli.case_options import add_case_args
from harness.cli.configs import REASONING, CommaList, shard_arg
from harness.cli.parser import Parser
from harness.config.settings import (
    CONSTRAIN_MODES,
    DTYPES,
    PARSE_MODES,
    SCORINGS,
    SHOT_SAMPLERS,
    ApiOptions,
    LocalOptions,
    RunConfig,
)
from harness.datasets.load import SPLITS
from harness.prompting.render import INSTRUCTIONS
from harness.scoring.reasoning import THINK_TAGS
from harness.variants import VARIANTS

# The sub-commands, in the order `--help` lists them (cli.COMMANDS maps each to its function).
COMMAND_HELP = {
    "extract": "decrypt the C-STS release into a directory",
    "data-report": "split sizes, label distributions, lengths, agreement of the label sets",
    "overlap": "text shared between the few-shot pool and the evaluated split",
    "report": "tables (md/csv/tex), plots and CIs from run or sweep folders; calls no model",
    "compare": "paired comparison of two runs on the items both answered",
    "batches": "the batches submitted with --batch: pending, finished, expired, with counts; calls no API",
    "errors": "annotation-error candidates from a qa run's answers (Tu et al. 2024, §4.2), scored",
    "reannotate": "LLM re-annotation (Zhang et al. 2025): a labels file for --labels, with its agreement",
}
EXIT_CODES = """exit status:
  0    every query has a prediction
  2    bad input: one `error:` line on stderr, nothing sent, nothing written
  3    run folder written, but some requests failed (a sweep: in any cell); the same command again retries them
  4    --batch: batches submitted or still running, nothing written yet; the same command collects them
  130  interrupted (Ctrl-C, SIGINT)
  143  terminated (SIGTERM)"""


def add_data_args(p: argparse.ArgumentParser) -> None:
    """Where C-STS comes from: an extracted directory, or the encrypted release and its password."""
    p.add_argument(
        "--data-dir",
        type=Path,
        help="directory with csts_{train,validation,test}.csv (default: $CSTS_DATA_DIR)",
    )
    p.add_argument(
        "--archive", type=Path, help="the official encrypted release csts.tar.enc, decrypted in memory (default: none)"
    )
    p.add_argument(
        "--password-file",
        type=Path,
        help="file holding the archive's password (default: the password itself in $CSTS_PASSWORD)",
    )


def run_parser() -> Parser:
    commands = "\n".join(f"  {name:<12} {text}" for name, text in COMMAND_HELP.items())
    p = Parser(
        prog="run_eval.py",
        usage="%(prog)s --model MODEL [options]\n       %(prog)s COMMAND [options]   (COMMAND: "
        + ", ".join(COMMAND_HELP)
        + ")",
        description="Evaluate a model by prompting on C-STS or STS-B.\n\n"
        "A plain run is zero-shot (k=0: --shots 0) with no instruction (--instr none); the paper's protocol "
        "(Deshpande et al. 2023) is --shots 4 --instr long.\nComma lists in --model, --shots, --instr and "
        "--dataset run a sweep: every combination, each its own run folder.",
        epilog=f"commands (`run_eval.py COMMAND --help` for their options):\n{commands}\n\n{EXIT_CODES}",
    )
    p.add_argument(
        "--model",
        required=True,
        type=CommaList("--model"),
        help="required: model name (gpt-4o, claude-..., a hub id or directory with --backend vllm|hf, "
        "or an offline baseline: overlap, random)",
    )
    p.add_argument(
        "--backend",
        help=f"{', '.join(BACKENDS)} (default: implied by the model name; "
        "with --base-url an unknown name means openai)",
    )
    datasets = tuple(SPLITS)  # comma lists (--dataset csts,stsb) are checked by CommaList, single values too
    grid = {"type": CommaList("--dataset", choices=datasets), "metavar": "{" + ",".join(datasets) + "}"}
    p.add_argument("--dataset", default=RunConfig.dataset, **grid, help="dataset to evaluate")  # type: ignore[arg-type]
    p.add_argument("--split", default=RunConfig.split, help="validation, test (C-STS: writes the submission) or train")
    p.add_argument(
        "--shots",
        type=CommaList("--shots", int),
        default=RunConfig.shots,
        help="in-context examples k (C-STS: k/2 sentence pairs, both conditions)",
    )
    p.add_argument(
        "--instr",
        type=CommaList("--instr"),
        default=RunConfig.instr,
        help=f"instruction level: {', '.join(INSTRUCTIONS)}",
    )
    p.add_argument(
        "--template",
        help="template name under templates/<dataset>/, or a .j2 file of your own; overrides --instr "
        "(default: from --instr)",
    )
    p.add_argument("--seed", type=int, default=RunConfig.seed, help="seeds shot choice and the invalid-output fallback")
    p.add_argument("--limit", type=int, help="evaluate only the first N queries (default: all)")
    p.add_argument("--shard", type=shard_arg, metavar="K/N", help="run the K-th of N deterministic parts of "
                   "the queries (K-1, K-1+N, ...: a job of an array); `report` merges them (default: all)")  # fmt: skip
    p.add_argument("--labels", default=RunConfig.labels, help="original, reannotated (Tu et al. 2024) or a labels FILE")
    p.add_argument(
        "--subset",
        default=RunConfig.subset,
        help="all, reannotated-test or reannotated-train (seeded 70/30 of re-annotated)",
    )
    p.add_argument(
        "--subset-seed", type=int, default=RunConfig.subset_seed, help="seed of the 70/30 re-annotated split"
    )
    p.add_argument(
        "--variant",
        default=RunConfig.variant,
        choices=list(VARIANTS),
        help="sentences (the paper's prompt); qa: answer each condition as a question, then score the answers "
        "(Tu et al. 2024); qa-embed: cosine of the answers' embeddings (--model is the embedding model); case: "
        "sentence and condition embedded together (Zhang et al. 2025; --model embeds)",
    )
    p.add_argument("--answer-model", help="qa variants: the model that answers the questions (default: --model)")
    p.add_argument(
        "--answer-backend",
        help="qa variants: the answer model's backend (default: by its name, else --backend)",
    )
    p.add_argument("--answers", type=Path, help="qa variants: reuse answers.jsonl from an earlier run (default: none)")
    add_data_args(p)
    p.add_argument(
        "--config",
        metavar="FILE|RECIPE",
        help="a TOML file of options (keys as the options are named, without --; lists for a sweep), or a bundled "
        "recipe's name (run_eval.py --config list); the command line overrides it (default: none)",
    )
    p.add_argument("--results-dir", type=Path, default=RunConfig.results_dir, help="where run folders are written")
    p.add_argument("--run-id", help="name of the run folder, a plain name (default: dataset-split-model-k-instr-time)")
    p.add_argument("--dry-run", action="store_true", help="render every prompt and count tokens; call no model")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_decoding_args(p.add_argument_group("what is sent and how replies are read (every backend)"))
    add_api_args(p.add_argument_group("API backends (openai, anthropic, OpenAI-compatible servers)"))
    add_local_args(p.add_argument_group("local GPU backends (vllm, hf)"))
    add_case_args(p.add_argument_group("embedding protocol (--variant case, Zhang et al. 2025)"))
    return p


def add_decoding_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--chat",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="--chat: wrap the prompt in the model's chat template (one user message); --no-chat: raw text, "
        "as the paper sent it to open models (default: the backend's: raw for vllm, hf and --base-url servers, "
        "chat for the chat-only hosted APIs and OpenAI's model names)",
    )
    g.add_argument(
        "--stop",
        action="append",
        default=list(RunConfig.stop),
        metavar="STR",
        help="stop sequence, repeatable (default: none, the paper's protocol)",
    )
    g.add_argument(
        "--max-tokens",
        type=int,
        default=RunConfig.max_tokens,
        metavar="N",
        help="output tokens per scoring request (Deshpande et al. 2023: 20; the reference code's GPT call used 5; "
        "reasoning models use --reasoning-tokens instead)",
    )
    g.add_argument(
        "--shot-sampler",
        default=RunConfig.shot_sampler,
        choices=SHOT_SAMPLERS,
        help="seeded: shots drawn per query from (seed, query id), independent of order and --limit; reference: "
        "the published script's one random stream",
    )
    g.add_argument(
        "--shot-seed", type=int, help="seed of the shot choice alone (default: --seed; 42 for --shot-sampler reference)"
    )
    g.add_argument(
        "--truncate-input",
        metavar="N|paper",
        help="hf backend: keep each prompt's first N tokens (paper: 512 for the T5 family, as the reference code's "
        "tokenizer cut them; none for other models); default: the whole prompt",
    )
    g.add_argument(
        "--scoring",
        default=RunConfig.scoring,
        choices=SCORINGS,
        help="parsed: the first number of the reply (the paper); expected: probability-weighted score",
    )
    g.add_argument(
        "--constrain",
        nargs="?",
        const="native",
        choices=CONSTRAIN_MODES,
        help="the backend forces the reply into the label scale: native (default: JSON schema, forced tool call, "
        "choice or token restriction) or grammar (a llama.cpp server's GBNF field); a protocol of its own, never "
        "compared with the paper's numbers",
    )
    g.add_argument(
        "--parse",
        default=RunConfig.parse,
        choices=PARSE_MODES,
        help="first-number: the paper's rule only; strict: also report *_strict metrics, where a score must "
        "stand alone or follow an answer cue (the paper's numbers are unchanged)",
    )
    g.add_argument(
        "--think-tags",
        default=RunConfig.think_tags,
        metavar="auto|none|NAMES",
        help="inline thought delimiters split off before the first number is read: auto (every known format: "
        + ", ".join(THINK_TAGS)
        + "), none, or a comma list of those names and 'OPEN CLOSE' pairs",
    )


def add_api_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--base-url",
        action="append",
        default=list(ApiOptions.base_urls),
        help="OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1; repeatable, spreads the load "
        "(default: the provider's)",
    )
    g.add_argument(
        "--concurrency",
        type=int,
        default=ApiOptions.concurrency,
        help="the most API requests in flight; 429s shrink it while the provider is at its limit, then it grows back",
    )
    g.add_argument("--rpm", type=float, help="pace API requests to this many a minute (default: as the provider says)")
    g.add_argument("--tpm", type=float, help="pace prompt tokens to this many a minute (default: as the provider says)")
    g.add_argument("--timeout", type=float, default=ApiOptions.timeout, help="seconds per attempt before it is retried")
    g.add_argument(
        "--max-retries",
        type=int,
        default=ApiOptions.max_retries,
        help="retries per request on 408/409/429/5xx/529/timeouts",
    )
    g.add_argument(
        "--wait-for-server",
        type=float,
        default=ApiOptions.wait_for_server,
        metavar="SECONDS",
        help="how long to keep trying a server that has not answered yet (refused, unreachable) before the run "
        "stops (default %(default)g; longer for a server that is still starting)",
    )
    g.add_argument(
        "--max-reply-mb",
        type=float,
        default=ApiOptions.max_reply_mb,
        metavar="MB",
        help="the most MB of one API reply's body read, after decompression (default %(default)g); a larger "
        "answer is kept as malformed, reason too-large",
    )
    g.add_argument("--cache", type=Path, help="response cache file (default: RESULTS_DIR/cache.sqlite)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    g.add_argument("--refresh", action="store_true", help="ignore cached answers; send again and store the new ones")
    g.add_argument(
        "--max-cost", type=float, help="US dollars this run may spend; stops sending before that (default: no limit)"
    )
    g.add_argument("--prices", type=Path, help="JSON price table (default: harness/data/prices.json)")
    g.add_argument(
        "--reasoning",
        choices=list(REASONING),
        default=next(word for word, v in REASONING.items() if v is ApiOptions.reasoning),
        help="a reasoning model: a thinking budget beside the answer's (OpenAI: max_completion_tokens, no "
        "temperature; Anthropic: extended thinking; open models: a total budget and the chat template's "
        "enable_thinking). auto: by name (OpenAI's o-series and gpt-5; with --chat, Qwen3, DeepSeek-R1, gpt-oss, "
        "QwQ ...); Claude thinks only with yes",
    )
    g.add_argument(
        "--reasoning-tokens",
        type=int,
        default=ApiOptions.reasoning_tokens,
        help="the thinking budget: OpenAI's max_completion_tokens (reasoning plus the answer); Anthropic's "
        "budget_tokens (min 1024) and open models' thought, each with --max-tokens more for the answer",
    )
    g.add_argument("--reasoning-effort", help="reasoning_effort for reasoning models, e.g. low (default: not sent)")
    g.add_argument(
        "--anthropic-greedy",
        action="store_true",
        help="temperature 0 via API version 2023-06-01 (models that still allow it); default: the model's sampling",
    )
    add_batch_args(g)  # --batch, --batch-wait, --batch-poll, --batch-max-requests (harness/calling/batch/options.py)


def add_local_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--dtype", default=LocalOptions.dtype, choices=DTYPES, help="weights and activations (auto: the checkpoint's)"
    )
    g.add_argument(
        "--tensor-parallel",
        type=int,
        default=LocalOptions.tensor_parallel,
        metavar="N",
        help="vllm: split the model over N GPUs",
    )
    g.add_argument(
        "--data-parallel",
        type=int,
        default=LocalOptions.data_parallel,
        metavar="N",
        help="vllm: N engine copies (vLLM's offline data-parallel ranks), each answering its part of the prompts",
    )
    g.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=LocalOptions.gpu_memory_utilization,
        metavar="F",
        help="vllm: share of GPU memory, in (0, 1]",
    )
    g.add_argument("--max-model-len", type=int, metavar="N", help="vllm: context length (default: the model's)")
    g.add_argument("--batch-size", type=int, metavar="N", help="hf: prompts per batch (default: chosen to fit memory)")
