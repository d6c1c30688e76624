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
    """Scalar running mean/variance with debiased EWMA; statistics are buffers."""

    def __init__(self, decay: float = 0.99):
        super().__init__()
        self.decay = decay
        self.register_buffer("mean_ewma", torch.zeros(()))
        self.register_buffer("mean_sq_ewma", torch.zeros(()))
        self.register_buffer("debias", torch.zeros(()))

    def update(self, x: torch.Tensor) -> None:
        """Fold one batch of raw targets (any shape) into the running statistics."""
        x = x.detach().to(self.mean_ewma.dtype)
        d = self.decay
        self.mean_ewma.mul_(d).add_(x.mean() * (1 - d))
        self.mean_sq_ewma.mul_(d).add_((x**2).mean() * (1 - d))
        self.debias.mul_(d).add_(1 - d)

    def mean_std(self) -> tuple[torch.Tensor, torch.Tensor]:
        debias = self.debias.clamp(min=_DEBIAS_MIN)
        mean = self.mean_ewma / debias
        var = (self.mean_sq_ewma / debias - mean**2).clamp(min=_VAR_MIN)
        return mean, var.sqrt()

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return (x - mean) / std

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return x * std + mean
