"""The power of a one-sided Welch test, by simulating the test itself.

A planning figure: how often the test a campaign runs (one-sided Welch of a > b at
level alpha) would reject, if the arms were normal with the given difference and stds.
Simulation rather than the noncentral-t formula, because the formula treats the
Welch-Satterthwaite df as known when each sample estimates it, which at 5 runs per arm
overstates power by up to 0.03 (docs/stats.md, "Campaign claims", item 3).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np
import scipy.stats

from envgen.errors import StatsInputError
from envgen.input_checks import OneLineParser


def simulated_welch_power(
    diff: float,
    sd_a: float,
    sd_b: float,
    n: int,
    alpha: float,
    sims: int = 20_000,
    seed: int = 0,
    n_b: int | None = None,
) -> float:
    """Share of `sims` simulated campaigns in which the one-sided Welch test of a > b
    rejects at level `alpha`. Arm a draws `n` runs from Normal(diff, sd_a), arm b `n_b`
    (default `n`) from Normal(0, sd_b); each campaign's test uses its own sample stds and
    Welch df. A campaign whose both samples have no spread rejects when its difference is
    positive. Fixed `seed`: the same arguments give the same figure."""
    n_b = n if n_b is None else n_b
    if n < 2 or n_b < 2:
        raise StatsInputError("n", f"Welch's test needs at least 2 runs per arm; got {n}, {n_b}")
    if not 0 < alpha < 1:
        raise StatsInputError("alpha", f"must be in (0, 1); got {alpha}")
    if sd_a < 0 or sd_b < 0 or not (math.isfinite(sd_a) and math.isfinite(sd_b)):
        raise StatsInputError("sd", f"must be finite and >= 0; got {sd_a}, {sd_b}")
    if sims < 1:
        raise StatsInputError("sims", f"must be >= 1; got {sims}")
    rng = np.random.default_rng(seed)
    a = rng.normal(diff, sd_a, size=(sims, n))
    b = rng.normal(0.0, sd_b, size=(sims, n_b))
    va, vb = a.var(axis=1, ddof=1) / n, b.var(axis=1, ddof=1) / n_b
    delta = a.mean(axis=1) - b.mean(axis=1)
    se2 = va + vb
    spread = se2 > 0
    reject = np.where(spread, False, delta > 0)
    se2_s, va_s, vb_s = se2[spread], va[spread], vb[spread]
    t = delta[spread] / np.sqrt(se2_s)
    df = se2_s**2 / (va_s**2 / (n - 1) + vb_s**2 / (n_b - 1))
    reject[spread] = scipy.stats.t.sf(t, df) < alpha
    return float(reject.mean())


def power_table(
    diffs: Sequence[float],
    sds: Sequence[tuple[float, float]],
    ns: Sequence[int],
    alpha: float,
    sims: int = 20_000,
    seed: int = 0,
) -> list[str]:
    """A Markdown table of `simulated_welch_power`: one line per (diff, sd_a, sd_b), one
    column per runs-per-arm n (a registration's sample-size table)."""
    lines = [
        f"| diff | sd a | sd b | {' | '.join(f'n = {n}' for n in ns)} |",
        "|" + "---|" * (3 + len(ns)),
    ]
    for diff in diffs:
        for sd_a, sd_b in sds:
            powers = [simulated_welch_power(diff, sd_a, sd_b, n, alpha, sims, seed) for n in ns]
            lines.append(
                f"| {diff:+g} | {sd_a:g} | {sd_b:g} | {' | '.join(f'{p:.2f}' for p in powers)} |"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m envgen.stats.power",
        description="simulated power of a one-sided Welch test of a > b, as a Markdown table",
    )
    parser.add_argument("--diffs", type=float, nargs="+", required=True, help="true a - b")
    parser.add_argument(
        "--sds", nargs="+", required=True, help="SD_A,SD_B pairs: the arms' true stds"
    )
    parser.add_argument("--n", type=int, nargs="+", required=True, help="runs per arm")
    parser.add_argument("--alpha", type=float, default=0.05, help="one-sided level")
    parser.add_argument("--sims", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        sds = [tuple(float(x) for x in pair.split(",")) for pair in args.sds]
        if any(len(pair) != 2 for pair in sds):
            raise ValueError
    except ValueError:
        parser.error("--sds: give pairs SD_A,SD_B, e.g. 0.96,2.74")
    try:
        lines = power_table(args.diffs, sds, args.n, args.alpha, args.sims, args.seed)  # type: ignore[arg-type]
    except StatsInputError as exc:
        print(f"envgen.stats.power: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
