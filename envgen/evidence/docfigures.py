"""Result figures quoted in README.md, docs/ and results' Markdown: derived from the runs.

Prose that quotes a result is filled from docs/templates/ (`doc_templates`); this module
computes every figure they name, at the precision printed, from the runs.json files
CLAIMS.md is built from (the audit's, also from those runs' provenance.json; `RUNS`',
from one run's final_metrics.json).

    python -m envgen.evidence.docfigures            # check; exit 1 naming file, figure, value
    python -m envgen.evidence.docfigures --write    # regenerate each passage from the runs

The check names, one line each: a copy that differs from its filled template (each wrong
figure with what the runs give), a passage its doc lacks, a `GUARDED` headline figure
outside every passage, and any other result-looking number outside every passage not
listed as not a result (`doc_numbers`). `envgen verify` runs it as "docs figures".
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from scipy import stats as scipy_stats

from envgen.errors import EnvGenError
from envgen.evidence import doc_numbers, doc_templates
from envgen.evidence.doc_templates import Problem
from envgen.report.campaign_section import registered_references, withheld_runs
from envgen.report.inputs import DONE, TableRecord, load_tables, runs_json_files
from envgen.stats.campaign_claims import CampaignResult, evaluate_campaign, registered_sentence
from envgen.stats.campaign_spec import CampaignClaim, families, primary, words
from envgen.stats.compare import welch_test
from envgen.stats.paper_claims import PaperNumbers
from envgen.stats.runs import SampleStats
from envgen.store import read_provenance
from envgen.store.identity import read_mapping
from envgen.store.run_dir import RunDir

FIRST, CONFIRM, LLM15 = "campaign_cpu", "campaign_confirm", "campaign_llm15"
SFL, HEADLINE = "campaign_sfl", "campaign_headline"
Rows = dict[str, dict[str, list[float]]]  # {row: {metric: per-run values}}

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

# Figures whose numbers must not appear in README.md or docs/*.md outside every passage
# of the templates (a hand copy nobody checks); sfl.diff (0.97) and the upper bounds
# collide with unrelated numbers in the docs.
GUARDED = tuple(
    "confirm.dr_mean confirm.co_mean confirm.diff confirm.lower first.dr_mean first.co_mean "
    "first.diff cross.diff llm15.diff llm15.a_mean llm15.b_mean sfl.a_mean sfl.b_mean "
    "headline.diff headline.a_mean headline.b_mean".split()
)


# --- the figures ------------------------------------------------------------------------
def figures(tables: Sequence[TableRecord], runs_root: Path = Path(".")) -> dict[str, str]:
    """Every figure the templates may name, formatted as the docs print it, from the campaign
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
    for name, table_id in (("llm15", LLM15), ("sfl", SFL), ("headline", HEADLINE)):
        if table_id in by_id and withheld_runs(by_id[table_id]) is None:  # H1: a vs b
            r = _h1(primary(table_id), paper, _rows(by_id[table_id]))
            out |= _pair(name, r, "a", "b") | _verdict(name, r, table_id, paper)
    if FIRST not in by_id or CONFIRM not in by_id:
        return out
    if withheld_runs(by_id[CONFIRM]) is not None:  # figures wait as the verdict does
        return out
    first, confirm = (_rows(by_id[t]) for t in (FIRST, CONFIRM))
    H1 = primary(CONFIRM)  # the confirm campaign's registered H1
    h1 = _h1(H1, paper, confirm)
    out |= _pair("confirm", h1)
    out["confirm.lower"] = f"{h1.bounds[0]:+.2f}"
    out["confirm.p"] = f"{h1.p_adj:.3g}"
    out["confirm.co_min"] = f"{min(confirm[H1.b]['score']):.2f}"
    out["confirm.co_max"] = f"{max(confirm[H1.b]['score']):.2f}"

    # The first campaign's DR vs Crafter-only, within its family of 4 score claims.
    first_dr = _h1(H1, paper, first)
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

    cross = _h1(H1, paper, confirm, first)
    out["cross.diff"] = f"{_diff(cross):+.2f}"
    out["cross.bounds"] = f"[{cross.bounds[0]:+.2f}, {cross.bounds[1]:+.2f}]"

    out |= _audit(by_id[FIRST], by_id[CONFIRM], runs_root)
    return out


def _run_figures(runs_root: Path) -> dict[str, str]:
    """`RUNS`' figures: each run's score and success rates (%), two decimals."""
    out: dict[str, str] = {}
    for alias, folder in RUNS.items():
        path = RunDir(runs_root / folder).final_metrics
        final = read_mapping(path)
        if not isinstance(final.get("success_rates"), dict):
            raise EnvGenError(f"{path}: no score and success rates; restore it from git")
        out[f"{alias}.score"] = f"{final['score']:.2f}"
        for name, rate in final["success_rates"].items():
            out[f"{alias}.{name}"] = f"{rate:.2f}"
    return out


