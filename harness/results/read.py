"""Run folders read back: config, samples (with their reason codes), stored metrics, identity; sweep folders
expanded into their runs; the finished run of each setting (what a sweep reuses)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.datasets.labels import SUBSET_SPLITS
from harness.prompting.render import TEMPLATE_INSTR, TEMPLATES_DIR
from harness.results.manifest import ALTERED, AS_WRITTEN, Integrity, check, read_run_file, read_run_json
from harness.scoring.parsing import REASONS, in_range
from harness.types import HarnessError, Scored

__all__ = [
    "IDENTITY",
    "OLD_DEFAULTS",
    "REASONS",
    "Run",
    "expand",
    "finished_runs",
    "load_run",
    "own_template",
    "reason_of",
    "setting",
    "sweep_run_dirs",
    "written_run",
]
_SCORED_FIELDS = {f.name for f in dataclasses.fields(Scored)}
# Per-sample fields newer runners write beside Scored's (finish_reason, usage, served_model, refusal, reason).
EXTRA_FIELDS = ("reason", "finish_reason", "usage", "served_model", "refusal")

# The settings beyond the table's own coordinates (dataset, split, variant, labels, model, instruction, k) that
# reports show as columns and tag rows with first. Every other setting marked as changing a key tells rows apart
# too (reporting/rowkeys.py, from harness/config/option.py's marks), so no cell ever holds two runs.
# A setting an older config.json lacks takes the value the harness used before it existed.
OLD_DEFAULTS: dict[str, Any] = {
    "scoring": "parsed",  # the reply's text, parsed (Deshpande et al. 2023, App. A.3)
    "parse": "first-number",  # the paper's rule
    "max_tokens": 20,  # App. A.3: 20 generation tokens
    "stop": None,
    "shot_sampler": "seeded",  # per-query seeded draw (the harness's own)
    "reasoning": False,  # a thinking budget beside the answer's (README "Reasoning models")
    "constrain": None,  # the reply as the model wrote it
    "repeats": 1,  # one reply per item (Deshpande et al. 2023)
    "temperature": 0.0,  # greedy (openai_utils.py: temperature 0)
    "reduce": "mean",  # --repeats' reducer (one reply: nothing to reduce)
    "sample_seed": 0,
}
IDENTITY: tuple[str, ...] = ("backend", "chat", "template", "scoring", "parse", "max_tokens", "stop", "shot_sampler")
IDENTITY += ("constrain", "seed", "limit", "subset_seed", "answer_model", "reasoning")
IDENTITY += ("sample", "sample_seed", "ids_hash", "repeats", "temperature", "reduce")
CHAT_BACKENDS = ("openai", "anthropic")  # before --chat/--no-chat, API backends always sent one chat message
OWN = "(own file)"  # a template named as a bundled one whose text is not the bundled text (own_template)


@dataclass(frozen=True)
class Run:
    """A run folder, read back: its config, its samples as the runner scored them, and what they add."""

    run_dir: Path
    config: dict[str, Any]
    samples: tuple[Scored, ...]
    stored_metrics: dict[str, Any]
    extras: tuple[dict[str, Any], ...]  # per sample: EXTRA_FIELDS, `reason` derived where the file has none
    # The folder against its manifest.json (a run just written, held in memory: verified, digest not taken). About
    # the folder, not the run: runs compare equal whatever it says.
    integrity: Integrity = field(default=AS_WRITTEN, compare=False)

    @property
    def label_range(self) -> tuple[float, float]:
        lo, hi = self.config["label_range"]
        return float(lo), float(hi)

    @property
    def instr(self) -> str:
        """The instruction level: the template's name (none/short/long, or a custom template's stem), with the
        paper layouts that carry an instruction level named by it (t5-long -> long, Tu et al.'s -> short)."""
        return TEMPLATE_INSTR.get(self.template, self.template)

    @property
    def template(self) -> str:
        return Path(str(self.config.get("template") or "none")).stem

    @property
    def split(self) -> str:
        """The evaluated split, named as in paper_results.csv where a subset of it was scored."""
        return SUBSET_SPLITS.get(self.config.get("subset") or "all", self.config["split"])

    @property
    def variant(self) -> str:
        variant = self.config.get("variant") or "sentences"
        if variant == "case":  # paper_results.csv names the embedding protocol by its setting (and projection)
            case = self.config.get("case") or {}
            ffn = f"-ffn-{case['ffn']}" if case.get("ffn") else ""
            return f"case-{case.get('setting', 'cond-c')}{ffn}"
        return "qa-answers" if variant == "qa" else variant  # paper_results.csv's name for Tu et al.'s QA prompt

    @property
    def labels(self) -> str:
        return self.config.get("labels") or "original"

    @property
    def dry_run(self) -> bool:
        """A --dry-run folder: prompts only, no answers (older ones say so only by having no predictions)."""
        if self.stored_metrics.get("dry_run"):
            return True
        return bool(self.samples) and all(s.prediction is None and s.error is None for s in self.samples)

    def identity(self) -> dict[str, Any]:
        """The settings beyond the table coordinates that decide prompts and answers (old defaults filled in)."""
        return {name: setting(self.config, name) for name in IDENTITY}


def setting(config: dict[str, Any], name: str) -> Any:
    """One identity setting from config.json: top level, then `settings`, then what the harness did before
    the setting existed (chat: what the backend recorded -- vllm/hf whether they applied a template, API backends
    whether they sent a chat message -- else, for old runs, API backends sent a chat message)."""
    settings = config.get("settings") or {}
    params = config.get("backend_params") or {}
    if name == "template":
        stem = Path(str(config.get("template") or "none")).stem
        return f"{stem} {OWN}" if own_template(config) else stem
    for source in (config, settings):  # None in `settings` means "the default": derived below, as for old runs
        if source.get(name) is not None:
            value = source[name]
            return None if name == "stop" and not value else value  # no stop sequence: [] or None alike
    if name == "chat":
        if "chat_template" in params:  # vllm/hf record whether the chat template was applied
            return bool(params["chat_template"])
        if isinstance(params.get("chat"), bool):  # API backends record whether they sent a chat message (raw: no)
            return params["chat"]
        backend = config.get("backend")
        return True if backend in CHAT_BACKENDS else (settings.get("local") or {}).get("chat") if backend else None
    if name == "reasoning":  # every backend's describe() says so when the model thought (reasoning_model)
        return params.get("reasoning_model") is True
    if name == "max_tokens":
        sent = params.get("sent") or {}
        return sent.get("max_completion_tokens", sent.get("max_tokens", OLD_DEFAULTS["max_tokens"]))
    return OLD_DEFAULTS.get(name)


def own_template(config: dict[str, Any]) -> bool:
    """Whether the run's prompts came from a template other than the bundled one of its name (a user's own
    `short.j2`, or one that includes a file of its own): a recorded template's sha256 (config.json
    `template_hashes`, the template and every file it includes) differs from the bundled file's, or no bundled
    file has its name. A record without hashes (an older run) is taken as written: False."""
    hashes = config.get("template_hashes")
    if not isinstance(hashes, dict) or not hashes:
        return False
    dataset = str(config.get("dataset") or "csts")
    return any(
        _bundled_sha256(name if "/" in name else f"{dataset}/{name}") != digest for name, digest in hashes.items()
    )


@functools.lru_cache(maxsize=64)
def _bundled_sha256(name: str) -> str | None:
    """sha256 of a bundled template's text as the renderer hashes it (None: no such bundled template)."""
    path = TEMPLATES_DIR / name
    if ".." in Path(name).parts or not path.is_file():
        return None
    return hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest()


def reason_of(record: dict[str, Any], label_range: tuple[float, float]) -> str | None:
    """The sample's reason code; for samples written before it existed, derived from error/valid/parsed."""
    if record.get("reason"):
        return str(record["reason"])
    if record.get("error") is not None:
        return "error"
    if record.get("prediction") is None:
        return None  # a dry run: nothing was asked
    if not record.get("valid"):
        return "no-number"
    parsed = record.get("parsed")
    if parsed is not None and not in_range(float(parsed), label_range):
        return "out-of-range"
    return "number"


# Scored's fields by what a line of samples.jsonl must hold there (None aside): checked as it is read (issue 41).
_NUMBER_FIELDS = ("parsed", "prediction", "label", "parsed_strict", "prediction_strict", "expected", "expected_mass")
_TEXT_FIELDS = ("output", "error", "pair", "reason", "finish_reason", "served_model", "refusal", "reasoning")


def _scored(record: dict[str, Any]) -> Scored:
    """A line of samples.jsonl as the Scored it was written from; ValueError or TypeError, naming the field, for a
    line whose values cannot be one (a number that is a string, NaN or a bool; an id that is no string)."""
    if not isinstance(record, dict):
        raise TypeError("a line is not a JSON object")
    fields = {k: v for k, v in record.items() if k in _SCORED_FIELDS}
    for name in _NUMBER_FIELDS:
        value = fields.get(name)
        if value is not None and (type(value) not in (int, float) or not math.isfinite(value)):
            raise ValueError(f"{name} {str(value)[:40]!r} is not a finite number")
    for name in _TEXT_FIELDS:
        if not isinstance(fields.get(name), str | None):
            raise TypeError(f"{name} is not a string")
    if not isinstance(fields.get("id"), str) or not isinstance(fields.get("prompt", ""), str):
        raise TypeError("id or prompt is not a string")
    shot_ids = fields.get("shot_ids") or ()
    if not isinstance(shot_ids, list | tuple) or not all(isinstance(s, str) for s in shot_ids):
        raise TypeError("shot_ids is not a list of ids")
    fields["shot_ids"] = tuple(shot_ids)
    return Scored(**fields)


def load_run(run_dir: Path) -> Run:
    """Read config.json, samples.jsonl and metrics.json of one run folder."""
    if not os.path.lexists(run_dir):
        raise HarnessError(f"run folder {run_dir} does not exist")
    try:
        config = read_run_json(run_dir, "config.json")  # FIFO-safe, regular files only (manifest.py)
        data = read_run_file(run_dir, "samples.jsonl")  # bytes: checked against manifest.json as read
        # Lines end in "\n" only: json.dumps(ensure_ascii=False) leaves U+2028 and the like inside strings.
        records = [json.loads(line) for line in data.decode("utf-8").split("\n") if line.strip()]
        metrics_path = run_dir / "metrics.json"
        stored = read_run_json(run_dir, "metrics.json") if metrics_path.exists() else {}
        run = _run(run_dir, config, records, stored)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)  # never "[Errno 22] ..." before it
        raise HarnessError(f"{run_dir} is not a readable run folder: {why}") from None
    return dataclasses.replace(run, integrity=check(run_dir, data, config))


