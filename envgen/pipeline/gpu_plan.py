"""How many runs share one GPU, and how many GPU-hours a plan takes (estimates, stated).

Memory of one run on its GPU (`run_memory`), from its network, agent and batch sizes:
- the CUDA context and torch's kernels of its process, `CONTEXT_GIB`;
- static state: weights, gradients and Adam moments, 16 bytes per parameter for PPO; AD
  keeps three Adam optimisers and a frozen copy for its auxiliary phase, 36 bytes;
- buffers: the rollout (uint8 observations and a few floats per step); AD adds its
  auxiliary buffer of `aux_every` rollouts and its memories;
- saved activations at the largest batch one backward pass sees, times `HEADROOM` for
  cuDNN workspaces and temporaries, the bytes per observation measured on the CPU over a
  real forward and loss (`activation_bytes_per_row`). PPO's batch is a minibatch (paper:
  512 observations); AD's auxiliary batches see 3 per element (the matching loss encodes
  the anchor's before and after images and the regulariser's step, all with gradients),
  `3 x ADConfig.batch_size`: AD needs about 3 times PPO's memory;
- the three tensor parts are the peak torch allocates; the card loses `RESERVED_FACTOR`
  times that to the caching allocator's reservation.
On one H100 (results/gpu/2026-11-26-h100; `RESERVED_FACTOR`), eight paper-network PPO
runs filled the card and ten ran out of memory; a whole 1M-step run's reservation is not
measured.

`runs_per_gpu` fits as many runs as the card's memory less a reserve holds, at least one.
GPU-hours divide a plan's env steps by a per-GPU rate: `--gpu-sps` where given, else
`MEASURED_GPU_SPS` at the plan's runs per GPU, else `ASSUMED_GPU_SPS`, each labelled.
"""

from __future__ import annotations

import dataclasses
import functools
import operator

import numpy as np

from envgen.agents.config import ADConfig, ModelConfig, PPOConfig
from envgen.games import game_spec

GIB = 2**30
# CUDA context + kernels per process: 769 MiB measured (card in use less torch's
# reservation, one bf16 + TF32 run alone on an H100; not measured in float32)
CONTEXT_GIB = 0.75
HEADROOM = 1.25  # cuDNN workspaces and temporaries over the saved activations
# The card's reservation over the *estimated* allocated peak: an H100 reserved up to
# 9,902 MiB per paper-network PPO run (8 at once, deterministic float32), 1.95 x the
# 5,084 MiB `RunMemory.allocated` estimates (the measured peak, 5,578, is 10% above it)
RESERVED_FACTOR = 1.95
DEFAULT_CARD_GIB = 80.0  # planning size where no GPU is visible (an 80 GB H100 or A100)
DEFAULT_RESERVE_GIB = 4.0  # left free on each GPU
AD_ROWS_PER_AUX_ELEMENT = 3  # matching: before + after + regulariser step, with gradients
# Env steps/s of all runs on one GPU together, by network and runs at once. The paper
# network's are measured: `envgen bench train --device cuda --model paper --agent ppo
# --deterministic --concurrency N` on one H100 (results/gpu/2026-11-26-h100); 7 pipeline
# runs there trained at about 1,370. The other two networks have not run on a GPU.
MEASURED_GPU_SPS = {"paper": {1: 942.0, 4: 1_216.0, 8: 1_289.0}}
MEASURED_ON = "one H100, PPO, deterministic float32"
ASSUMED_GPU_SPS = {"impala-small": 10_000.0, "nature": 20_000.0}
# Env steps/s of one cohort (`envgen.agents.cohort`) of W PPO seeds on one GPU, by
# (network, precision, W): `envgen bench train --device cuda --model paper --cohort W`
# (float32 with --deterministic), 3 or 8 timed rollouts. Each measured rate's source file
# is named in tests/test_pipeline_gpu_plan.py (`MEASURED_SOURCES`), which checks it.
MEASURED_COHORT_SPS = {
    ("paper", "float32", 8): 1_702.6,
    ("paper", "bf16", 4): 3_878.6,
    ("paper", "bf16", 8): 4_562.5,
}
COHORT_MEASURED_ON = "one H200"
# The same for pipelined cohorts (`RunConfig.cohort_groups`: one group collects while
# another updates), by (network, precision, W, groups): `... --cohort W --cohort-groups 2`,
# fill and drain included; bf16 pipelined ran at 0.85x (W = 4) and 0.89x (W = 8) the
# unpipelined cohort on the same warm machine.
MEASURED_PIPELINED_COHORT_SPS: dict[tuple[str, str, int, int], float] = {
    ("paper", "bf16", 4, 2): 3_278.8,
    ("paper", "bf16", 8, 2): 3_929.0,
    ("paper", "bf16", 16, 2): 4_234.1,
    ("paper", "float32", 8, 2): 1_565.7,
}
PIPELINED_COHORT_MEASURED_ON = "one H200"
# The same for unpipelined cohorts whose update is captured or compiled
# (`RunConfig.cohort_kernels`), by (network, precision, kernels, W): `... --kernels K`.
# None measured yet (results/gpu/next/ prepares the session that measures them).
MEASURED_KERNEL_COHORT_SPS: dict[tuple[str, str, str, int], float] = {}
KERNEL_COHORT_MEASURED_ON = ""
AD_COST = 3.0  # AD's env step costs this many PPO steps of GPU time (ASSUMED, not measured)


