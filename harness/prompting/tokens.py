"""Count prompt tokens, the same way for --dry-run and for --max-cost's reservations.

OpenAI models get exact counts from tiktoken with the encoding files shipped in `harness/data/tiktoken/`
(tiktoken would otherwise download them on first use, which fails offline). Each file is checked against
the sha256 tiktoken itself pins. Other models get an estimate from the character count.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ENCODINGS_DIR = Path(__file__).parents[1] / "data" / "tiktoken"
# What tiktoken pins for these files (tiktoken_ext/openai_public.py): the shipped copies must match exactly.
SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
# tiktoken_ext/openai_public.py's split patterns and special tokens for the two encodings (frozen by OpenAI;
# tests/test_tokens.py checks them against tiktoken's own constructors).
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_SPECIAL = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}
_PATTERNS = {"cl100k_base": _CL100K_PATTERN, "o200k_base": _O200K_PATTERN}

# Characters per token for models without a tokenizer here (Claude, open models behind a server). Measured
# with cl100k_base on this package's rendered prompts, 100-300 queries each, every instruction, k = 0/4/8:
# C-STS validation 3.8-4.7, STS-B validation 3.4-4.4 characters per token. Claude's and many open models'
# tokenizers split English more finely than cl100k_base, so the estimate assumes 3.0: on the high side,
# which is the safe side for a spending limit.
CHARS_PER_TOKEN = 3.0
# A chat request wraps the prompt in one user message: OpenAI bills 3 tokens per message, 1 for the role
# and 3 to prime the reply (OpenAI cookbook, "How to count tokens with tiktoken").
CHAT_OVERHEAD_TOKENS = 7


def _ranks(name: str) -> dict[bytes, int]:
    data = gzip.decompress((ENCODINGS_DIR / f"{name}.tiktoken.gz").read_bytes())
    if hashlib.sha256(data).hexdigest() != SHA256[name]:
        raise ValueError(f"{name}.tiktoken does not match tiktoken's pinned sha256")
    # tiktoken's own reader (load_tiktoken_bpe) with base64.b64decode's C core called directly: the same bytes
    # for these well-formed lines, without a Python wrapper per token (200,000 of them in o200k_base).
    from binascii import a2b_base64

    return {a2b_base64(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


@functools.cache
def encoding(name: str) -> Any:
    """The tiktoken Encoding `name` built from the shipped file (no download); None if not shipped."""
    if name not in SHA256:
        return None
    import tiktoken

    return tiktoken.Encoding(name, pat_str=_PATTERNS[name], mergeable_ranks=_ranks(name), special_tokens=_SPECIAL[name])


def encoding_for(model: str) -> Any:
    """The Encoding tiktoken maps the model name to, when its file is shipped here; else None."""
    try:
        import tiktoken.model

        name = tiktoken.model.encoding_name_for_model(model)
    except (ImportError, KeyError):
        return None
    # gpt-oss's o200k_harmony is o200k_base plus special tokens, which plain prompt text never contains.
    return encoding("o200k_base" if name == "o200k_harmony" else name)


def counter(model: str, overhead: int = 0) -> tuple[Callable[[str], int], str]:
    """(tokens of one prompt, how they are counted); `overhead` tokens are added per request (chat wrapping)."""
    enc = encoding_for(model)
    extra = f", +{overhead} per request for the chat message" if overhead else ""
    if enc is not None:
        return (lambda text: len(enc.encode(text, disallowed_special=())) + overhead), f"tiktoken {enc.name}{extra}"

    def estimate(text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN) + overhead

    return estimate, f"estimate ({CHARS_PER_TOKEN:g} characters per token{extra})"


def count_tokens(texts: Sequence[str], model: str, overhead: int = 0) -> tuple[int, str]:
    """(total tokens, how they were counted): the sum of `counter`'s per-prompt counts."""
    count, method = counter(model, overhead)
    return sum(count(t) for t in texts), method
