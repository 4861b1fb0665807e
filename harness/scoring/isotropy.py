"""Isotropy of an embedding set: Durdy et al. (2023)'s I_iso approximation, as Zhang et al. (2025, App. C, eq. 5)
report it (Table 2 / Table 9): k random unit directions u_i, F(u) = sum_j exp(e_j . u) over the unit-normalised
embeddings e_j, I_iso = min_i F(u_i) / max_i F(u_i). 1 means no preferred direction, 0 a strong one."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

DIRECTIONS = 1000  # Zhang et al. 2025, App. C: "We use k = 1000 random directions"


def random_directions(dim: int, k: int = DIRECTIONS, seed: int = 0) -> np.ndarray:
    """k directions drawn uniformly from the unit sphere S^(dim-1): normalised standard normal draws, seeded."""
    g = np.random.default_rng(seed).standard_normal((k, dim))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def isotropy(embeddings: ArrayLike, k: int = DIRECTIONS, seed: int = 0) -> float | None:
    """I_iso of the rows of `embeddings` (each normalised to unit length first, as eq. 5 asks); None for no rows
    or a zero row (no direction to normalise)."""
    e = np.asarray(embeddings, dtype=float)
    if e.ndim != 2 or len(e) == 0:
        return None
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    if not np.all(norms > 0):
        return None
    e = e / norms
    u = random_directions(e.shape[1], k, seed)
    # log F(u) by log-sum-exp: the ratio exp(log F_min - log F_max) never overflows, whatever n is
    logits = e @ u.T  # (n, k): e_j . u_i, each in [-1, 1]
    top = logits.max(axis=0)
    log_f = top + np.log(np.exp(logits - top).sum(axis=0))
    return float(np.exp(log_f.min() - log_f.max()))
