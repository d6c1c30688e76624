"""Policy/value networks: the paper's IMPALA-style ResNet and a small strided CNN.

The IMPALA layout is Moon et al. 2023's (Achievement Distillation, `impala_cnn.py`,
`model/ppo.py`), which EnvGen uses (docs/paper.md, "Agent and training protocol"): each
stack is [GroupNorm(1)] -> conv3x3 -> ReLU -> maxpool 3/2 -> GroupNorm(1) -> residual
blocks of two (GroupNorm(1) -> conv3x3 -> ReLU), the first conv seeing raw [0, 1] pixels
without a norm; then LayerNorm -> Linear(256) -> ReLU. Normalised layers carry no bias.
EnvGen moves AD's LayerNorm from before the last Linear(256 -> 1024) to after it. Weights
use AD's fan-in init (each output unit's weight vector scaled to a fixed norm); heads are
orthogonal with gain 0.01 (policy) and 0.1 (value).
"""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

from envgen import numerics
from envgen.agents.config import ModelConfig
from envgen.agents.normalizer import EwmaNormalizer

OBS_SHAPE = (64, 64, 3)  # Crafter's image observation, HWC uint8


def _fan_in_init(layer: nn.Conv2d | nn.Linear, scale: float) -> nn.Module:
    """Scale each output unit's weight vector to L2 norm `scale`; zero the bias."""
    with torch.no_grad():
        w = layer.weight
        w.mul_(scale / w.flatten(1).norm(dim=1).view(-1, *[1] * (w.ndim - 1)))
        if layer.bias is not None:
            layer.bias.zero_()
    return layer


class _NormConvReLU(nn.Sequential):
    """[GroupNorm(1)] -> conv3x3 -> ReLU; the conv has a bias only when unnormalised."""

    def __init__(self, cin: int, cout: int, scale: float, norm: bool = True):
        layers: list[nn.Module] = [nn.GroupNorm(1, cin)] if norm else []
        conv = nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=not norm)
        super().__init__(*layers, _fan_in_init(conv, scale), nn.ReLU())


class _ResidualBlock(nn.Module):
    def __init__(self, channels: int, scale: float):
        super().__init__()
        s = math.sqrt(scale)  # two layers share the block's scale
        self.body = nn.Sequential(
            _NormConvReLU(channels, channels, s), _NormConvReLU(channels, channels, s)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class _DownStack(nn.Sequential):
    def __init__(self, cin: int, cout: int, blocks: int, scale: float, first_norm: bool):
        super().__init__(
            _NormConvReLU(cin, cout, 1.0, norm=first_norm),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
            nn.GroupNorm(1, cout),
            *(_ResidualBlock(cout, scale / math.sqrt(blocks)) for _ in range(blocks)),
        )


class ImpalaEncoder(nn.Module):
    """(N, 3, 64, 64) in [0, 1] -> (N, embed_size): residual conv stacks, then a dense layer."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        stacks, cin, side = [], OBS_SHAPE[2], OBS_SHAPE[0]
        for i, cout in enumerate(cfg.channels):
            scale = 1 / math.sqrt(len(cfg.channels))
            stacks.append(_DownStack(cin, cout, cfg.blocks_per_stack, scale, first_norm=i > 0))
            cin, side = cout, (side + 1) // 2
        flat = cin * side * side
        self.stacks = nn.Sequential(*stacks)
        self.dense = nn.Sequential(
            nn.Flatten(),
            nn.LayerNorm(flat),
            _fan_in_init(nn.Linear(flat, cfg.embed_size, bias=False), 1.4),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense(self.stacks(x))


def conv_as_gemm(x: torch.Tensor, conv: nn.Conv2d) -> torch.Tensor:
    """`conv` (no padding, no dilation) over an NHWC input as one im2col and one GEMM:
    (N, H, W, C) -> (N, OH, OW, out_channels), the same function as `conv` on NCHW. With
    oneDNN off (portable numerics, `envgen.numerics`) ATen's convolution runs one small
    GEMM per sample, about half this speed. The patches come out in the weight's (C, KH,
    KW) order, and the sum over them is MKL's (COMPATIBLE branch in portable mode)."""
    kh, kw = conv.kernel_size
    sh, sw = conv.stride
    patches = x.unfold(1, kh, sh).unfold(2, kw, sw)  # (N, OH, OW, C, KH, KW), a view
    n, oh, ow = patches.shape[:3]
    weight = conv.weight.reshape(conv.out_channels, -1)
    out = torch.addmm(conv.bias, patches.reshape(n * oh * ow, -1), weight.t())
    return out.view(n, oh, ow, conv.out_channels)


