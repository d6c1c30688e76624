"""Result figures quoted in README.md, docs/ and results/**/README.md, checked against the runs.

CLAIMS.md is written from the runs; prose elsewhere that quotes a result (a campaign's
mean, difference, bound or p-value, one run's score) would drift from it when copied by
hand. So each such passage is declared here, in `PHRASES`: the file and the exact words,
with every figure a placeholder (`{confirm.dr}`) that `figures` computes from the same
runs.json files (and, for the audit's resume and load figures, the same runs'
provenance.json; for `RUNS`, one run's final_metrics.json) that CLAIMS.md is built from,
printed at the precision the passage prints.

    python -m envgen.evidence.docfigures            # check; exit 1 naming file, figure, value
    python -m envgen.evidence.docfigures --write    # rewrite each declared figure from the runs

A check fails, with one line each, when
- a declared passage's figure differs from what the runs give, at any of its copies (a
  wrong copy after a right one is still wrong): "README.md line 47: confirm.dr reads
  '21.56 ± 1.29', the runs give '21.55 ± 1.29'"; a figure of one run names the run;
- a declared passage is not found at all (its prose changed: edit `PHRASES` with it);
- a guarded figure (`GUARDED`: the campaigns' headline numbers) appears outside every
  declared passage: a copy nobody checks;
- any other number that looks like a result (a ± pair, a signed difference, "N points",
  a p-value, a bound, a score, "X vs Y", a percentage) lies outside every declared
  passage and is not listed, with its reason, as not a result
  (`envgen.evidence.doc_numbers`).
`envgen verify` runs the check as its "docs figures" line.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from scipy import stats as scipy_stats

from envgen import json_input
from envgen.errors import EnvGenError
from envgen.evidence import doc_numbers
from envgen.report.campaign_section import withheld_runs
from envgen.report.inputs import DONE, TableRecord, load_tables, runs_json_files
from envgen.stats.campaign_claims import (
    CAMPAIGN_CLAIMS,
    H1,
    H1_LLM15,
    H1_SFL,
    CampaignClaim,
    CampaignResult,
    evaluate_campaign,
)
from envgen.stats.compare import welch_test
from envgen.stats.paper_claims import PaperNumbers
from envgen.stats.runs import SampleStats
from envgen.store import read_run_bytes
from envgen.store.run_dir import RunDir

FIRST, CONFIRM, LLM15 = "campaign_cpu", "campaign_confirm", "campaign_llm15"
SFL = "campaign_sfl"

# (file, passage): the passage as the file has it, figures as {name}; whitespace (line
# breaks included) matches any whitespace. A passage starts and ends with words, not a
# figure, so that a wrong figure's extent is known.
PHRASES: tuple[tuple[str, str], ...] = (
    (
        "README.md",
        "scored {confirm.dr} against Crafter-only's {confirm.co}, {confirm.diff} points "
        "(one-sided 95% lower bound {confirm.lower}, Welch p = {confirm.p};",
    ),
    (
        "docs/campaign_confirm.md",
        'Crafter only": {first.dr} vs {first.co}, {first.diff} points (one-sided Welch p '
        "{first.p} unadjusted, {first.p_adj} after Bonferroni over 4).",
    ),
    (
        "docs/campaign_confirm.md",
        "The stds are the first campaign's: {first.dr_sd} (DR) and {first.co_sd} "
        "(Crafter-only); sensitivity lines with both arms at the larger std ({first.co_sd}) "
        "and at their root mean square ({first.rms_sd}).",
    ),
    (
        "docs/campaign_confirm.md",
        "python -m envgen.stats.power --diffs {first.diff_plain} 1.5 --sds {first.dr_sd},"
        "{first.co_sd} {first.co_sd},{first.co_sd} {first.rms_sd},{first.rms_sd} \\ --n 10",
    ),
    ("docs/campaign_confirm.md", "| {first.diff} | {first.dr_sd} | {first.co_sd} | 0.78 |"),
    ("docs/campaign_confirm.md", "| {first.diff} | {first.co_sd} | {first.co_sd} | 0.58 |"),
    ("docs/campaign_confirm.md", "| {first.diff} | {first.rms_sd} | {first.rms_sd} | 0.80 |"),
    ("docs/campaign_confirm.md", "| +1.5 | {first.dr_sd} | {first.co_sd} | 0.46 |"),
    ("docs/campaign_confirm.md", "| +1.5 | {first.co_sd} | {first.co_sd} | 0.32 |"),
    ("docs/campaign_confirm.md", "| +1.5 | {first.rms_sd} | {first.rms_sd} | 0.47 |"),
    (
        "docs/campaign_confirm.md",
        "With the first campaign's stds the test has power 0.92 for {first.diff} points",
    ),
    (
        "docs/campaign_confirm.md",
        "python -m envgen.stats.power --diffs 1.94 2.56 --sds {first.dr_sd},{first.co_sd} "
        "{first.co_sd},{first.co_sd} --n 15",
    ),
    (
        "docs/campaign_confirm.md",
        "Crafter-only std of {first.co_sd} rests partly on seed 0 ({first.co_seed0};",
    ),
    ("docs/campaign_confirm.md", "- {first.diff}, the first campaign's observed difference;"),
    (
        "docs/campaign_confirm.md",
        "- {first.scaled}, the paper's relative gain of EnvGen over Crafter-only at 1.96M "
        "steps (32.2 vs 26.4, paper Tables 1 and 4) scaled to our Crafter-only baseline "
        "({first.co_mean} × 5.8 / 26.4);",
    ),
    (
        "docs/campaign_confirm.md",
        "The first campaign's descriptive lead ({first.furnace_co} vs {first.furnace_dr});",
    ),
    (
        "docs/campaign_confirm.md",
        "this campaign's 15 runs scored {confirm.co}, the first campaign's 5 scored "
        "{first.co}, and the first campaign's seeds 1-4 all scored above all 15 fresh runs "
        "(seeds 0-4 vs 5-19, exact permutation p of the mean difference {audit.perm_p}; "
        "post hoc); domain randomization did not move ({first.dr_mean} vs "
        "{confirm.dr_mean}).",
    ),
    (
        "docs/campaign_confirm.md",
        "the CPU's vector unit within this campaign (AVX-512 {audit.avx512}, "
        "{audit.avx512_n} runs, vs AVX2 {audit.avx2}, {audit.avx2_n} runs; p {audit.isa_p}), "
        "resumes (resumed runs scored higher, {audit.resumed} vs {audit.not_resumed}) and "
        "load (Spearman {audit.load_rho}). The gap is in stone tools (make_stone_sword "
        "{audit.sword_first} vs {audit.sword_confirm}),",
    ),
    (
        "docs/campaign_confirm.md",
        "the verdict's {confirm.diff} is specific to this campaign's Crafter-only runs "
        "(against the first campaign's, domain randomization leads by {cross.diff}, "
        "one-sided 95% bounds {cross.bounds}, not significant);",
    ),
    (
        "docs/campaign_llm15.md",
        "against the first campaign's Crafter-only runs its lead was {cross.diff} points "
        "and not significant,",
    ),
    (
        "docs/campaign_llm15.md",
        "first campaign's Crafter-only runs (seeds 0-4, {first.co_mean}) and the confirm "
        "campaign's (seeds 5-19, {confirm.co_mean}),",
    ),
    (
        "docs/stats.md",
        "baseline (our b × paper (a − b) / paper b: {first.scaled} for the paper's +5.8 on "
        "our Crafter-only {first.co_mean} against its 26.4)",
    ),
    (
        "docs/stats.md",
        "Campaign_cpu's heuristic EnvGen schedule (U = {first.heuristic_upper}) rules out "
        "the paper's +5.8 but not {first.scaled}; domain randomization (U = "
        "{first.dr_upper}) rules out neither.",
    ),
    (
        "docs/pipeline.md",
        "Table 2's adaptive row scores {row.table2.adaptive} against Fixed's "
        "{row.table2.fixed} (2 runs each),",
    ),
    (
        "docs/pipeline.md",
        "The 8- and 4-cycle rows score {row.table3.c8} and {row.table3.c4}, 2 runs each",
    ),
    (
        "docs/pipeline.md",
        "Table 3's 40-cycle row is `{status.table3.c40}` and its 8-cycle row `{status.table3.c8}`;",
    ),
    (
        "docs/pipeline.md",
        "Table 6's row of 8 environments per call is `{status.table6.n8}`;",
    ),
    (
        "results/audit/sfl_open_ends/README.md",
        "Without those three runs SFL's mean is 21.69 instead of {sfl.a_mean}: they account",
    ),
    (
        "docs/campaign_sfl.md",
        'results/CLAIMS.md, "campaign_llm15": {llm15.a_mean} against {llm15.b_mean})',
    ),
    (
        "README.md",
        "the LLM designer's arm scored {llm15.a} against domain randomization's {llm15.b}, "
        "{llm15.diff} points (one-sided 95% upper bound {llm15.upper}; 16 + 16 seeds).",
    ),
    (
        "README.md",
        "SFL's arm scored {sfl.a} against domain randomization's {sfl.b}, {sfl.diff} points "
        "(one-sided 95% upper bound {sfl.upper}; 20 + 20 seeds, SFL's rollouts in its budget)",
    ),
    # The first campaign's Crafter-only seeds 1 and 2 retrained (results/audit/
    # crafter_only_retrain): each figure from its run (RUNS).
    (
        "docs/campaign_confirm.md",
        "They scored {retrain1.score} and {retrain2.score}, against {first_co1.score} and "
        "{first_co2.score} committed, and inside this campaign's Crafter-only range "
        "({confirm.co_min} to {confirm.co_max}), with stone tools near zero "
        "(make_stone_sword {retrain1.make_stone_sword}% and {retrain2.make_stone_sword}%).",
    ),
    (
        "docs/measurements.md",
        "with today's lock (2026-11-27, evening): {retrain1.score} and {retrain2.score}, "
        "against {first_co1.score} and {first_co2.score} committed, inside the confirm "
        "campaign's Crafter-only range ({confirm.co_min} to {confirm.co_max}); "
        "make_stone_sword {retrain1.make_stone_sword}% and {retrain2.make_stone_sword}% "
        "(committed {first_co1.make_stone_sword}% and {first_co2.make_stone_sword}%): weak",
    ),
    *(
        (
            "results/audit/crafter_only_retrain/README.md",
            f"| {seed} | {{retrain{seed}.score}} vs {{first_co{seed}.score}} | "
            + " | ".join(
                f"{{retrain{seed}.{name}}} vs {{first_co{seed}.{name}}}"
                for name in ("make_stone_sword", "make_stone_pickaxe", "place_furnace")
            )
            + " |",
        )
        for seed in (1, 2)
    ),
    (
        "results/audit/crafter_only_retrain/README.md",
        "The confirm campaign's 15 Crafter-only runs (seeds 5-19) scored {confirm.co_min} "
        "to {confirm.co_max}.",
    ),
    # CLAIMS.md's audit paragraph: its issue-40 figures are written in
    # envgen/report/campaign_section.py; these re-derive them from the runs.
    (
        "results/CLAIMS.md",
        "the CPU's vector unit within this campaign (Crafter-only {audit.avx512} on "
        "AVX-512, {audit.avx512_n} runs, vs {audit.avx2} on AVX2, {audit.avx2_n} runs; "
        "two-sided Welch p {audit.isa_p}); resumes (the {audit.resumed_n} resumed runs "
        "scored higher, {audit.resumed} vs {audit.not_resumed}); machine load (Spearman "
        "{audit.load_rho}).",
    ),
    (
        "results/CLAIMS.md",
        "exact permutation p of the mean difference {audit.perm_p}; post hoc).",
    ),
    (
        "results/CLAIMS.md",
        "the gap is in stone tools (make_stone_sword {audit.sword_first} vs "
        "{audit.sword_confirm}).",
    ),
)

# {alias: (table, row)}: rows whose figures a passage quotes, as row.<alias> (mean ± std
# of the score over its runs) and status.<alias> (its status in runs.json).
ROWS: dict[str, tuple[str, str]] = {
    "table2.fixed": ("table2", "Fixed (no curriculum)"),
    "table2.adaptive": ("table2", "Adaptive+Dynamic (EnvGen)"),
    "table6.n8": ("table6", "8 envs per call"),
    "table3.c40": ("table3", "update every 0.012M (40 cycles)"),
    "table3.c8": ("table3", "update every 0.06M (8 cycles)"),
    "table3.c4": ("table3", "update every 0.12M (4 cycles)"),
}

# {alias: run folder}: single runs whose figures a passage quotes, as <alias>.score and
# <alias>.<achievement> (its success rate in %), read from the run's final_metrics.json
# through its manifest; a wrong one is named with its run.
RUNS: dict[str, str] = {
    "retrain1": "results/audit/crafter_only_retrain/runs/ca3d42bc0a83/seed-1",
    "retrain2": "results/audit/crafter_only_retrain/runs/ca3d42bc0a83/seed-2",
    "first_co1": "results/runs/ca3d42bc0a83/seed-1",
    "first_co2": "results/runs/ca3d42bc0a83/seed-2",
}

# Figures whose numbers must not appear in README.md or docs/*.md outside a declared
# passage (a hand copy nobody checks).
GUARDED = (
    "confirm.dr_mean",
    "confirm.co_mean",
    "confirm.diff",
    "confirm.lower",
    "first.dr_mean",
    "first.co_mean",
    "first.diff",
    "cross.diff",
    "llm15.diff",
    "llm15.a_mean",
    "llm15.b_mean",
    "sfl.a_mean",
    "sfl.b_mean",
)  # sfl.diff (0.97) and the upper bounds collide with unrelated numbers in the docs


@dataclasses.dataclass(frozen=True)
class Problem:
    """One failed check: where and what."""

    path: str
    line: int | None
    what: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path} line {self.line}"
        return f"{where}: {self.what}"


# --- the figures ------------------------------------------------------------------------
def _h1_figures(
    name: str,
    rows: Mapping[str, Mapping[str, list[float]]],
    claim: CampaignClaim,
    paper: PaperNumbers,
) -> dict[str, str]:
    """A registered campaign's H1 as its README passage prints it: each arm's mean ± std,
    the difference and the one-sided upper bound, keyed `{name}.a` and so on."""
    r = _result({row: rows[row]["score"] for row in (claim.a, claim.b)}, paper, claim)
    assert r.ours_a is not None and r.ours_b is not None
    return {
        f"{name}.a": f"{r.ours_a.mean:.2f} ± {r.ours_a.std:.2f}",
        f"{name}.b": f"{r.ours_b.mean:.2f} ± {r.ours_b.std:.2f}",
        f"{name}.a_mean": f"{r.ours_a.mean:.2f}",
        f"{name}.b_mean": f"{r.ours_b.mean:.2f}",
        f"{name}.diff": f"{_diff(r):+.2f}",
        f"{name}.upper": f"{r.bounds[1]:+.2f}",
    }


def figures(tables: Sequence[TableRecord], runs_root: Path = Path(".")) -> dict[str, str]:
    """Every figure `PHRASES` names, formatted as the docs print it, from the campaign
    tables (their runs.json) and, for resumes and load, their runs' provenance.json
    (paths relative to `runs_root`); `ROWS`' figures from their tables. No campaign
    figure while either campaign is missing or its registered verdict is withheld."""
    by_id = {t.table: t for t in tables}
    out: dict[str, str] = {}
    for alias, (table_id, label) in ROWS.items():
        rows = by_id[table_id].rows if table_id in by_id else ()
        row = next((r for r in rows if r.row == label), None)
        if row is None:
            continue
        out[f"status.{alias}"] = row.status
        if len(row.runs) >= 2:
            s = SampleStats.of([r.score for r in row.runs], label)
            out[f"row.{alias}"] = f"{s.mean:.2f} ± {s.std:.2f}"
    out |= _run_figures(runs_root)
    paper = PaperNumbers.load()
    for name, table_id, claim in (("llm15", LLM15, H1_LLM15), ("sfl", SFL, H1_SFL)):
        if table_id in by_id and withheld_runs(by_id[table_id]) is None:
            out |= _h1_figures(name, _rows(by_id[table_id]), claim, paper)
    if FIRST not in by_id or CONFIRM not in by_id:
        return out
    if withheld_runs(by_id[CONFIRM]) is not None:  # figures wait as the verdict does
        return out
    first, confirm = (_rows(by_id[t]) for t in (FIRST, CONFIRM))

    def score(rows: Mapping[str, Mapping[str, list[float]]], row: str) -> list[float]:
        return rows[row]["score"]

    h1 = _result({H1.a: score(confirm, H1.a), H1.b: score(confirm, H1.b)}, paper)
    out |= _pair("confirm", h1)
    out["confirm.lower"] = f"{h1.bounds[0]:+.2f}"
    out["confirm.p"] = f"{h1.p_adj:.3g}"
    out["confirm.co_min"] = f"{min(score(confirm, H1.b)):.2f}"
    out["confirm.co_max"] = f"{max(score(confirm, H1.b)):.2f}"

    # The first campaign's DR vs Crafter-only, within its family of 4 score claims.
    first_dr = _result({H1.a: score(first, H1.a), H1.b: score(first, H1.b)}, paper)
    out |= _pair("first", first_dr)
    assert first_dr.ours_a is not None and first_dr.ours_b is not None
    sd_a, sd_b = first_dr.ours_a.std, first_dr.ours_b.std
    out["first.diff_plain"] = f"{_diff(first_dr):.2f}"
    out["first.dr_sd"], out["first.co_sd"] = f"{sd_a:.2f}", f"{sd_b:.2f}"
    out["first.rms_sd"] = f"{math.sqrt((sd_a**2 + sd_b**2) / 2):.2f}"
    out["first.co_seed0"] = f"{next(r.score for r in _done(by_id[FIRST], H1.b) if r.seed == 0):.2f}"
    out["first.p"] = f"{first_dr.p_adj:.2g}"  # one claim alone: the unadjusted p
    out["first.scaled"] = f"{first_dr.scaled_diff:+.2f}"
    family = _family(by_id[FIRST], paper)
    dr = family["Domain randomization, EnvGen schedule > Crafter-only"]
    out["first.p_adj"] = f"{dr.p_adj:.3g}"
    out["first.dr_upper"] = f"{dr.bounds[1]:+.2f}"
    heuristic = family["Heuristic designer, EnvGen schedule > Crafter-only"]
    out["first.heuristic_upper"] = f"{heuristic.bounds[1]:+.2f}"
    furnace = "success_rate:place_furnace"
    for key, row in (("furnace_co", H1.b), ("furnace_dr", H1.a)):
        s = SampleStats.of(first[row][furnace], row)
        out[f"first.{key}"] = f"{s.mean:.1f} ± {s.std:.1f}%"

    cross = _result({H1.a: score(confirm, H1.a), H1.b: score(first, H1.b)}, paper)
    out["cross.diff"] = f"{_diff(cross):+.2f}"
    out["cross.bounds"] = f"[{cross.bounds[0]:+.2f}, {cross.bounds[1]:+.2f}]"

    out |= _audit(by_id[FIRST], by_id[CONFIRM], runs_root)
    return out


def _run_figures(runs_root: Path) -> dict[str, str]:
    """`RUNS`' figures: each run's score and success rates (%), two decimals."""

    out: dict[str, str] = {}
    for alias, folder in RUNS.items():
        path = RunDir(runs_root / folder).final_metrics
        try:
            final = json_input.loads(read_run_bytes(path), path)
        except (OSError, json_input.JSONInputError) as exc:
            raise EnvGenError(f"{exc}; restore it from git") from None
        if not isinstance(final, dict) or not isinstance(final.get("success_rates"), dict):
            raise EnvGenError(f"{path}: no score and success rates; restore it from git")
        out[f"{alias}.score"] = f"{final['score']:.2f}"
        for name, rate in final["success_rates"].items():
            out[f"{alias}.{name}"] = f"{rate:.2f}"
    return out


def _rows(table: TableRecord) -> dict[str, dict[str, list[float]]]:
    """{row: {metric: per-run values}} for the done rows: score and every success rate."""
    out: dict[str, dict[str, list[float]]] = {}
    for row in table.rows:
        if row.status != DONE:
            continue
        metrics: dict[str, list[float]] = {"score": [r.score for r in row.runs]}
        for run in row.runs:
            for name, rate in run.success_rates.items():
                metrics.setdefault(f"success_rate:{name}", []).append(rate)
        out[row.row] = metrics
    return out


def _done(table: TableRecord, label: str) -> tuple:
    return next((r.runs for r in table.rows if r.row == label and r.status == DONE), ())


def _result(
    values: Mapping[str, list[float]], paper: PaperNumbers, claim: CampaignClaim = H1
) -> CampaignResult:
    return evaluate_campaign((claim,), {claim.metric: values}, {}, paper)[0]


def _family(table: TableRecord, paper: PaperNumbers) -> dict[str, CampaignResult]:
    """The first campaign's family of score claims, by claim name."""

    claims = CAMPAIGN_CLAIMS[FIRST]
    rows = _rows(table)
    runs = {"score": {row: m["score"] for row, m in rows.items()}}
    results = evaluate_campaign(claims, runs, {}, paper)
    return {r.claim.name: r for r in results}


