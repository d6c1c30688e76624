"""Typed configs of the agents: the network (`ModelConfig`), PPO (`PPOConfig`) and the
auxiliary phase of Achievement Distillation (`ADConfig`).

`PPOConfig`'s defaults are the paper's Table 9 (docs/paper.md, "Agent and training
protocol"), which are also Achievement Distillation's `configs/ppo.yaml`. The model
presets trade the paper's network for ones a CPU can train (docs/agent.md, "Sizes").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import crafter.constants

from envgen.errors import ConfigError
from envgen.input_checks import (
    MAX_COUNT,
    MAX_MEMORY_BYTES,
    at_most,
    check_fields,
    finite,
    rollout_memory_bytes,
    whole_number,
)

if TYPE_CHECKING:
    import argparse

MODEL_KINDS = ("impala", "nature")
AGENTS = ("ppo", "ad")  # the keys of `envgen.agents.trainer.AGENTS`
NUM_ACTIONS = len(crafter.constants.actions)  # 17, from crafter's own data


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Shape of the policy/value network; `kind` picks the encoder in `networks.ENCODERS`."""

    kind: str = "impala"
    """"impala" (residual stacks, the paper's family) or "nature" (strided 3-conv encoder)."""
    channels: tuple[int, ...] = (64, 128, 128)
    """Output channels of each conv stack (impala) or conv layer (nature)."""
    blocks_per_stack: int = 2
    """Residual blocks per impala stack (ignored by nature)."""
    embed_size: int = 256
    """Units of the dense layer after the conv encoder."""
    hidden_size: int = 1024
    """Units of the final linear layer, followed by layer norm (EnvGen's change)."""
    num_actions: int = NUM_ACTIONS
    """Policy head size: Crafter's action count (`envgen.games` sets each game's)."""
    channels_last: bool = False
    """Run convolutions in NHWC memory layout (GPU option; unmeasured on CPU)."""
    bf16_autocast: bool = False
    """Autocast forward passes to bfloat16 on CUDA (GPU option; off = exact float32)."""

    def __post_init__(self) -> None:
        for name in ("blocks_per_stack", "embed_size", "hidden_size", "num_actions"):
            at_most(getattr(self, name), 2**16, f"model.{name}", "units of one layer")
        if any(c > 2**12 for c in self.channels):
            raise ConfigError("model.channels", "at most 4,096 channels per layer")
        if self.kind not in MODEL_KINDS:
            raise ConfigError("model.kind", f"{self.kind!r} is not one of {', '.join(MODEL_KINDS)}")
        if self.kind == "nature" and len(self.channels) != 3:
            raise ConfigError("model.channels", "the nature encoder has exactly 3 conv layers")
        for name in ("blocks_per_stack", "embed_size", "hidden_size", "num_actions"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.{name}", "must be a positive integer")
        if not self.channels or min(self.channels) < 1:
            raise ConfigError("model.channels", "give at least one positive channel count")


# Named presets; `envgen train --model NAME` and `bench train --model NAME` pick one.
MODEL_PRESETS: dict[str, ModelConfig] = {
    "paper": ModelConfig(),  # Moon et al. 2023's network with EnvGen's layer-norm move
    "impala-small": ModelConfig(channels=(16, 32, 32), embed_size=256, hidden_size=256),
    "nature": ModelConfig(kind="nature", channels=(32, 64, 64), embed_size=256, hidden_size=256),
}


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyper-parameters; defaults are the paper's Table 9."""

    gamma: float = 0.95
    """Discount factor."""
    gae_lambda: float = 0.65
    """GAE lambda."""
    num_envs: int = 8
    """Parallel environments per rollout."""
    num_steps: int = 512
    """Steps per environment per rollout (8 x 512 = 4096 transitions)."""
    epochs: int = 3
    """Passes over each rollout."""
    minibatches: int = 8
    """Minibatches per epoch."""
    clip: float = 0.2
    """PPO ratio clip."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    lr: float = 3e-4
    """Adam learning rate (constant, as in the Achievement Distillation code)."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    value_norm_decay: float = 0.99
    """EWMA decay of the value-target normaliser."""
    checkpoint_every: int = 102_400
    """Write a checkpoint every this many global env steps (rounded up to rollouts)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            finite(getattr(self, field.name), f"ppo.{field.name}")
        for name in ("num_envs", "num_steps", "epochs", "minibatches", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"ppo.{name}", "must be a positive integer")
        at_most(self.epochs, MAX_COUNT, "ppo.epochs", "passes over each rollout")
        need = rollout_memory_bytes(self.num_envs, self.num_steps)
        if need > MAX_MEMORY_BYTES:
            raise ConfigError(
                "ppo.num_envs",
                f"{self.num_envs:,} envs x {self.num_steps:,} steps need about "
                f"{need / 2**30:,.0f} GiB for one rollout; the limit is "
                f"{MAX_MEMORY_BYTES // 2**30} GiB (paper: 8 x 512, about 0.06 GiB)",
            )
        if not 0 < self.lr <= 1:
            raise ConfigError("ppo.lr", f"{self.lr!r} must lie in (0, 1] (paper: 3e-4)")
        for name in ("clip", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"ppo.{name}", f"{getattr(self, name)!r} must be > 0")
        for name in ("ent_coef", "vf_coef"):
            if not getattr(self, name) >= 0:
                raise ConfigError(f"ppo.{name}", f"{getattr(self, name)!r} must be >= 0")
        if self.rollout_size % self.minibatches:
            raise ConfigError(
                "ppo.minibatches",
                f"must divide num_envs * num_steps = {self.rollout_size}; pick a divisor",
            )
        for name in ("gamma", "gae_lambda", "value_norm_decay"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"ppo.{name}", "must lie in [0, 1]")

    @property
    def rollout_size(self) -> int:
        """Transitions (global env steps) per rollout."""
        return self.num_envs * self.num_steps

    @property
    def checkpoint_rollouts(self) -> int:
        """Rollouts between checkpoints."""
        return -(-self.checkpoint_every // self.rollout_size)


class PPOOverrides(tuple):
    """The PPO settings a run or profile changes from its game's defaults: sorted (name,
    value) pairs of `PPOConfig` fields, names and types checked when built.

    The one form PPO settings take from a profile (`Profile.ppo`) through the run's
    config (`RunConfig.ppo`, in the run's hash) to the trainer, where `apply` builds the
    only `PPOConfig` made from settings. Overrides, because a run's hash covers what its
    config sets, as given (a value equal to its default counts; `lr: 1` stays the int 1).
    A tuple, so that it stays hashable and pickles to worker processes.
    """

    __slots__ = ()

    def __new__(cls, values: Any = (), section: str = "ppo") -> PPOOverrides:
        if isinstance(values, PPOOverrides):
            return values
        if not isinstance(values, Mapping):
            try:  # (name, value) pairs, as a tuple, list or generator of them
                if isinstance(values, str | bytes):
                    raise TypeError
                values = dict(values or ())
            except (TypeError, ValueError):
                raise ConfigError(
                    section, f"{values!r} is not a mapping of PPO setting: value (e.g. lr: 3e-4)"
                ) from None
        check_fields(PPOConfig, values, f"{section}.")
        return super().__new__(cls, tuple(sorted(values.items())))

    def apply(self, defaults: Mapping[str, Any] | tuple = ()) -> PPOConfig:
        """Table 9's `PPOConfig` with a game's `defaults`, then these overrides, applied;
        a value out of range is a `ConfigError` naming `ppo.<field>`."""
        return PPOConfig(**{**dict(PPOOverrides(defaults)), **dict(self)})

    def to_dict(self) -> dict[str, Any]:
        """{name: value}, as a run's config (and its hash) writes them."""
        return dict(self)


def add_rollout_arguments(parser: argparse.ArgumentParser) -> None:
    """--num-envs, --num-steps and --minibatches: the rollout's shape, as in `PPOConfig`
    (defaults Table 9's), for the commands that train or time a Crafter agent."""
    for name, what in (
        ("num_envs", "parallel envs"),
        ("num_steps", "steps per env per rollout"),
        ("minibatches", "minibatches per epoch"),
    ):
        default = getattr(PPOConfig, name)
        text = f"{what} (default {default}, Table 9)"
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=whole_number(1), default=default, help=text)