class NatureEncoder(nn.Module):
    """(N, 3, 64, 64) in [0, 1] -> (N, embed_size): Nature-DQN strided convs 8/4, 4/2, 3/1.
    With portable numerics the convs run as `conv_as_gemm` on NHWC activations
    (`takes_nhwc`): the same parameters and function, another float rounding."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.takes_nhwc = numerics.current() == numerics.PORTABLE
        c1, c2, c3 = cfg.channels
        side = OBS_SHAPE[0]
        for k, s in ((8, 4), (4, 2), (3, 1)):
            side = (side - k) // s + 1
        self.net = nn.Sequential(
            _fan_in_init(nn.Conv2d(OBS_SHAPE[2], c1, 8, stride=4), 1.0),
            nn.ReLU(),
            _fan_in_init(nn.Conv2d(c1, c2, 4, stride=2), 1.0),
            nn.ReLU(),
            _fan_in_init(nn.Conv2d(c2, c3, 3, stride=1), 1.0),
            nn.ReLU(),
            nn.Flatten(),
            _fan_in_init(nn.Linear(c3 * side * side, cfg.embed_size), 1.4),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.takes_nhwc:
            return self.net(x)
        h = x.permute(0, 2, 3, 1)  # channels-last memory: a view, no copy
        for layer in self.net:
            if isinstance(layer, nn.Conv2d):
                h = conv_as_gemm(h, layer)
            elif isinstance(layer, nn.Flatten):
                h = h.permute(0, 3, 1, 2).flatten(1)  # NCHW order, as the Linear was built
            else:
                h = layer(h)
        return h


# Explicit registry: ModelConfig.kind -> encoder class.
ENCODERS: dict[str, type[nn.Module]] = {"impala": ImpalaEncoder, "nature": NatureEncoder}


class ActorCritic(nn.Module):
    """Encoder -> Linear -> LayerNorm -> ReLU -> policy logits and normalised value:
    `forward` maps uint8 observations (N, 64, 64, 3) to log-probabilities (N, num_actions)
    and the value prediction (N,) in the units of `value_norm`."""

    head_inputs = 1  # the heads read this many hidden_size vectors (AD: latent and memory)

    def __init__(self, cfg: ModelConfig, value_norm_decay: float = 0.99):
        super().__init__()
        self.cfg = cfg
        self.encoder = ENCODERS[cfg.kind](cfg)
        self.final = nn.Sequential(
            _fan_in_init(nn.Linear(cfg.embed_size, cfg.hidden_size, bias=False), 1.0),
            nn.LayerNorm(cfg.hidden_size),
            nn.ReLU(),
        )
        self.policy_head = nn.Linear(self.head_inputs * cfg.hidden_size, cfg.num_actions)
        self.value_head = nn.Linear(self.head_inputs * cfg.hidden_size, 1)
        for head, gain in ((self.policy_head, 0.01), (self.value_head, 0.1)):
            nn.init.orthogonal_(head.weight, gain=gain)
            nn.init.zeros_(head.bias)
        self.value_norm = EwmaNormalizer(value_norm_decay)
        if cfg.channels_last:
            self.to(memory_format=torch.channels_last)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = obs.permute(0, 3, 1, 2).float().div_(255.0)  # NHWC view = channels_last strides
        nhwc = self.cfg.channels_last or getattr(self.encoder, "takes_nhwc", False)
        x = x.contiguous(memory_format=torch.channels_last if nhwc else torch.contiguous_format)
        with autocast(x.device, self.cfg.bf16_autocast):
            h = self.final(self.encoder(x))
            logits, value = self.policy_head(h), self.value_head(h)
        return F.log_softmax(logits.float(), dim=-1), value.float().squeeze(-1)


def autocast(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager:
    """bfloat16 autocast on `device` when `enabled`, else nothing (so that devices autocast
    does not know, tests' fake device, run). Its cast cache is off: a CUDA graph (the
    cohort's policy step) must not keep casts made while captured; the numbers are the same."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device.type, torch.bfloat16, cache_enabled=False)