def _diff(r: CampaignResult) -> float:
    assert r.ours_a is not None and r.ours_b is not None
    return r.ours_a.mean - r.ours_b.mean


def _pair(prefix: str, r: CampaignResult) -> dict[str, str]:
    a, b = r.ours_a, r.ours_b
    assert a is not None and b is not None
    return {
        f"{prefix}.dr": f"{a.mean:.2f} ± {a.std:.2f}",
        f"{prefix}.co": f"{b.mean:.2f} ± {b.std:.2f}",
        f"{prefix}.dr_mean": f"{a.mean:.2f}",
        f"{prefix}.co_mean": f"{b.mean:.2f}",
        f"{prefix}.diff": f"{_diff(r):+.2f}",
    }


def _audit(first: TableRecord, confirm: TableRecord, runs_root: Path) -> dict[str, str]:
    """Issue 40's audit of the confirm campaign's Crafter-only runs: by CPU vector unit,
    by resumes, against machine load, against the first campaign's runs."""

    (ours,) = [r for r in confirm.rows if r.row == H1.b]
    (earlier,) = [r for r in first.rows if r.row == H1.b]
    out: dict[str, str] = {}
    by_isa: dict[str, list[float]] = {}
    resumed: dict[bool, list[float]] = {}
    loads: list[float] = []
    for run in ours.runs:
        sessions = _sessions(runs_root / run.run_dir)
        isa = sessions[0].get("machine", {}).get("torch_cpu_capability", "unknown")
        by_isa.setdefault(str(isa), []).append(run.score)
        resumed.setdefault(len(sessions) > 1, []).append(run.score)
        starts = [s["load_start"][0] for s in sessions if s.get("load_start")]
        loads.append(sum(starts) / len(starts) if starts else math.nan)
    for key, isa in (("avx512", "AVX512"), ("avx2", "AVX2")):
        values = by_isa.get(isa, [])
        out[f"audit.{key}"] = f"{_mean(values):.2f}"
        out[f"audit.{key}_n"] = str(len(values))
    if len(by_isa.get("AVX512", [])) >= 2 and len(by_isa.get("AVX2", [])) >= 2:
        out["audit.isa_p"] = f"{welch_test(by_isa['AVX512'], by_isa['AVX2']).p:.2f}"
    out["audit.resumed"] = f"{_mean(resumed.get(True, [])):.2f}"
    out["audit.resumed_n"] = str(len(resumed.get(True, [])))
    out["audit.not_resumed"] = f"{_mean(resumed.get(False, [])):.2f}"
    scores = [r.score for r in ours.runs]
    rho = scipy_stats.spearmanr(scores, loads).statistic
    out["audit.load_rho"] = f"{rho:.2f}"
    out["audit.perm_p"] = f"{_permutation_p([r.score for r in earlier.runs], scores):.2g}"
    sword = "make_stone_sword"
    out["audit.sword_first"] = f"{_mean([r.success_rates[sword] for r in earlier.runs]):.2f}%"
    out["audit.sword_confirm"] = f"{_mean([r.success_rates[sword] for r in ours.runs]):.2f}%"
    return out


