"""One folder per run: config.json, samples.jsonl, metrics.json (and test_predictions.json), written atomically."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.results.claims import Claim, claim
from harness.results.stage import staged, umask
from harness.types import Scored

__all__ = ["Claim", "claim", "make_run_id", "read_samples", "sample_record", "write_atomic", "write_run"]


def make_run_id(dataset: str, split: str, model: str, shots: int, prompt: str, when: datetime | None = None) -> str:
    """Readable and sortable: csts-validation-gpt-4-k4-long-20261122-134501."""
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{dataset}-{split}-{model}-k{shots}-{prompt}")
    return f"{safe}-{stamp}"


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False, default=str) + "\n"


_FIELDS = tuple(f.name for f in dataclasses.fields(Scored))


def sample_record(s: Scored) -> dict[str, Any]:
    """One samples.jsonl line as a dict: dataclasses.asdict's result, without its deep copy of every value
    (a sample's values are strings, numbers and one flat usage dict, copied here)."""
    # A frozen dataclass's __init__ sets its fields in declaration order and nothing else can be set, so the
    # instance dict is the fields in order (a test holds it to _FIELDS): a copy of it, not a getattr per field.
    record = dict(vars(s))
    record["shot_ids"] = list(s.shot_ids)
    if s.usage is not None:
        record["usage"] = dict(s.usage)
    if s.expected is None and s.expected_mass is None:  # --scoring expected only: parsed runs keep their layout
        del record["expected"], record["expected_mass"]
    if s.reasoning is None:  # a thought only where the reply had one: plain runs keep their layout
        del record["reasoning"]
    return record


def write_atomic(path: Path, text: str) -> None:
    """Write beside the target and rename over it, so a reader never sees half a file (with the user's mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600; a plain open() would have given this
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(
    results_dir: Path,
    run_id: str,
    config: Mapping[str, Any],
    samples: Iterable[Scored],
    metrics: Mapping[str, Any] | None,
    test_predictions: Mapping[str, float] | None = None,
    extra_files: Mapping[str, str] | None = None,
    claimed: Claim | None = None,
    records: list[dict[str, Any]] | None = None,
) -> Path:
    """Stage the whole folder, then rename it onto the folder claimed at the start: a killed run leaves no
    half-written results. Without `claimed`, the folder is claimed now (and must be free). `records`, when
    given, receives each sample's record as it went into samples.jsonl (read back without the file)."""
    claimed = claimed or claim(results_dir, run_id, explicit=True)
    with staged(claimed) as staging:
        (staging / "config.json").write_text(_json(config), encoding="utf-8")
        with open(staging / "samples.jsonl", "w", encoding="utf-8") as f:
            dumps = _line_encoder()
            for s in samples:
                record = sample_record(s)
                f.write(dumps(record) + "\n")
                if records is not None:
                    records.append(record)
        if metrics is not None:
            (staging / "metrics.json").write_text(_json(metrics), encoding="utf-8")
        if test_predictions is not None:
            (staging / "test_predictions.json").write_text(json.dumps(test_predictions) + "\n", encoding="utf-8")
        for name, text in (extra_files or {}).items():  # e.g. answers.jsonl of the qa variants
            (staging / name).write_text(text, encoding="utf-8")
    return claimed.final


def _line_encoder() -> Callable[[dict[str, Any]], str]:
    """json.dumps(record, ensure_ascii=False), the same text: json's C encoder made once and called straight, not
    JSONEncoder.encode, which builds a new one (and a dict of seen ids) per call; that was half of a small line's
    cost, and a grid writes 25,000 of them. Records come from sample_record and hold no cycles (no id check)."""
    base = json.JSONEncoder(ensure_ascii=False)
    make = json.encoder.c_make_encoder  # type: ignore[attr-defined]
    if make is None:  # a Python without the _json accelerator
        return base.encode
    seps = (base.key_separator, base.item_separator)
    encode = make(None, base.default, json.encoder.encode_basestring, None, *seps, False, False, True)
    return lambda record: "".join(encode(record, 0))


def read_samples(run_dir: Path) -> list[dict[str, Any]]:
    """samples.jsonl of a finished run, for re-scoring and reports without calling a model."""
    with open(run_dir / "samples.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
