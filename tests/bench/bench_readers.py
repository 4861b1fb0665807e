"""Time every reply reader on hostile replies of 1 MB (issue 30): `--constrain`'s, `reannotate`'s JSON reader and
`errors`' embedding reader, on braces, brackets nested past the json module's limit, unterminated strings, long
integers and prose with an object at its end. Each must read any reply in well under a second, and never raise.
Not collected by pytest (no wall-clock assertions in unit tests): prints one line per reply and reader, wall-clock
and CPU time (the CPU time is the fairer figure on a loaded machine)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from the checkout: import harness from here

from harness.scoring.constrained import parse_constrained
from harness.scoring.reannotation import read_rating
from harness.variants.error_id import vector_from


def replies(size: int) -> dict[str, str]:
    return {
        "braces {{{": "{" * size,
        'keys {"a":{"a":': '{"a":' * (size // 5),
        'empty keys {"":{"":': '{"":' * (size // 4),
        "brackets [[[": "[" * size,
        "brackets then an object": "[" * (size - 13) + '{"rating": 4}',
        'an unterminated key {"{{{': '{"' + "{" * size,
        'arrays in objects {"a":[': '{"a":[' * (size // 6),
        'open strings {"a":"': '{"a":"' * (size // 6),
        'failing objects {"a"x': '{"a"x' * (size // 5),
        'chained {"a":[0],"b":': '{"a":[0],"b":' * (size // 14),
        "prose, then the object": "word " * (size // 5) + '{"rating": 5, "justification": "ok"}',
        "digits": "9" * size,
        "a list of numbers": "[" + "0.5, " * (size // 5) + "1]",
    }


READERS: dict[str, Callable[[str], object]] = {
    "constrained": parse_constrained,
    "reannotate": lambda text: read_rating(text).status,
    "embedding": lambda text: None if vector_from(text) is None else "vector",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1_000_000, help="characters per reply (default: 1 MB)")
    size = parser.parse_args().size
    worst = worst_cpu = 0.0
    for name, text in replies(size).items():
        cells = []
        for reader, read in READERS.items():
            t, cpu = time.perf_counter(), time.process_time()
            got = read(text)
            took, used = time.perf_counter() - t, time.process_time() - cpu
            worst, worst_cpu = max(worst, took), max(worst_cpu, used)
            cells.append(f"{reader} {took:.3f}s wall {used:.3f}s CPU ({got})")
        print(f"{name:32s} {len(text) / 1e6:.2f} MB  " + "  ".join(cells))
    print(f"slowest read: {worst:.3f}s wall, {worst_cpu:.3f}s CPU")


if __name__ == "__main__":
    main()
