"""EWMA normaliser of value targets, as in the Achievement Distillation code (`NormalizeEwma`).

The value head predicts targets in normalised units; the normaliser tracks a debiased
exponential moving mean and mean-square of the raw targets (decay 0.99, paper Table 9)
so that returns of any scale give unit-scale regression targets.
"""

from __future__ import annotations

import torch
from torch import nn

_DEBIAS_MIN = 1e-2  # clamp of the debiasing term before any update (AD's epsilon)
_VAR_MIN = 1e-2  # variance floor (AD's value)


class EwmaNormalizer(nn.Module):
    """Running mean/variance with debiased EWMA; statistics are buffers. Scalar for a run
    alone; with `size` W, a cohort's W normalisers side by side, each seed's batch a row."""

    def __init__(self, decay: float = 0.99, size: int | None = None):
        super().__init__()
        self.decay = decay
        shape = () if size is None else (size,)
        self.register_buffer("mean_ewma", torch.zeros(shape))
        self.register_buffer("mean_sq_ewma", torch.zeros(shape))
        self.register_buffer("debias", torch.zeros(shape))

    def stats(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.mean_ewma, self.mean_sq_ewma, self.debias

    def update(self, x: torch.Tensor) -> None:
        """Fold one batch of raw targets (any shape; stacked: (W, n)) into the statistics."""
        x, decay = x.detach().to(self.mean_ewma.dtype), self.decay
        if self.debias.dim():  # stacked: a row per seed
            mean, sq_mean = x.mean(1), (x**2).mean(1)
        else:
            mean, sq_mean = x.mean(), (x**2).mean()
        self.mean_ewma.mul_(decay).add_(mean * (1 - decay))
        self.mean_sq_ewma.mul_(decay).add_(sq_mean * (1 - decay))
        self.debias.mul_(decay).add_(1 - decay)

    def mean_std(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The debiased mean and standard deviation (stacked: (W, 1) each)."""
        debias = self.debias.clamp(min=_DEBIAS_MIN)
        mean = self.mean_ewma / debias
        std = (self.mean_sq_ewma / debias - mean**2).clamp(min=_VAR_MIN).sqrt()
        return (mean[:, None], std[:, None]) if mean.dim() else (mean, std)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return (x - mean) / std

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return x * std + mean