def rollout_config(args: argparse.Namespace, **more: Any) -> PPOConfig:
    """The `PPOConfig` of `add_rollout_arguments`' values and `more` (Table 9 elsewhere)."""
    shape = {"num_envs": args.num_envs, "num_steps": args.num_steps}
    return PPOOverrides({**shape, "minibatches": args.minibatches, **more}).apply()


@dataclasses.dataclass(frozen=True)
class ADConfig:
    """Achievement Distillation's auxiliary phase; defaults are the reference's
    `configs/ppo_ad.yaml` and the keyword defaults of its `PPOADModel` / `Buffer`
    (Moon et al. 2023, code snu-mllab/Achievement-Distillation). PPO itself is `PPOConfig`."""

    aux_every: int = 8
    """Run the auxiliary phase after every this many PPO updates (`aux_freq`)."""
    aux_epochs: int = 6
    """Passes over the buffered trajectories per auxiliary phase (`aux_nepoch`)."""
    pi_dist_coef: float = 1.0
    """Weight of KL(new policy || policy before the phase) in both auxiliary losses."""
    vf_dist_coef: float = 1.0
    """Weight of the value regression to the buffered returns in both auxiliary losses."""
    temperature: float = 0.1
    """Softmax temperature of both contrastive losses (`PPOADModel.temperature`)."""
    batch_size: int = 512
    """Largest auxiliary minibatch (`max_batch_size` of the data loaders)."""
    match_partners: int = 16
    """Other trajectories each source trajectory is matched against (`randperm(..)[:16]`)."""
    ot_reg: float = 0.05
    """Entropic regularisation of the partial optimal transport that matches achievements."""
    ot_iters: int = 100
    """Iterations of that transport solver (`numItermax`)."""
    match_threshold: float = 0.5
    """Transport mass above which two achievements count as matched."""
    unlock_reward: float = 0.1
    """A step whose reward exceeds this unlocked an achievement (the reference's test in
    `Buffer.get_goals`; in Crafter only an unlock gives more than +0.1)."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            finite(getattr(self, field.name), f"ad.{field.name}")
        for name in ("pi_dist_coef", "vf_dist_coef", "match_threshold", "unlock_reward"):
            if not getattr(self, name) >= 0:
                raise ConfigError(f"ad.{name}", "must be >= 0")
        for name in ("aux_every", "aux_epochs", "batch_size", "match_partners", "ot_iters"):
            if getattr(self, name) < 1:
                raise ConfigError(f"ad.{name}", "must be a positive integer")
        for name in ("temperature", "ot_reg"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"ad.{name}", "must be > 0")


def model_preset(name: str) -> ModelConfig:
    """The named preset, or a `ConfigError` listing the names."""
    if name not in MODEL_PRESETS:
        raise ConfigError(
            "model", f"unknown preset {name!r}; choose one of {', '.join(MODEL_PRESETS)}"
        )
    return MODEL_PRESETS[name]


def check_groups(size: int, groups: int) -> None:
    """A pipelined cohort's grouping: `groups` divides W, each group at least 2 seeds."""
    if type(groups) is not int or groups < 1:
        raise ConfigError("cohort_groups", f"{groups!r}: a whole number >= 1 (1: not pipelined)")
    if groups > 1 and (size % groups or size // groups < 2):
        raise ConfigError(
            "cohort_groups",
            f"a cohort of {size} splits into {groups} groups only if {groups} divides it "
            "into groups of at least 2 seeds",
        )


COHORT_KERNELS = ("eager", "graph", "compile")
"""How a cohort's PPO update runs (docs/agent.md, "Kernels"): "eager" launches every op
from Python; "graph" replays each minibatch (forward to Adam, its step count on the
device) as one CUDA graph; "compile" also compiles each seed's forward and loss
(torch.compile, inductor) inside the graph. Off CUDA all run uncaptured; on CUDA a failed
capture raises. Each mode rounds differently: part of a run's identity."""


def check_kernels(kernels: str) -> None:
    """A cohort's kernel mode is one of `COHORT_KERNELS`."""
    if kernels not in COHORT_KERNELS:
        raise ConfigError(
            "cohort_kernels", f"{kernels!r}: one of {', '.join(COHORT_KERNELS)} (default eager)"
        )


def check_cohort(size: int, groups: int, kernels: str) -> None:
    """A cohort of `size` seeds with its grouping and kernel mode; both need size above 1
    unless left at their defaults (one group, eager)."""
    if groups != 1:
        if size == 1:
            raise ConfigError("cohort_groups", "pipelines a cohort: set cohort above 1")
        check_groups(size, groups)
    check_kernels(kernels)
    if kernels != "eager" and size == 1:
        raise ConfigError("cohort_kernels", "a cohort's update mode: set cohort above 1")
