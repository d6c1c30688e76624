"""The torch device of a run and how exactly it computes (`deterministic`).

The device is the CPU unless `--device` (or a profile's `device`) names another: a GPU
is never picked behind the user's back.

`set_deterministic(True)` makes a GPU repeat its numbers on the same GPU model, driver,
CUDA and torch (docs/agent.md, "On a GPU"): deterministic cuDNN algorithms without
benchmark search, no TF32 (exact float32, as on the CPU), deterministic kernels for every
op (`torch.use_deterministic_algorithms`: an op without one raises) and the fixed cuBLAS
workspace that needs (`CUBLAS_WORKSPACE_CONFIG`). The CPU's numbers do not change.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from envgen.input_checks import torch_device

CUBLAS_WORKSPACE = ":4096:8"  # NVIDIA's documented setting for deterministic cuBLAS


def add_device_arguments(parser: argparse.ArgumentParser, gpu_options: bool = True) -> None:
    """--device (cpu unless given), --deterministic and, where the command builds a
    network, --bf16 and --channels-last (`ModelConfig`'s GPU options)."""
    device_help = "torch device: cpu (the default), cuda or cuda:N"
    parser.add_argument("--device", type=torch_device, default="cpu", help=device_help)
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="deterministic GPU kernels and TF32 off: a GPU repeats its numbers (CPU: no effect)",
    )
    if gpu_options:
        parser.add_argument(
            "--bf16", action="store_true", help="bfloat16 autocast of forward passes (GPU speed)"
        )
        parser.add_argument(
            "--channels-last", action="store_true", help="NHWC convolutions (GPU speed)"
        )


def set_deterministic(on: bool) -> None:
    """Switch deterministic GPU computation on (see the module docstring) or back to
    torch's defaults (cuDNN TF32 convolutions, heuristic algorithm choice). A run's
    provenance records them as they are (`envgen.store.provenance.kernel_settings`)."""
    # lazy: torch; `envgen campaign status` loads this module through pipeline.jobs and
    # must load no torch (tests/test_lazy_imports.py)
    import torch

    if on:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.backends.cudnn.deterministic = on
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = not on
    torch.use_deterministic_algorithms(on)


def describe(device: Any) -> str:
    """ "cpu" or the GPU's name, e.g. "cuda:0 (NVIDIA H100 80GB HBM3)"."""
    import torch  # lazy: torch, as in set_deterministic

    device = torch.device(device)
    if device.type != "cuda":
        return device.type
    index = device.index if device.index is not None else torch.cuda.current_device()
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
