"""Strict JSON for run files: no NaN or Infinity literal ever reaches metrics.json or samples.jsonl (issue 30).

Python's json writes `NaN` and `Infinity`, which JSON does not have: strict readers (jq, JavaScript, most
languages' parsers) refuse the whole file, and a NaN that reaches a ranking sorts highest. A number that could not
be computed is written as null, and the file says which: metrics.json's `non_finite_note`, a sample's
`non_finite` list of field names.
"""

from __future__ import annotations

import json
import math
from typing import Any

NOTE = "non_finite_note"


def dumps(obj: Any, **kwargs: Any) -> str:
    """json.dumps with allow_nan=False; non-finite floats become null (the caller notes where: `finite`)."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError:  # NaN or infinity somewhere
        return json.dumps(finite(obj)[0], allow_nan=False, **kwargs)


def finite(obj: Any, path: str = "") -> tuple[Any, list[str]]:
    """(`obj` with every non-finite float made None, the paths of those values: "a.b[2]")."""
    if isinstance(obj, float):
        return (obj, []) if math.isfinite(obj) else (None, [path or "(value)"])
    if isinstance(obj, dict):
        out, paths = {}, []
        for k, v in obj.items():
            out[k], found = finite(v, f"{path}.{k}" if path else str(k))
            paths += found
        return out, paths
    if isinstance(obj, list | tuple):
        items = [finite(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        return [v for v, _ in items], [p for _, found in items for p in found]
    return obj, []


def noted_metrics(metrics: Any) -> Any:
    """metrics.json's content with non-finite numbers as null and a note naming them."""
    if not isinstance(metrics, dict):
        return finite(metrics)[0]
    clean, paths = finite(metrics)
    if paths:
        clean[NOTE] = f"not computable (NaN or infinite), written as null: {', '.join(paths)}"
    return clean


def sample_line(record: dict[str, Any]) -> str:
    """A samples.jsonl line: non-finite numbers as null and `non_finite` naming the fields (walked only then)."""
    try:
        return json.dumps(record, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError:
        clean, paths = finite(record)
        return json.dumps(clean | {"non_finite": paths}, ensure_ascii=False, allow_nan=False, default=str)