def _sessions(run_dir: Path) -> list[dict]:

    path = RunDir(run_dir).provenance
    try:
        data = json.loads(read_run_bytes(path))
    except (OSError, ValueError, EnvGenError) as exc:
        raise EnvGenError(f"{path}: unreadable ({exc}); restore it from git") from None
    sessions = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(sessions, list) or not sessions:
        raise EnvGenError(f"{path}: no sessions; restore it from git")
    return sessions


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _permutation_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact one-sided permutation p of mean(a) - mean(b): the share of the splits of
    the pooled values into groups of len(a) and len(b) whose difference is as large."""
    pooled = [*a, *b]
    observed = _mean(a) - _mean(b)
    total = sum(pooled)
    hits = count = 0
    for group in itertools.combinations(pooled, len(a)):
        mean_a = sum(group) / len(a)
        mean_b = (total - sum(group)) / len(b)
        hits += mean_a - mean_b >= observed - 1e-12
        count += 1
    return hits / count


# --- the check ----------------------------------------------------------------------------
_NAME = re.compile(r"\{([a-z0-9_.]+)\}")
_ANY_NUMBER = r"[-+−\[]{0,2}\d[-+−\d.,e%±\[\]\s]{0,40}?"
_ANY_WORD = r"[a-z_]+"
_TOKEN = re.compile(r"\d+\.\d{2,}")


def _pattern(passage: str, values: Mapping[str, str] | None) -> re.Pattern[str]:
    """The passage as a regex: whitespace flexible; each figure its value (when `values`
    is given) or any short text, as a named group."""
    parts: list[str] = []
    pos = 0
    for i, m in enumerate(_NAME.finditer(passage)):
        parts.append(_literal(passage[pos : m.start()]))
        if values is None:  # a number, interval or ± pair (or, for a word figure, a word)
            parts.append(f"(?P<f{i}>{_ANY_NUMBER}|{_ANY_WORD})")
        else:
            parts.append(f"(?P<f{i}>{_literal(values[m.group(1)])})")
        pos = m.end()
    parts.append(_literal(passage[pos:]))
    start = "(?m:^)" if passage.startswith("|") else ""  # a table row: from a line's start
    return re.compile(start + "".join(parts))


def _literal(text: str) -> str:
    return (
        r"\s+".join(re.escape(w) for w in re.split(r"\s+", text))
        if text.strip()
        else (r"\s+" if text else "")
    )


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def check(
    values: Mapping[str, str], root: Path = Path("."), write: bool = False
) -> tuple[list[Problem], int]:
    """Every occurrence of every declared passage against `values`, the guard, and every
    other result-looking number (`envgen.evidence.doc_numbers`); (problems, passages
    checked). With `write`, each figure that differs is rewritten with `values`."""
    problems: list[Problem] = []
    covered: dict[str, list[tuple[int, int]]] = {}
    texts: dict[str, str] = {}
    for path, passage in PHRASES:
        file = root / path
        if path not in texts:
            if not file.is_file():
                problems.append(Problem(path, None, "missing"))
                texts[path] = ""
                continue
            texts[path] = file.read_text(encoding="utf-8")
        text = texts[path]
        names = _NAME.findall(passage)
        unknown = [n for n in names if n not in values]
        if unknown:
            problems.append(Problem(path, None, f"{unknown[0]}: the runs give no such figure"))
            continue
        exact = _pattern(passage, values)
        copies = list(_pattern(passage, None).finditer(text))
        if not copies:
            problems.append(
                Problem(path, None, f"passage not found (edit envgen/evidence/docfigures.py "
                        f"PHRASES with the prose): {passage[:70]!r}...")
            )  # fmt: skip
            continue
        edits: list[tuple[int, int, str]] = []
        for copy in copies:  # every copy: a wrong one after a right one is still wrong
            covered.setdefault(path, []).append(copy.span())
            if exact.match(text, copy.start()):
                continue
            for i, name in enumerate(names):
                if " ".join(copy.group(f"f{i}").split()) == values[name]:
                    continue
                problems.append(
                    Problem(
                        path,
                        _line_of(text, copy.start(f"f{i}")),
                        f"{name}{_source(name)} reads {copy.group(f'f{i}')!r}, the runs "
                        f"give {values[name]!r}",
                    )
                )
                edits.append((copy.start(f"f{i}"), copy.end(f"f{i}"), values[name]))
        if write and edits:
            for start, end, value in sorted(edits, reverse=True):
                text = text[:start] + value + text[end:]
            texts[path] = text
            (root / path).write_text(text, encoding="utf-8")
    problems += _unguarded(values, root, covered)
    problems += [Problem(u.path, u.line, u.what) for u in doc_numbers.unchecked(root, covered)]
    return problems, len(PHRASES)


def _source(name: str) -> str:
    """ " (run <its folder>)" for a figure of one run (`RUNS`), else ""."""
    alias = name.rsplit(".", 1)[0]
    return f" (run {RUNS[alias]})" if alias in RUNS else ""


def _unguarded(
    values: Mapping[str, str], root: Path, covered: Mapping[str, list[tuple[int, int]]]
) -> list[Problem]:
    tokens = {t: name for name in GUARDED if name in values for t in _TOKEN.findall(values[name])}
    problems = []
    for file in doc_numbers.doc_files(root):
        rel = file.relative_to(root).as_posix()
        text = file.read_text(encoding="utf-8")
        spans = covered.get(rel, [])
        for m in re.finditer(r"(?<![\d.])\d+\.\d{2,}(?![\d])", text):
            name = tokens.get(m.group())
            if name and not any(a <= m.start() < b for a, b in spans):
                problems.append(
                    Problem(
                        rel,
                        _line_of(text, m.start()),
                        f"{m.group()} ({name}) is a copy no check covers: declare its "
                        "passage in envgen/evidence/docfigures.py PHRASES or point at "
                        "results/CLAIMS.md",
                    )
                )
    return problems


def run(runs_files: Sequence[Path], root: Path = Path("."), write: bool = False) -> list[Problem]:
    """Load the runs.json files and check (or write) the docs' figures."""

    values = figures(load_tables(list(runs_files)), root)
    if not values:
        return [Problem("runs.json", None, "no finished campaign_cpu and campaign_confirm")]
    return check(values, root, write)[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m envgen.evidence.docfigures", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "runs", nargs="*", type=Path, help="runs.json files (default: dvc.yaml's, as verify)"
    )
    parser.add_argument("--write", action="store_true", help="rewrite differing figures")
    args = parser.parse_args(argv)
    try:
        problems = run(args.runs or runs_json_files(), write=args.write)
    except EnvGenError as exc:
        print(f"envgen.evidence.docfigures: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(p)
    written = " (written)" if args.write else ""
    print(f"{len(PHRASES)} passages, {len(problems)} problems{written}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
