"""I_iso (Durdy et al. 2023, as Zhang et al. 2025 App. C eq. 5 use it) against closed forms and scipy's logsumexp."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from harness.scoring.isotropy import isotropy, random_directions


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
