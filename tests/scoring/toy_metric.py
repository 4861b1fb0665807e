"""A toy metric for tests/scoring/test_new_metric.py, added as docs/extending.md says: a function of the labelled
answers' predictions and labels, and one entry in harness/scoring/metrics.py METRICS (the test adds it)."""

from __future__ import annotations

import math

import numpy as np


def kendall_tau_b(pred: np.ndarray, gold: np.ndarray) -> float | None:
    """Kendall's tau-b x100 by counting pairs (ties in either side dropped from its term); None when undefined."""
    concordant = discordant = ties_pred = ties_gold = 0
    n = len(pred)
    for i in range(n):
        for j in range(i + 1, n):
            dp, dg = np.sign(pred[i] - pred[j]), np.sign(gold[i] - gold[j])
            if dp == 0 and dg == 0:
                continue
            if dp == 0:
                ties_pred += 1
            elif dg == 0:
                ties_gold += 1
            elif dp == dg:
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_pred) * (concordant + discordant + ties_gold))
    return 100.0 * (concordant - discordant) / denominator if denominator else None
