"""How many CPU threads torch may use while vec-env workers share the machine.

With torch's default of one thread per core its OpenMP workers spin while the env workers
step: on the 2-core machine the trainer ran at 65 steps/s, with one thread at 1,000
(docs/agent.md, "Threads"). The count can change float reduction order: keep it fixed
between a run and its replay.
"""

from __future__ import annotations

import argparse

from envgen.input_checks import whole_number

DEFAULT_TORCH_THREADS = 1


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--torch-threads",
        type=whole_number(1),
        default=DEFAULT_TORCH_THREADS,
        help="torch CPU threads (default 1: the vec-env workers use the other cores)",
    )


def set_torch_threads(threads: int) -> None:
    # lazy: torch, 0.73 s more of `envgen train --help` (0.35 s without)
    import torch

    if threads < 1:
        raise ValueError(f"--torch-threads must be >= 1, got {threads}")
    torch.set_num_threads(threads)
