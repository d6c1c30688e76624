"""PPO training speed in portable CPU numerics against native, same command, same machine.

Each side is `envgen bench train --no-reference` (one run of the Table 9 PPO on our
Crafter, `--model`, one torch thread) started in its own process with that mode's
environment (`envgen.numerics.environment`); the sides alternate for `--rounds`. The
JSON line gives each side's median env steps/s end to end and of the update alone
(samples/s of one rollout's PPO epochs), and `ratio` / `update_ratio` = portable over
native, the median over rounds of each round's ratio. Below 1 portable is slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from envgen import numerics
from envgen.bench.options import add_count, add_model
from envgen.errors import EnvGenError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model(parser)
    add_count(parser, "--rollouts", 2, "timed rollouts of 4,096 env steps per side and round")
    add_count(parser, "--rounds", 2, "alternations of the two sides")


def _side(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "envgen.cli", "bench", "train", "--no-reference",
        "--model", args.model, "--rollouts", str(args.rollouts), "--torch-threads", "1",
    ]  # fmt: skip
    out = subprocess.run(
        command, env=numerics.environment(mode), capture_output=True, text=True, check=False
    )
    if out.returncode:
        tail = (out.stdout + out.stderr).strip().splitlines()[-1:] or ["no output"]
        raise EnvGenError(f"bench numerics: the {mode} side failed: {tail[0]}")
    level = json.loads(out.stdout.strip().splitlines()[-1])["levels"][0]
    return {"sps": level["total_sps"], "update_sps": level["update_sps"]}


def run(args: argparse.Namespace) -> int:
    sides: dict[str, list[dict[str, Any]]] = {numerics.NATIVE: [], numerics.PORTABLE: []}
    for _ in range(args.rounds):
        for mode, results in sides.items():
            results.append(_side(args, mode))
            print(f"{mode}: {results[-1]}", flush=True)
    native, portable = sides[numerics.NATIVE], sides[numerics.PORTABLE]

    def median_ratio(key: str) -> float:
        pairs = zip(native, portable, strict=True)
        return round(statistics.median(p[key] / n[key] for n, p in pairs), 3)

    result = {
        "model": args.model,
        "native_sps": round(statistics.median(r["sps"] for r in native), 1),
        "portable_sps": round(statistics.median(r["sps"] for r in portable), 1),
        "native_update_sps": round(statistics.median(r["update_sps"] for r in native), 1),
        "portable_update_sps": round(statistics.median(r["update_sps"] for r in portable), 1),
        "ratio": median_ratio("sps"),
        "update_ratio": median_ratio("update_sps"),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))
    return 0
