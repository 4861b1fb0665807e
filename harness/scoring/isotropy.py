"""Isotropy of an embedding set: Durdy et al. (2023)'s I_iso approximation, as Zhang et al. (2025, App. C, eq. 5)
report it (Table 2 / Table 9): k random unit directions u_i, F(u) = sum_j exp(e_j . u) over the unit-normalised
embeddings e_j, I_iso = min_i F(u_i) / max_i F(u_i). 1 means no preferred direction, 0 a strong one.

One draw of 1,000 directions moves I_iso by about 0.01 between seeds, as much as differences one would read into
it: `isotropy_draws` reports the mean and standard deviation over DRAWS seeded draws. `cosine_to_mean` is App. C's
other measure (Table 8): each embedding's cosine with the set's mean vector, its mean and standard deviation."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

DIRECTIONS = 1000  # Zhang et al. 2025, App. C: "We use k = 1000 random directions"
DRAWS = 10  # seeded draws of the directions (seeds 0..9): ours, the paper reports one value


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


def isotropy_draws(embeddings: ArrayLike, draws: int = DRAWS, k: int = DIRECTIONS) -> dict[str, float | int] | None:
    """I_iso over `draws` draws of k directions (seeds 0 .. draws-1): mean, sample standard deviation (ddof 1;
    0 for one draw) and the number of draws; None where `isotropy` has none."""
    values = [isotropy(embeddings, k, seed) for seed in range(draws)]
    if any(v is None for v in values):
        return None
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "sd": float(arr.std(ddof=1)) if draws > 1 else 0.0, "draws": draws}


def cosine_to_mean(embeddings: ArrayLike) -> dict[str, float] | None:
    """Zhang et al. 2025, App. C (Table 8): mu = (1/n) sum x_i over the embeddings as they are, then cos(x_i, mu)
    for each; the mean and standard deviation of those cosines (the paper does not say which standard deviation:
    the sample one, ddof 1). A distribution peaked near 1 is anisotropic. None for fewer than two rows, a zero row
    or a zero mean."""
    x = np.asarray(embeddings, dtype=float)
    if x.ndim != 2 or len(x) < 2:
        return None
    mu = x.mean(axis=0)
    rows = np.linalg.norm(x, axis=1)
    if not np.all(rows > 0) or np.linalg.norm(mu) <= 1e-12 * rows.max():  # a mean of rounding noise has no direction
        return None
    norms = rows * np.linalg.norm(mu)
    cos = (x @ mu) / norms
    return {"mean": float(cos.mean()), "sd": float(cos.std(ddof=1))}