def written_run(
    run_dir: Path,
    config: dict[str, Any],
    records: Sequence[dict[str, Any]],
    metrics: dict[str, Any],
    samples: Sequence[Scored] | None = None,
) -> Run:
    """The Run that load_run would read back from a folder the runner just wrote, without reading it: config.json
    and metrics.json go through JSON as they did on their way to disk; `records` are the dicts samples.jsonl's
    lines were dumped from, which JSON gives back equal (shot_ids as a list, made a tuple as load_run does).
    `samples`: the Scored those records were made from (results/write.py sample_record), which are what
    load_run builds from them, field for field; given, they are used as they are instead of being built again."""
    config = _via_json(config)
    scored = tuple(samples) if samples is not None else tuple(_scored(r) for r in records)
    return Run(run_dir, config, scored, _via_json(metrics), _extras(records, config))


def _via_json(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(json.dumps(obj, ensure_ascii=False, default=str)))  # default=str: as write_run writes


def _run(run_dir: Path, config: dict[str, Any], records: Sequence[dict[str, Any]], stored: dict[str, Any]) -> Run:
    return Run(run_dir, config, tuple(_scored(r) for r in records), stored, _extras(records, config))


def _extras(records: Sequence[dict[str, Any]], config: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    label_range = (float(config["label_range"][0]), float(config["label_range"][1]))
    return tuple({k: r.get(k) for k in EXTRA_FIELDS} | {"reason": reason_of(r, label_range)} for r in records)


def expand(paths: Sequence[Path]) -> list[Path]:
    """Run folders from run folders, sweep folders and folders of them (e.g. results/), in order, each once."""
    out: list[Path] = []
    for p in paths:
        if (p / "sweep.json").is_file():
            out += sweep_run_dirs(p)
        elif (p / "config.json").is_file():
            out.append(p)
        elif p.is_dir() and (found := _runs_in(p)):
            out += found
        elif not os.path.lexists(p):
            raise HarnessError(f"{p} does not exist")
        else:
            raise HarnessError(
                f"{p} is neither a run folder (config.json), a sweep folder (sweep.json) nor a folder holding them"
            )
    seen: dict[Path, Path] = {}
    for p in out:
        seen.setdefault(p.resolve(), p)
    return list(seen.values())


def _runs_in(folder: Path) -> list[Path]:
    """Finished run folders directly inside a folder (sorted by name); staging folders (.name) left out."""
    return sorted(
        d
        for d in folder.iterdir()
        if d.is_dir()
        and not d.name.startswith(".")
        and (d / "config.json").is_file()
        and (d / "samples.jsonl").is_file()
    )


def sweep_run_dirs(sweep_dir: Path) -> list[Path]:
    """The run folders a sweep.json lists, resolved beside the sweep folder."""
    try:
        record = read_run_json(sweep_dir, "sweep.json")
        return [sweep_dir.parent / c["run_dir"] for c in record["cells"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise HarnessError(f"{sweep_dir}/sweep.json is unreadable: {e}") from None


def finished_runs(results_dir: Path) -> dict[str, Path]:
    """config_hash -> the newest run folder under results_dir that finished (metrics written, no failed requests)
    and was not altered since (manifest.json): an altered one is run again, not reused."""
    found: dict[str, list[Path]] = {}
    if not results_dir.is_dir():
        return {}
    for config_path in sorted(results_dir.glob("*/config.json")):  # run ids end in a timestamp: newest last
        run_dir = config_path.parent
        if run_dir.name.startswith("."):
            continue  # a folder still being staged
        try:
            config = read_run_json(run_dir, "config.json")
            metrics = read_run_json(run_dir, "metrics.json")
        except (OSError, ValueError):
            continue  # not a finished run folder
        if metrics.get("dry_run") or metrics.get("errors", 0) or "config_hash" not in config:
            continue  # a dry run answered nothing; failed requests deserve a retry
        found.setdefault(config["config_hash"], []).append(run_dir)
    return {h: d for h, dirs in found.items() if (d := _newest_intact(dirs)) is not None}


def _newest_intact(run_dirs: list[Path]) -> Path | None:
    for run_dir in reversed(run_dirs):
        try:
            config = read_run_json(run_dir, "config.json")
            if check(run_dir, read_run_file(run_dir, "samples.jsonl"), config).status != ALTERED:
                return run_dir
        except (OSError, ValueError):
            continue  # unreadable: not reusable
    return None
