"""Score against environment steps, from runs' episode logs.

Steps are cut into bins of equal width from step 0; each bin's score is the game's table
number (`GameSpec.summarize`) of the training episodes that ended in it, pooled over the
row's runs. Only the original game's episodes count (`ORIGINAL_GAME_PHASES`): the LLM
environments start with items and differ per cycle. The paper draws no such curve; bins,
not a moving window, so that rows given the same `bin_steps` are scored at the same steps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from envgen.scoring import summarize as crafter_summary

ORIGINAL_GAME_PHASES = re.compile(r"^(orig\d+|pretrain|final)$")
# episodes -> {"score": %, "reward": .., "episodes": n}, as `GameSpec.summarize`
Summarize = Callable[[Sequence[Mapping[str, Any]]], Mapping[str, Any]]
BINS_PER_CURVE = 40  # `bin_width` divides a table's longest run into this many bins
CURVE_COLUMNS = ("step", "score", "reward", "episodes")  # every game's; a row CSV's columns
SUCCESS_PREFIX = "success_"  # + a Crafter achievement: % of a bin's episodes unlocking it


def bin_width(total_steps: int, bins: int = BINS_PER_CURVE) -> int:
    """Bin width in steps that cuts `total_steps` into about `bins` bins (at least 1)."""
    return max(1, -(-total_steps // bins))


def score_vs_step(
    runs: Sequence[Sequence[Mapping[str, Any]]],
    bin_steps: int,
    phases: re.Pattern[str] = ORIGINAL_GAME_PHASES,
    summarize: Summarize = crafter_summary,
) -> pd.DataFrame:
    """Columns step (a bin's right edge), score (%), reward, episodes, then, for a game
    whose summary has them (Crafter), `success_<achievement>` (%); empty bins left out.
    `runs`: each run's episodes (episode log lines with `step`, `phase`); an episode ending
    at step s falls in the bin (k * bin_steps, (k + 1) * bin_steps] holding s. `summarize`:
    the game's summary of episodes (`GameSpec.summarize`; Crafter's default). The figure
    draws step and score, the row CSVs keep `CURVE_COLUMNS`, and the table's curve file
    (`curve_table`) all of them: one summary per bin, so their numbers agree."""
    by_bin: dict[int, list[Mapping[str, Any]]] = {}
    for run in runs:
        for ep in run:
            if phases.match(ep["phase"]):
                by_bin.setdefault(-(-ep["step"] // bin_steps), []).append(ep)
    lines = []
    for k in sorted(by_bin):
        s = summarize(by_bin[k])
        rates = {f"{SUCCESS_PREFIX}{a}": v for a, v in s.get("success_rates", {}).items()}
        lines.append({"step": k * bin_steps, **{c: s[c] for c in CURVE_COLUMNS[1:]}, **rates})
    return pd.DataFrame(lines, columns=None if lines else list(CURVE_COLUMNS))


def curve_table(curves: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """A table's curves in one long frame, one record per (row, step): `dvc plots` reads
    it as one file per table, so two commits' curves of every row compare in one plot
    (the template `.dvc/plots/row_curves.json` draws a line per row and revision)."""
    frames = [curve.assign(row=label) for label, curve in curves.items()]
    if not frames:
        return pd.DataFrame(columns=["row", *CURVE_COLUMNS])
    table = pd.concat(frames, ignore_index=True)
    return table[["row", *(c for c in table.columns if c != "row")]]
