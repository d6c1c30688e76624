"""results/CLAIMS.md: every claim of the paper with our measurement and its verdict.

Each claim of `envgen.stats.claims.PAPER_CLAIMS` whose two rows ran is evaluated as
one Holm family (`evaluate_claims`, docs/stats.md); claims with a row that did not
run say which and why. The LLM's measured use (llm_accounting.json of every run)
stands beside the paper's "4 LLM calls", about $0.03 + 3 x $0.04 per run.

    python -m envgen.report.claims RUNS_JSON... --out results/CLAIMS.md
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import scipy.stats

from envgen.checks import OneLineParser
from envgen.errors import EnvGenError
from envgen.report import replay
from envgen.report.inputs import DONE, TableRecord, load_tables, read_accounting
from envgen.report.select import rows_by_label
from envgen.stats.claims import (
    CLAIM_GRADE_PROFILES,
    PAPER_CLAIMS,
    Claim,
    ClaimResult,
    evaluate_claims,
)
from envgen.stats.compare import welch_df
from envgen.stats.paper import load_reported
from envgen.stats.runs import SampleStats

REPRO_COMMAND = "make repro"  # runs dvc repro with params.yaml's profile
CLAIM_GRADE_COMMAND = "dvc exp run -S profile=paper"
SMOKE_BANNER = "smoke-scale, NOT a replication of the paper's claims"
# ENVGEN_PAPER.md, "Agent and training protocol": 4 calls; first ~$0.03, each feedback ~$0.04.
PAPER_CALLS = 4
PAPER_COST_USD = 0.03 + 3 * 0.04


def welch_interval(a: SampleStats, b: SampleStats, confidence: float = 0.95) -> tuple[float, float]:
    """Welch confidence interval of mean(a) - mean(b); NaN when a row has < 2 runs.

    The interval that matches Welch's test (the claims' test): diff +/- t(df) * se.
    """
    diff = a.mean - b.mean
    if a.n < 2 or b.n < 2:
        return math.nan, math.nan
    se = math.sqrt(a.std**2 / a.n + b.std**2 / b.n)
    if se == 0:
        return diff, diff
    half = scipy.stats.t.ppf(0.5 + confidence / 2, welch_df(a, b)) * se
    return diff - half, diff + half


def profile_of(tables: Sequence[TableRecord]) -> str:
    """The profile all tables share, or "mixed (a, b)" (never claim-grade)."""
    profiles = sorted({t.profile for t in tables})
    return profiles[0] if len(profiles) == 1 else f"mixed ({', '.join(profiles)})"


def claims_markdown(tables: Sequence[TableRecord]) -> str:
    """The whole CLAIMS.md text."""
    profile = profile_of(tables)
    runs = rows_by_label(tables)
    scores = {label: [r.score for r in row_runs] for label, row_runs in runs.items()}
    ready = [c for c in PAPER_CLAIMS if c.a in scores and c.b in scores]
    results = evaluate_claims(ready, scores, reported_frame=load_reported(), profile=profile)
    n_runs = sum(len(r) for r in runs.values())
    lines = ["# The paper's claims, measured", ""]
    if profile not in CLAIM_GRADE_PROFILES:
        lines += [
            f"> **{SMOKE_BANNER}.**",
            f"> Profile `{profile}`: every verdict below is "
            'inconclusive by rule (docs/stats.md, "Verdict"); the numbers show that '
            f"the pipeline runs end to end. For the paper's budgets: `{CLAIM_GRADE_COMMAND}`.",
            "",
        ]
    lines += [
        f"Profile `{profile}`; {n_runs} distinct runs over {len(runs)} experiments. "
        f"Reproduce: `{REPRO_COMMAND}` (this profile) or `{CLAIM_GRADE_COMMAND}` "
        "(claim-grade: the paper's steps and runs).",
        "",
        "Designer: every claim's EnvGen rows use the LLM designer, with the model the "
        '"LLM use" table below lists per experiment; the non-LLM designer baselines '
        "(results/tables/designers.md: domain randomization, rule-based heuristic) are "
        "not the paper's method and enter no claim.",
        "",
        "Metric: Crafter score % over the final phase (Heist: success %). Diff = a - b with "
        "its Welch 95% CI; Holm-adjusted p across the claims below; g = Hedges' g; power = "
        "our test's power for the paper's difference (docs/stats.md).",
        "",
        "| Claim | Ours a (n) | Ours b (n) | Diff [95% CI] | Paper diff | Holm p | g (paper g) "
        "| Power | Verdict | Reason |",
        "|" + "---|" * 10,
    ]
    by_claim = {r.claim: r for r in results}
    for claim in PAPER_CLAIMS:
        result = by_claim.get(claim)
        lines.append(_claim_line(result) if result else _not_run_line(claim, tables, scores))
    lines += ["", *_accounting(tables), "", *replay.claims_lines(tables), ""]
    return "\n".join(lines)


def _claim_line(r: ClaimResult) -> str:
    low, high = welch_interval(r.ours_a, r.ours_b)
    ci = "" if math.isnan(low) else f" [{low:+.2f}, {high:+.2f}]"
    return (
        f"| {r.claim.name} | {_stats(r.ours_a)} | {_stats(r.ours_b)} "
        f"| {r.ours_a.mean - r.ours_b.mean:+.2f}{ci} | {r.paper_a.mean - r.paper_b.mean:+.2f} "
        f"| {_num(r.p_holm, '.3g')} | {_num(r.g, '+.2f')} ({r.paper_g:+.2f}) "
        f"| {r.power:.2f} | **{r.verdict}** | {r.reason} |"
    )


def _not_run_line(claim: Claim, tables: Sequence[TableRecord], ran: Mapping[str, object]) -> str:
    missing = [label for label in (claim.a, claim.b) if label not in ran]
    why = "; ".join(_why_missing(label, tables) for label in missing)
    return f"| {claim.name} | - | - | - | - | - | - | - | not run | {why} |"


def _why_missing(label: str, tables: Sequence[TableRecord]) -> str:
    states = [
        f"{row.status.replace('_', ' ')} in {t.table}" + (f" ({row.reason})" if row.reason else "")
        for t in tables
        for row in t.rows
        if row.claim_label() == label and row.status != DONE
    ]
    return f"{label!r}: " + (states[0] if states else "in no table given to the report")


def _stats(s: SampleStats) -> str:
    spread = "" if math.isnan(s.std) else f" ± {s.std:.2f}"
    return f"{s.mean:.2f}{spread} ({s.n})"


def _num(value: float, fmt: str) -> str:
    return "-" if math.isnan(value) else format(value, fmt)


# --- LLM accounting ------------------------------------------------------------------------
def _accounting(tables: Sequence[TableRecord]) -> list[str]:
    lines = [
        "## LLM use, measured",
        "",
        f"The paper: {PAPER_CALLS} LLM calls per EnvGen run (GPT-4-Turbo), about "
        f'${PAPER_COST_USD:.2f} per run ("under $1"). Ours, from each run\'s '
        "llm_accounting.json (cached replies are counted with the tokens recorded with them):",
        "",
        "| Experiment | Runs | Calls per run | Prompt tokens per run | Completion tokens per run "
        "| Cost per run (USD) | Models |",
        "|" + "---|" * 7,
    ]
    for label, runs in rows_by_label(tables).items():
        records = [a for a in (read_accounting(r.run_dir) for r in runs) if a is not None]
        if not records:
            continue
        lines.append(
            f"| {label} | {len(records)} | {_per_run(records, 'calls')} "
            f"| {_per_run(records, 'prompt_tokens')} | {_per_run(records, 'completion_tokens')} "
            f"| {_per_run(records, 'cost_usd', '.4f')} "
            f"| {', '.join(sorted({m for a in records for m in a.get('models', {})}))} |"
        )
    return lines


def _per_run(records: Sequence[Mapping[str, float]], key: str, fmt: str = ".1f") -> str:
    return format(sum(float(a.get(key, 0)) for a in records) / len(records), fmt)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m envgen.report.claims", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("runs", nargs="+", type=Path, help="runs.json files, one per table")
    parser.add_argument("--out", type=Path, required=True, help="the CLAIMS.md to write")
    args = parser.parse_args(argv)
    try:
        text = claims_markdown(load_tables(args.runs))
    except EnvGenError as exc:
        print(f"envgen.report.claims: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
