"""Named, independent seeds derived from one run seed (numpy SeedSequence)."""

from __future__ import annotations

import zlib

import numpy as np


def derive_seed(seed: int, stream: str, index: int = 0) -> int:
    """A 31-bit seed for `stream` (e.g. "model", "env") and `index`, fixed by `seed` alone."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    key = [seed, zlib.crc32(stream.encode()), index]
    return int(np.random.SeedSequence(key).generate_state(1)[0] >> 1)
