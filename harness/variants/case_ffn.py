"""The CASE projection (Zhang et al. 2025, §3.2 and §4): a feed-forward layer g trained on frozen embeddings so
that cos(g(e1), g(e2)) fits the human rating (eq. 2), in a Siamese bi-encoder (both sides share g).

  linear     z = W e                              (eq. 3; Table 7: best without dropout)
  nonlinear  z = Dropout(LeakyReLU(W' e)), p=0.15 (eq. 4; Table 7's best: one layer, LeakyReLU, 15% dropout)

Adam, learning rate 1e-3, batch size 512 (§4). Choices the paper leaves open, ours: no bias (eqs. 3, 4 have none),
the ratings mapped linearly onto [0, 1] (eq. 2 sets a cosine against r; 1-5 is out of a cosine's reach), the
squared error averaged over the batch, one epoch = one seeded shuffle of the training pairs, and the epoch with the
best validation Spearman kept ("Hyperparameters are tuned on a held-out validation set").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.scoring.metrics import spearman

FFN_KINDS = ("linear", "nonlinear")
LEARNING_RATE = 1e-3  # §4
BATCH_SIZE = 512  # §4
DROPOUT = {"linear": 0.0, "nonlinear": 0.15}  # Appendix B / Table 7


@dataclass(frozen=True)
class Pairs:
    """Both sides' input vectors of n labelled pairs (rows aligned), labels on the dataset's scale."""

    a: np.ndarray
    b: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class Trained:
    kind: str
    seed: int
    best_epoch: int  # 1-based
    val_spearman: float | None  # ×100, at best_epoch
    curve: tuple[float | None, ...]  # validation Spearman after each epoch
    n_params: int
    weights: bytes = field(repr=False)  # safetensors
    sha256: str = ""
    state: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _model(kind: str, dim_in: int, dim_out: int) -> Any:
    import torch.nn as nn

    layer = nn.Linear(dim_in, dim_out, bias=False)
    if kind == "linear":
        return nn.Sequential(layer)
    return nn.Sequential(layer, nn.LeakyReLU(), nn.Dropout(DROPOUT[kind]))


def _cosines(model: Any, a: Any, b: Any) -> Any:
    import torch.nn.functional as F

    return F.cosine_similarity(model(a), model(b), dim=1)


def train(
    kind: str, train_pairs: Pairs, val: Pairs, label_range: tuple[float, float], dim: int, epochs: int, seed: int
) -> Trained:
    """Train g on train_pairs, keep the epoch whose validation Spearman is highest (the first, on ties)."""
    import torch
    from safetensors.torch import save

    if kind not in FFN_KINDS:
        raise ValueError(f"unknown FFN {kind!r}")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    lo, hi = label_range
    xa, xb = torch.tensor(train_pairs.a, dtype=torch.float32), torch.tensor(train_pairs.b, dtype=torch.float32)
    target = torch.tensor((train_pairs.labels - lo) / (hi - lo), dtype=torch.float32)
    va, vb = torch.tensor(val.a, dtype=torch.float32), torch.tensor(val.b, dtype=torch.float32)
    model = _model(kind, xa.shape[1], dim)
    optimiser = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    best: tuple[float, int, dict[str, Any]] | None = None
    curve: list[float | None] = []
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(xa), generator=generator)
        for start in range(0, len(order), BATCH_SIZE):
            idx = order[start : start + BATCH_SIZE]
            loss = ((_cosines(model, xa[idx], xb[idx]) - target[idx]) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        model.eval()
        with torch.no_grad():
            rho = spearman(_cosines(model, va, vb).numpy().tolist(), val.labels.tolist())
        curve.append(rho)
        if rho is not None and (best is None or rho > best[0]):
            best = (rho, epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
    if best is None:  # every epoch undefined (constant predictions): keep the last
        best = (float("nan"), epochs, {k: v.detach().clone() for k, v in model.state_dict().items()})
    rho, epoch, state = best
    # No metadata: safetensors writes its keys in no fixed order, and the same weights must hash the same
    # (kind, seed and epoch are in metrics.json beside the hash).
    weights = save(state)
    n_params = sum(int(v.numel()) for v in state.values())
    return Trained(
        kind,
        seed,
        epoch,
        None if np.isnan(rho) else rho,
        tuple(curve),
        n_params,
        weights,
        hashlib.sha256(weights).hexdigest(),
        state,
    )


def project_cosines(trained: Trained, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(g(a), g(b)) per row, with the kept weights (eval mode: no dropout)."""
    import torch

    model = _model(trained.kind, a.shape[1], next(iter(trained.state.values())).shape[0])
    model.load_state_dict(trained.state)
    model.eval()
    with torch.no_grad():
        out = _cosines(model, torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
    return np.asarray(out.numpy(), dtype=float)
