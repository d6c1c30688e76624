"""The cohort's CUDA-graphed policy step against the same step run eagerly: the same
inputs must give the same actions, log-probabilities and values, bit for bit."""

import dataclasses
import json

import torch

from envgen.agents.cohort import CohortPPO
from envgen.agents.config import PPOConfig, model_preset

for bf16 in (False, True):
    model = dataclasses.replace(model_preset("paper"), bf16_autocast=bf16)
    agent = CohortPPO(model, PPOConfig(), list(range(8)), torch.device("cuda"))
    obs = torch.randint(0, 256, (8, 8, 64, 64, 3), dtype=torch.uint8, device="cuda")
    gens = [torch.Generator(device="cuda").manual_seed(k) for k in range(8)]
    graphed = [t.clone() for t in agent._policy_step(obs, gens)]  # captures, then replays
    gens = [torch.Generator(device="cuda").manual_seed(k) for k in range(8)]
    noise = torch.stack([torch.rand((8, 17), generator=g, device="cuda") for g in gens])
    eager = agent._policy_core(obs, noise)
    print(
        json.dumps(
            {
                "bf16": bf16,
                "graph": agent._graph is not False and agent._graph is not None,
                "equal": [bool(torch.equal(a, b)) for a, b in zip(graphed, eager, strict=False)],
            }
        ),
        flush=True,
    )