def _rows(table: TableRecord) -> Rows:
    """{row: {metric: per-run values}} for the done rows: score and every success rate."""
    out: Rows = {}
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


def _h1(
    claim: CampaignClaim, paper: PaperNumbers, a_rows: Rows, b_rows: Rows | None = None
) -> CampaignResult:
    """`claim` on the scores of its row a in `a_rows` and its row b in `b_rows` (default:
    the same rows)."""
    b_rows = a_rows if b_rows is None else b_rows
    values = {claim.a: a_rows[claim.a]["score"], claim.b: b_rows[claim.b]["score"]}
    return evaluate_campaign((claim,), {claim.metric: values}, {}, paper)[0]


def _family(table: TableRecord, paper: PaperNumbers) -> dict[str, CampaignResult]:
    """The first campaign's family of score claims, by claim name."""
    claims = families(FIRST)[0].claims
    rows = _rows(table)
    runs = {"score": {row: m["score"] for row, m in rows.items()}}
    results = evaluate_campaign(claims, runs, {}, paper)
    return {r.claim.name: r for r in results}


def _diff(r: CampaignResult) -> float:
    assert r.ours_a is not None and r.ours_b is not None
    return r.ours_a.mean - r.ours_b.mean


def _pair(prefix: str, r: CampaignResult, a: str = "dr", b: str = "co") -> dict[str, str]:
    """Both arms' mean ± std and means, and the difference, as `{prefix}.{a}` and so on."""
    arm_a, arm_b = r.ours_a, r.ours_b
    assert arm_a is not None and arm_b is not None
    return {
        f"{prefix}.{a}": f"{arm_a.mean:.2f} ± {arm_a.std:.2f}",
        f"{prefix}.{b}": f"{arm_b.mean:.2f} ± {arm_b.std:.2f}",
        f"{prefix}.{a}_mean": f"{arm_a.mean:.2f}",
        f"{prefix}.{b}_mean": f"{arm_b.mean:.2f}",
        f"{prefix}.diff": f"{_diff(r):+.2f}",
    }


def _verdict(prefix: str, r: CampaignResult, table_id: str, paper: PaperNumbers) -> dict[str, str]:
    """A registered campaign's H1 as its registration worded each verdict, with its bounds
    and p as the verdict prints them (`{prefix}.verdict`, `.lower`, `.upper`, `.p`); the
    references are those it names from the paper (llm15's, sfl's, headline's)."""
    registration = words(table_id)
    assert registration is not None and registration.paper_references, table_id
    refs = registered_references(r, None, registration, paper)
    return {
        f"{prefix}.verdict": registered_sentence(r, refs, registration),
        f"{prefix}.lower": f"{r.bounds[0]:+.2f}",
        f"{prefix}.upper": f"{r.bounds[1]:+.2f}",
        f"{prefix}.p": f"{r.p_adj:.3g}",
    }


def _audit(first: TableRecord, confirm: TableRecord, runs_root: Path) -> dict[str, str]:
    """The audit of the confirm campaign's Crafter-only runs: by CPU vector unit, by
    resumes, against machine load, against the first campaign's runs."""
    crafter_only = primary(CONFIRM).b
    (ours,) = [r for r in confirm.rows if r.row == crafter_only]
    (earlier,) = [r for r in first.rows if r.row == crafter_only]
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
    sessions = (read_provenance(run_dir) or {}).get("sessions")
    if not isinstance(sessions, list) or not sessions:
        raise EnvGenError(f"{RunDir(run_dir).provenance}: no sessions; restore it from git")
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
def check(
    values: Mapping[str, str], root: Path = Path("."), write: bool = False
) -> tuple[list[Problem], int]:
    """Every passage of the templates against `values` at every copy, the guard, and
    every other result-looking number (`envgen.evidence.doc_numbers`); (problems,
    passages checked). With `write`, each differing copy is regenerated from `values`."""
    passages = doc_templates.load(root)
    source = {alias: f" (run {folder})" for alias, folder in RUNS.items()}
    problems, covered = doc_templates.check(passages, values, root, write, source)
    if write:  # the checks below read the docs as written: the copies' spans as written
        covered = doc_templates.check(passages, values, root, source=source)[1]
    guarded = {name: values[name] for name in GUARDED if name in values}
    problems += doc_templates.copies_outside(guarded, doc_numbers.doc_files(root), root, covered)
    problems += doc_numbers.unchecked(root, covered)
    return problems, len(passages)


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
    parser.add_argument("--write", action="store_true", help="regenerate each differing passage")
    args = parser.parse_args(argv)
    try:
        problems = run(args.runs or runs_json_files(), write=args.write)
        passages = len(doc_templates.load())
    except EnvGenError as exc:
        print(f"envgen.evidence.docfigures: {exc}", file=sys.stderr)
        return 1
    for p in problems:
        print(p)
    written = " (written)" if args.write else ""
    print(f"{passages} passages, {len(problems)} problems{written}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
