"""PPO update samples/s with torch's CPU path as it is vs pinned to AVX2, same run.

Pinning (`ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2`) was the
candidate for making CPU runs identical across x86-64 machines (README, "Reproducibility").
Each setting runs in its own process (the variables are read at import); the two
alternate `--rounds` times and each times forward + backward + Adam step + forward on
a batch of `--batch` observations for `--seconds`. `ratio` is pinned / default, the
median over rounds; `outputs_equal` says whether the two settings computed the same
bits on this machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from envgen.agents.config import model_preset
from envgen.agents.networks import ActorCritic
from envgen.input_checks import positive_number, whole_number

PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="nature", help="network preset (default %(default)s)")
    parser.add_argument(
        "--batch",
        type=whole_number(1),
        default=256,
        help="observations per update (default %(default)s)",
    )
    parser.add_argument(
        "--seconds",
        type=positive_number,
        default=8.0,
        help="seconds timed per round and side (default %(default)s)",
    )
    parser.add_argument(
        "--rounds",
        type=whole_number(1),
        default=2,
        help="alternations of the two sides (default %(default)s)",
    )


def measure(model: str, batch: int, seconds: float) -> dict[str, object]:
    """Updates for `seconds` in this process: samples/s, capability, hash of one output."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = ActorCritic(model_preset(model))
    opt = torch.optim.Adam(net.parameters(), 1e-4)
    obs = torch.randint(0, 255, (batch, 64, 64, 3), dtype=torch.uint8)  # Crafter's (N, H, W, C)
    digest = hashlib.sha256(net(obs)[0].detach().numpy().tobytes()).hexdigest()[:16]

    def update() -> None:
        loss = sum(o.float().sum() for o in net(obs))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            net(obs)

    update()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        update()
        n += 1
    return {
        "sps": n * batch / (time.perf_counter() - start),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "digest": digest,
    }


def _side(args: argparse.Namespace, pinned: bool) -> dict[str, object]:
    env = {**os.environ, **(PINNED if pinned else {})}
    if not pinned:
        for name in PINNED:
            env.pop(name, None)
    code = (
        "import json, sys; from envgen.bench.isa import measure; "
        f"print(json.dumps(measure({args.model!r}, {args.batch}, {args.seconds})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace) -> int:
    default, pinned = [], []
    for _ in range(args.rounds):
        default.append(_side(args, pinned=False))
        pinned.append(_side(args, pinned=True))
    ours = statistics.median(d["sps"] for d in default)
    pin = statistics.median(p["sps"] for p in pinned)
    result = {
        "model": args.model,
        "default_capability": default[0]["capability"],
        "ours_sps": round(ours, 1),
        "pinned_sps": round(pin, 1),
        "ratio": round(
            statistics.median(p["sps"] / d["sps"] for d, p in zip(default, pinned, strict=True)), 3
        ),
        "outputs_equal": default[0]["digest"] == pinned[0]["digest"],
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(result))
    return 0