@dataclasses.dataclass(frozen=True)
class RunMemory:
    """Bytes one run holds on its GPU, by part."""

    parameters: int
    static: int
    buffers: int
    activations: int
    rows: int

    @property
    def total(self) -> int:
        return int(CONTEXT_GIB * GIB + RESERVED_FACTOR * self.allocated)

    @property
    def allocated(self) -> int:
        """The peak torch allocates (`torch.cuda.max_memory_allocated`)."""
        return int(self.static + self.buffers + HEADROOM * self.activations)

    def describe(self) -> str:
        return (
            f"{self.total / GIB:.1f} GiB a run ({self.parameters / 1e6:.1f}M parameters, "
            f"{self.rows} observations per backward pass: {self.activations / GIB:.1f} GiB "
            f"saved activations x {HEADROOM}; {self.allocated / GIB:.1f} GiB allocated x "
            f"{RESERVED_FACTOR} reserved, {CONTEXT_GIB} GiB context)"
        )


@functools.lru_cache(maxsize=16)
def activation_bytes_per_row(model_cfg: ModelConfig, agent: str) -> tuple[int, int]:
    """(bytes autograd saves per observation in a loss's backward, parameter count),
    measured on the CPU as the difference between batches of 2 and 4 observations
    (weights, saved too, cancel out)."""
    # lazy: torch; planning and `envgen campaign status` load this module and no torch
    # (tests/test_lazy_imports.py); only a GPU plan's memory estimate needs it
    import torch

    from envgen.agents.ad_networks import ADActorCritic  # lazy: torch, as above
    from envgen.agents.networks import OBS_SHAPE, ActorCritic  # lazy: torch, as above

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = (ADActorCritic if agent == "ad" else ActorCritic)(model_cfg)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def saved(batch: int) -> int:
        storages: dict[int, int] = {}

        def pack(t: torch.Tensor) -> torch.Tensor:
            storage = t.untyped_storage()
            if storage.data_ptr() not in params:
                storages[storage.data_ptr()] = storage.nbytes()
            return t

        obs = torch.zeros((batch, *OBS_SHAPE), dtype=torch.uint8)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            logprobs, value = model(obs)
            loss = logprobs.mean() + value.mean()
        loss.backward()
        return sum(storages.values())

    return (saved(4) - saved(2)) // 2, sum(p.numel() for p in model.parameters())


def run_memory(model_cfg: ModelConfig, ppo: PPOConfig, agent: str = "ppo") -> RunMemory:
    """The estimate of the module docstring for one run."""
    from envgen.agents.networks import OBS_SHAPE  # lazy: torch, as in activation_bytes_per_row

    per_row, parameters = activation_bytes_per_row(model_cfg, agent)
    obs_bytes = int(np.prod(OBS_SHAPE))
    rollout = ppo.rollout_size * (obs_bytes + 6 * 4)
    rows = ppo.rollout_size // ppo.minibatches
    static = 16 * parameters
    if agent == "ad":
        ad = ADConfig()
        hidden = model_cfg.hidden_size * 4
        rollout += (ppo.rollout_size + ppo.num_envs) * hidden
        rollout += ad.aux_every * ppo.rollout_size * (obs_bytes + hidden + 5 * 4)
        rows = max(rows, AD_ROWS_PER_AUX_ELEMENT * ad.batch_size)
        static = 36 * parameters
    return RunMemory(parameters, static, rollout, per_row * rows, rows)


