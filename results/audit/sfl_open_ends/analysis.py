"""Campaign sfl's open ends, descriptive and post hoc (chosen after its verdict was seen):
the same window of trained steps, the cost of SFL's curation steps, and wake_up.

    PYTHONPATH=. .venv/bin/python results/audit/sfl_open_ends/analysis.py > results/audit/sfl_open_ends/analysis.out

Reads the committed runs of results/campaign_sfl/runs.json through their manifests.
An episode's `step` is the trained step at which it ended; SFL's 131,072 curation steps
are not trained steps, so SFL's final phase covers trained steps (830,912, 1,830,912]
and domain randomization's (961,984, 1,961,984].
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from scipy import stats

from envgen.agents.runlog import read_jsonl
from envgen.scoring import summarize

RUNS = json.loads(Path("results/campaign_sfl/runs.json").read_text())
ARMS = {row["row"]: [Path(r["run_dir"]) for r in row["runs"]] for row in RUNS["rows"]}
SFL, DR = "SFL: EnvGen schedule", "Domain randomization: EnvGen schedule"
FINAL = 1_000_000


def window_score(episodes: list[dict], end: int) -> float:
    """Crafter score of the episodes that ended in trained steps (end - 1M, end]."""
    return summarize([e for e in episodes if end - FINAL < e["step"] <= end])["score"]


def welch(a: list[float], b: list[float]) -> tuple[float, float]:
    t = stats.ttest_ind(a, b, equal_var=False)
    return statistics.mean(a) - statistics.mean(b), float(t.pvalue)


def interval(values: list[float]) -> tuple[float, float, float]:
    mean = statistics.mean(values)
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


episodes = {arm: [read_jsonl(run / "episodes.jsonl") for run in runs] for arm, runs in ARMS.items()}
ends = {arm: [json.loads((r / "final_metrics.json").read_text())["global_steps"] for r in runs]
        for arm, runs in ARMS.items()}
sfl_end, dr_end = ends[SFL][0], ends[DR][0]
assert set(ends[SFL]) == {sfl_end} and set(ends[DR]) == {dr_end}

sfl_final = [window_score(e, sfl_end) for e in episodes[SFL]]
dr_final = [window_score(e, dr_end) for e in episodes[DR]]
dr_same = [window_score(e, sfl_end) for e in episodes[DR]]
print(f"SFL trained steps {sfl_end:,}, DR {dr_end:,} (difference {dr_end - sfl_end:,})")
print(f"registered comparison (each arm's own final 1M trained steps): SFL "
      f"{statistics.mean(sfl_final):.2f} vs DR {statistics.mean(dr_final):.2f}, "
      "D {:+.2f}, Welch two-sided p {:.3f}".format(*welch(sfl_final, dr_final)))
print(f"same window of trained steps ({sfl_end - FINAL:,}, {sfl_end:,}]: SFL "
      f"{statistics.mean(sfl_final):.2f} vs DR {statistics.mean(dr_same):.2f}, "
      "D {:+.2f}, Welch two-sided p {:.3f}".format(*welch(sfl_final, dr_same)))
lo, hi = dr_end - FINAL, sfl_end  # where both arms' final phases overlap
both_sfl = [summarize([e for e in eps if lo < e["step"] <= hi])["score"] for eps in episodes[SFL]]
both_dr = [summarize([e for e in eps if lo < e["step"] <= hi])["score"] for eps in episodes[DR]]
print(f"the overlap of both final phases, trained steps ({lo:,}, {hi:,}]: SFL "
      f"{statistics.mean(both_sfl):.2f} vs DR {statistics.mean(both_dr):.2f}, "
      "D {:+.2f}, Welch two-sided p {:.3f}".format(*welch(both_sfl, both_dr)))
cost = [a - b for a, b in zip(dr_final, dr_same, strict=True)]
print("DR's gain from its last {:,} trained steps (paired over its 20 runs): "
      "{:+.2f} points, 95% t-interval [{:+.2f}, {:+.2f}]".format(dr_end - sfl_end, *interval(cost)))

print("\nwake_up success (%) per SFL run: cycle 1..4 evaluations (feedback rate), final phase")
lost = []
for run, eps in zip(ARMS[SFL], episodes[SFL], strict=True):
    cycles = []
    for n in range(1, 5):
        ev = json.loads((run / f"cycles/cycle-0{n}/evaluation.json").read_text())
        cycles.append(ev["feedback"]["wake_up"][0])
    final = summarize([e for e in eps if e["phase"] == "final"])["success_rates"]["wake_up"]
    flag = " LOST" if final < 1 else ""
    if final < 1:
        lost.append(run)
    print(f"  {run.name}: cycles {cycles}, final {final:.2f}{flag}")
dr_wake = [summarize([e for e in eps if e["phase"] == "final"])["success_rates"]["wake_up"]
           for eps in episodes[DR]]
print(f"DR runs with final wake_up below 1%: {sum(w < 1 for w in dr_wake)} of {len(dr_wake)}")
kept = [s for s, run in zip(sfl_final, ARMS[SFL], strict=True) if run not in lost]
print(f"SFL without the {len(lost)} runs that lost wake_up: {statistics.mean(kept):.2f} "
      f"(all 20: {statistics.mean(sfl_final):.2f}; DR {statistics.mean(dr_final):.2f}); "
      f"the {len(lost)} runs account for {statistics.mean(kept) - statistics.mean(sfl_final):.2f} "
      f"of the {statistics.mean(dr_final) - statistics.mean(sfl_final):.2f}-point deficit")
