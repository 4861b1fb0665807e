"""Count prompt tokens for --dry-run: tiktoken where it knows the model and has its encoding, else an estimate."""

from __future__ import annotations

from collections.abc import Sequence

CHARS_PER_TOKEN = 4.0  # OpenAI's rule of thumb for English text


def count_tokens(texts: Sequence[str], model: str) -> tuple[int, str]:
    """(total tokens, how they were counted)."""
    try:
        import tiktoken

        encoding = tiktoken.encoding_for_model(model)
    except Exception:  # unknown model, no tiktoken, or its encoding file cannot be downloaded offline
        total = sum(round(len(t) / CHARS_PER_TOKEN) for t in texts)
        return total, f"estimate ({CHARS_PER_TOKEN:g} characters per token)"
    return sum(len(ids) for ids in encoding.encode_batch(list(texts))), f"tiktoken {encoding.name}"