def runs_per_gpu(per_run: int, card_bytes: int, reserve_bytes: int) -> int:
    """Runs whose estimates fit in the card less the reserve; at least one."""
    return max(1, (card_bytes - reserve_bytes) // per_run)


def card_memory(gib: float, device: str = "cuda") -> tuple[int, str]:
    """(bytes to plan with, where the figure comes from): `gib` when given, else the free
    memory torch reports on this machine's GPU, else `DEFAULT_CARD_GIB`."""
    if gib > 0:
        return int(gib * GIB), f"{gib:g} GiB (execution.gpu_memory_gib)"
    import torch  # lazy: torch, as in activation_bytes_per_row

    if torch.cuda.is_available():
        index = torch.device(device).index or 0
        free, total = torch.cuda.mem_get_info(index)
        return free, f"{free / GIB:.1f} GiB free of {total / GIB:.1f} GiB on cuda:{index}"
    return int(DEFAULT_CARD_GIB * GIB), f"{DEFAULT_CARD_GIB:g} GiB (no GPU here: assumed card)"


def gpu_rate(model: str, sps: float | None, runs: int = 1) -> tuple[float, str]:
    """(env steps/s per GPU, where it comes from) with `runs` runs at once on a card:
    `sps` when given; else the measurement at the most runs at once not above `runs`
    (never a rate the plan's packing did not reach); else `ASSUMED_GPU_SPS`."""
    if sps is not None:
        return sps, "measured (--gpu-sps)"
    if model in MEASURED_GPU_SPS:
        levels = MEASURED_GPU_SPS[model]
        level = max((n for n in levels if n <= runs), default=min(levels))
        return levels[level], f"measured on {MEASURED_ON}, {level} run(s) at once"
    return ASSUMED_GPU_SPS[model], "ASSUMED, not measured"


def cohort_rate(
    model: str, bf16: bool, size: int, groups: int = 1, kernels: str = "eager"
) -> tuple[float, str] | None:
    """(env steps/s of one cohort of `size` on a GPU, where it comes from): the
    measurement at the largest W not above `size`, or None when none was measured.
    A pipelined cohort (`groups` > 1) takes only a pipelined measurement of its groups,
    a captured or compiled one (`kernels`) only a measurement of its own mode."""
    precision = "bf16" if bf16 else "float32"
    rates = {
        k[4]: v for k, v in _cohort_rates().items() if k[:4] == (model, precision, kernels, groups)
    }
    w = max((w for w in rates if w <= size), default=None)
    if w is None:
        return None
    mode = "" if kernels == "eager" else f"{kernels} "
    split = f" in {groups} groups" if groups > 1 else ""
    return rates[w][0], f"measured on {rates[w][1]}, a {precision} {mode}cohort of {w}{split}"


def _cohort_rates() -> dict[tuple[str, str, str, int, int], tuple[float, str]]:
    """Every measured cohort rate as {(network, precision, kernels, groups, W): (env
    steps/s, where measured)}."""
    rates = {
        (m, p, "eager", 1, w): (v, COHORT_MEASURED_ON)
        for (m, p, w), v in MEASURED_COHORT_SPS.items()
    }
    for (m, p, w, g), v in MEASURED_PIPELINED_COHORT_SPS.items():
        rates[(m, p, "eager", g, w)] = (v, PIPELINED_COHORT_MEASURED_ON)
    for (m, p, k, w), v in MEASURED_KERNEL_COHORT_SPS.items():
        rates[(m, p, k, 1, w)] = (v, KERNEL_COHORT_MEASURED_ON)
    return rates


# What a cohort's measured rate depends on: `cohort_rate`'s arguments of a `RunConfig`.
cohort_kind = operator.attrgetter(
    "model", "bf16_autocast", "cohort", "cohort_groups", "cohort_kernels"
)


def gpu_hours(steps: float, ad_steps: float, rate: float) -> float:
    """GPU-hours of `steps` env steps, `ad_steps` of them AD's (each costing `AD_COST`),
    at `rate` env steps/s per GPU (`gpu_rate`)."""
    return (steps + (AD_COST - 1.0) * ad_steps) / rate / 3600


def job_memory(config) -> RunMemory:
    """`run_memory` of a pipeline run config (`envgen.loop.config.RunConfig`)."""
    game = game_spec(config.game)
    model = game.model_config(config.model, **config.gpu_options)
    return run_memory(model, game.ppo_config(config.ppo), config.agent)


def largest_run(configs) -> RunMemory | None:
    """The largest estimate among `configs` (None when there are none)."""
    estimates = {(c.game, c.model, c.agent, c.ppo, c.bf16_autocast): c for c in configs}
    memories = [job_memory(c) for c in estimates.values()]
    return max(memories, key=lambda m: m.total) if memories else None
