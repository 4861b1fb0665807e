"""I_iso (Durdy et al. 2023, as Zhang et al. 2025 App. C eq. 5 use it) against closed forms and scipy's logsumexp."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from harness.scoring.isotropy import cosine_to_mean, isotropy, isotropy_draws, random_directions


def test_four_axis_points_in_the_plane_match_the_closed_form() -> None:
    # E = {±e1, ±e2}: F(u) = 2cosh(u1) + 2cosh(u2), largest on an axis (2cosh 1 + 2), smallest on a diagonal
    # (4cosh(1/√2)); 1,000 directions on the circle come within a fraction of a degree of both.
    e = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    expected = 4 * math.cosh(1 / math.sqrt(2)) / (2 * math.cosh(1.0) + 2)
    assert isotropy(e) == pytest.approx(expected, abs=1e-5)


def test_one_repeated_vector_is_as_anisotropic_as_the_circle_allows() -> None:
    # every e_j = e: F(u) = n exp(e.u), so I_iso = exp(min e.u - max e.u) -> exp(-2) for dense directions
    e = np.tile([[0.6, 0.8]], (7, 1))
    assert isotropy(e) == pytest.approx(math.exp(-2.0), rel=1e-4)


def test_equals_a_direct_computation_with_scipy_on_the_same_directions() -> None:
    rng = np.random.default_rng(3)
    e = rng.standard_normal((50, 16)) * 3.0  # not unit length: eq. 5 normalises first
    unit = e / np.linalg.norm(e, axis=1, keepdims=True)
    u = random_directions(16, 1000, seed=5)
    log_f = logsumexp(unit @ u.T, axis=0)
    assert isotropy(e, 1000, seed=5) == pytest.approx(float(np.exp(log_f.min() - log_f.max())), rel=1e-12)
    assert np.allclose(np.linalg.norm(u, axis=1), 1.0) and u.shape == (1000, 16)


def test_no_rows_or_a_zero_row_has_no_isotropy() -> None:
    assert isotropy(np.zeros((0, 4))) is None
    assert isotropy(np.array([[1.0, 0.0], [0.0, 0.0]])) is None


def test_draws_report_the_mean_and_sd_of_independently_drawn_directions() -> None:
    """Against a computation by hand: each draw's directions from numpy's Generator (seed s, normalised normals),
    F by a plain sum of exponentials in float64 (no log-sum-exp), mean and sample sd with statistics."""
    import statistics

    rng = np.random.default_rng(11)
    e = rng.standard_normal((40, 8)) + np.array([2.0] + [0.0] * 7)  # a preferred direction: I_iso well below 1
    unit = e / np.linalg.norm(e, axis=1)[:, None]
    by_hand = []
    for seed in range(5):
        g = np.random.default_rng(seed).standard_normal((300, 8))
        u = g / np.linalg.norm(g, axis=1)[:, None]
        f = np.array([sum(math.exp(float(x @ d)) for x in unit) for d in u])
        by_hand.append(f.min() / f.max())
    got = isotropy_draws(e, draws=5, k=300)
    assert got is not None and got["draws"] == 5
    assert got["mean"] == pytest.approx(statistics.mean(by_hand), rel=1e-10)
    assert got["sd"] == pytest.approx(statistics.stdev(by_hand), rel=1e-8) and got["sd"] > 0
    assert isotropy_draws(np.zeros((0, 3))) is None


def test_cosine_to_the_mean_vector_is_table_8_s_measure() -> None:
    """App. C: mu the mean of the embeddings as they are (not normalised first), cos(x_i, mu) for each; checked
    against scipy's cosine distance row by row."""
    import statistics

    from scipy.spatial.distance import cosine

    rng = np.random.default_rng(4)
    x = rng.standard_normal((30, 6)) * rng.uniform(0.5, 3.0, (30, 1)) + 1.0  # rows of unequal length
    mu = [sum(row[j] for row in x) / len(x) for j in range(6)]
    cosines = [1.0 - cosine(row, mu) for row in x]
    got = cosine_to_mean(x)
    assert got is not None
    assert got["mean"] == pytest.approx(statistics.mean(cosines), rel=1e-12)
    assert got["sd"] == pytest.approx(statistics.stdev(cosines), rel=1e-10)
    normalised_first = x / np.linalg.norm(x, axis=1, keepdims=True)  # would give another mean vector
    assert cosine_to_mean(normalised_first)["mean"] != pytest.approx(got["mean"], rel=1e-6)  # type: ignore[index]
    assert cosine_to_mean(x[:1]) is None and cosine_to_mean(np.vstack([x[:2], -x[:2]])) is None  # zero mean
