"""The `envgen gpu run` values that its parent (`envgen.gpu.cli`) and its child
(`python -m envgen.gpu.chunk`) both parse, and the budget `envgen gpu dry-run` plans
with. Apart from the chunk module, so that building `envgen gpu`'s parser loads no
pipeline: `envgen gpu --help` answers 0.2 s sooner (`import envgen.gpu.cli` with and
without `envgen.gpu.chunk`, measured)."""

from __future__ import annotations

from envgen.input_checks import comma_list

# Every run also checkpoints this long after its last checkpoint: 7 paper-network runs on
# one H100 train about 196 env steps/s each, so `checkpoint_every` (102,400 steps) alone
# would first checkpoint after 8.7 minutes, and a 9-minute chunk would keep nothing.
CHECKPOINT_MINUTES = 2.0
BUDGET_MIN = 9.0  # a call's wall-clock budget: the job limit is 10 minutes
PACK_RESERVE_S = 45.0  # of the budget (a quarter at most), kept for stopping and packing


# An argparse `type` for `--seeds`: comma-separated whole numbers (e.g. 0,1,2).
seed_list = comma_list(
    int, "give whole numbers >= 0 joined by commas, e.g. 0,1,2", allowed=lambda s: s >= 0
)
