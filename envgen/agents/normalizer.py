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


def ewma_fold(
    stats: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    batch_mean: torch.Tensor,
    batch_sq_mean: torch.Tensor,
    decay: float,
) -> None:
    """Fold a batch's mean and mean square into (mean_ewma, mean_sq_ewma, debias), in
    place: the one EWMA update of a run alone's normaliser and a cohort's W of them."""
    mean_ewma, mean_sq_ewma, debias = stats
    mean_ewma.mul_(decay).add_(batch_mean * (1 - decay))
    mean_sq_ewma.mul_(decay).add_(batch_sq_mean * (1 - decay))
    debias.mul_(decay).add_(1 - decay)


def ewma_mean_std(
    stats: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """The debiased mean and standard deviation of `ewma_fold`'s statistics."""
    mean_ewma, mean_sq_ewma, debias = stats
    debias = debias.clamp(min=_DEBIAS_MIN)
    mean = mean_ewma / debias
    var = (mean_sq_ewma / debias - mean**2).clamp(min=_VAR_MIN)
    return mean, var.sqrt()


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
        x = x.detach().to(self.mean_ewma.dtype)
        if self.mean_ewma.dim():
            ewma_fold(self.stats(), x.mean(1), (x**2).mean(1), self.decay)
        else:
            ewma_fold(self.stats(), x.mean(), (x**2).mean(), self.decay)

    def mean_std(self) -> tuple[torch.Tensor, torch.Tensor]:
        mean, std = ewma_mean_std(self.stats())
        return (mean[:, None], std[:, None]) if mean.dim() else (mean, std)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return (x - mean) / std

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.mean_std()
        return x * std + mean
