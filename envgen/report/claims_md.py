"""results/CLAIMS.md: every claim of the paper with our measurement and its verdict.

Each family of claims (`envgen.stats.paper_claims.FAMILIES`) whose rows ran is evaluated
together (Bonferroni, docs/stats.md); a claim that cannot be tested says why, and scale
artefacts (`envgen.report.flags`) are flagged on the claim they affect. The LLM's
measured use (every run's LLM accounting) stands beside the paper's.

    python -m envgen.report.claims_md RUNS_JSON... --out results/CLAIMS.md
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from envgen.errors import EnvGenError
from envgen.input_checks import OneLineParser
from envgen.report import replay
from envgen.report.campaign_section import CAMPAIGN_SECTION, campaign_lines
from envgen.report.flags import claim_flags
from envgen.report.inputs import DONE, TableRecord, load_tables, profile_of, read_accounting
from envgen.report.notes import Notes, number
from envgen.report.select import Arm, arms_by_label
from envgen.stats.paper import load_reported_llm_cost
from envgen.stats.paper_claims import (
    ENVGEN,
    FAMILIES,
    FIRST_UNLOCK,
    SUCCESS,
    TABLE_METRICS,
    Claim,
    ClaimResult,
    PaperNumbers,
    evaluate_claims,
)
from envgen.stats.runs import SampleStats
from envgen.stats.verdict import ALPHA, CLAIM_GRADE_PROFILES
from envgen.store.run_dir import LLM_ACCOUNTING

REPRO_COMMAND = "make repro"  # runs dvc repro with params.yaml's profile
CLAIM_GRADE_COMMAND = "dvc exp run -S profile=paper"
SMOKE_BANNER = "smoke-scale, NOT a replication of the paper's claims"


def claims_markdown(tables: Sequence[TableRecord]) -> str:
    """The whole CLAIMS.md text; campaign tables get their own section
    (`report.campaign_section`)."""
    campaigns = [t for t in tables if t.is_campaign]
    tables = [t for t in tables if not t.is_campaign]
    profile = profile_of(tables)
    arms = arms_by_label(tables)
    paper = PaperNumbers.load()
    n_runs = sum(len(a.runs) for a in arms.values())
    lines = ["# The paper's claims, measured", ""]
    if profile not in CLAIM_GRADE_PROFILES:
        lines += [
            f"> **{SMOKE_BANNER}.**",
            f"> Profile `{profile}`: every verdict below is "
            'inconclusive by rule (docs/stats.md, "Verdict"); the numbers show that '
            f"the pipeline runs end to end. For the paper's budgets: `{CLAIM_GRADE_COMMAND}`.",
        ]
        if campaigns:
            lines.append(
                f'> "{CAMPAIGN_SECTION}", at the end, is not smoke-scale: it tests its own '
                "claims (non-LLM designers, a smaller network) at its profile's budgets."
            )
        lines.append("")
    lines += [
        f"Profile `{profile}`; {n_runs} distinct runs over {len(arms)} experiments, one "
        f"configuration each. Reproduce: `{REPRO_COMMAND}` (this profile) or "
        f"`{CLAIM_GRADE_COMMAND}` (claim-grade: the paper's steps and runs).",
        "",
        "Designer: every claim's EnvGen rows use the LLM designer, with the model the "
        '"LLM use" table below lists per experiment; the non-LLM designer baselines '
        "(results/tables/designers.md: domain randomization, rule-based heuristic) are "
        "not the paper's method and enter no claim.",
        "",
        "Each claim is oriented so the paper finds a - b > 0. Diff = our a - b with its "
        "Welch interval at the family's Bonferroni level 1 - 0.05/m (m = testable claims "
        "in the family), which excludes 0 exactly when adj. p < 0.05; the verdict reads "
        "that interval against the paper's difference, or, where the paper's own numbers "
        'are a tie, runs an equivalence test (TOST) (docs/stats.md, "Verdict"). '
        "g = Hedges' g; power = our test's power for the paper's difference. "
        "Flags (`FLAG`) mark scale artefacts: a and b are one configuration, unequal step "
        "budgets where the paper's are equal, the same runs tested by an earlier claim.",
    ]
    for family, claims in FAMILIES.items():
        lines += ["", *_family(family, claims, arms, tables, paper, profile)]
    lines += ["", *_accounting(tables, paper), "", *replay.claims_lines(tables), ""]
    if campaigns:
        lines += [*campaign_lines(campaigns, paper), ""]
    return "\n".join(lines)


def _family(
    family: str,
    claims: Sequence[Claim],
    arms: Mapping[str, Arm],
    tables: Sequence[TableRecord],
    paper: PaperNumbers,
    profile: str,
) -> list[str]:
    values: dict[str, dict[str, list[float]]] = {}
    blocked: dict[Claim, str] = {}
    for claim in claims:
        got = _values(claim, arms, tables)
        if isinstance(got, str):
            blocked[claim] = got
        else:
            values.setdefault(claim.metric, {}).update(got)
    ready = [c for c in claims if c not in blocked]
    configs = {label: arm.config_hash for label, arm in arms.items()}
    designers = {label: arm.designer for label, arm in arms.items()}
    results = evaluate_claims(
        ready, values, paper=paper, profile=profile, configs=configs, designers=designers
    )
    by_claim = {r.claim: r for r in results}
    flags = claim_flags(claims, arms, paper.results)
    level = results[0].level if results else ALPHA
    lines = [
        f"## {family}",
        "",
        f"{sum(not math.isnan(r.p_adj) for r in results)} testable claims; per-claim "
        f"level {level:.3g}, so each interval is a {100 * (1 - level):.3g}% CI.",
        "",
        "| Claim | Ours a (n) | Ours b (n) | Diff [CI] | Paper diff | adj. p | g (paper g) "
        "| Power | Verdict | Reason | Flags |",
        "|" + "---|" * 11,
    ]
    notes = Notes()
    for claim in claims:
        flag = "; ".join(flags.get(claim, [])) or "-"
        if claim in by_claim:
            lines.append(_claim_line(by_claim[claim], flag, notes))
        else:
            reason = notes.cell(blocked[claim])
            lines.append(
                f"| {claim.name} | - | - | - | - | - | - | - | not tested | "
                f"{reason} | {notes.cell(flag)} |"
            )
    return [*lines, *notes.lines()]


def _values(
    claim: Claim, arms: Mapping[str, Arm], tables: Sequence[TableRecord]
) -> dict[str, list[float]] | str:
    """{label: per-run values of the claim's metric} for both rows, or why it cannot be tested."""
    missing = [label for label in (claim.a, claim.b) if label not in arms]
    if missing:
        return "not run: " + "; ".join(_why_missing(label, tables) for label in missing)
    out: dict[str, list[float]] = {}
    for label in (claim.a, claim.b):
        runs = arms[label].runs
        if claim.metric in TABLE_METRICS:
            out[label] = [r.value(claim.metric) for r in runs]
            continue
        kind, achievement = claim.metric.split(":", 1)
        if kind == SUCCESS:
            if any(achievement not in r.success_rates for r in runs):
                return f"untestable: runs.json of {label!r} has no per-achievement success rates"
            out[label] = [r.value(claim.metric) for r in runs]
        elif kind == FIRST_UNLOCK:
            steps = [r.first_unlock_step.get(achievement) for r in runs]
            never = sum(s is None for s in steps)
            if never:
                return (
                    f"untestable: {never} of {len(runs)} runs of {label!r} never unlocked "
                    f"{achievement} in the final phase (censored); the test of first-unlock "
                    "steps needs every run to unlock it"
                )
            out[label] = [float(s) for s in steps if s is not None]
    return out


def _claim_line(r: ClaimResult, flags: str, notes: Notes) -> str:
    fmt = ",.0f" if r.claim.metric.startswith(FIRST_UNLOCK) else ".2f"
    low, high = r.ci
    ci = "" if math.isnan(low) else f" [{low:+{fmt}}, {high:+{fmt}}]"
    verdict, reason = notes.cell(r.verdict), notes.cell(r.reason)
    return (
        f"| {r.claim.name} | {_stats(r.ours_a, fmt)} | {_stats(r.ours_b, fmt)} "
        f"| {r.ours_a.mean - r.ours_b.mean:+{fmt}}{ci} | {_paper_diff(r, fmt)} "
        f"| {number(r.p_adj, '.3g')} | {number(r.g, '+.2f')} ({number(r.paper_g, '+.2f')}) "
        f"| {number(r.power, '.2f')} | **{verdict}** | {reason} | {notes.cell(flags)} |"
    )


def _paper_diff(r: ClaimResult, fmt: str) -> str:
    if r.paper.diff is None:
        return "direction only"
    text = f"{r.paper.diff:+{fmt}}"
    if r.paper.tie_margin is not None:
        text += f" (a tie: ±{r.paper.tie_margin:.2f})"
    if r.claim.metric not in TABLE_METRICS:
        text += " (approx.)"
    return text


def _why_missing(label: str, tables: Sequence[TableRecord]) -> str:
    states = [
        f"{row.status.replace('_', ' ')} in {t.table}" + (f" ({row.reason})" if row.reason else "")
        for t in tables
        for row in t.rows
        if row.claim_label() == label and row.status != DONE
    ]
    text = f"{label!r}: " + (states[0] if states else "in no table given to the report")
    return " ".join(text.split()).replace("|", "\\|")  # one Markdown table cell


def _stats(s: SampleStats, fmt: str = ".2f") -> str:
    spread = "" if math.isnan(s.std) else f" ± {s.std:{fmt}}"
    return f"{s.mean:{fmt}}{spread} ({s.n})"


# --- LLM accounting ------------------------------------------------------------------------
def _accounting(tables: Sequence[TableRecord], paper: PaperNumbers) -> list[str]:
    calls = int(paper.results.xs(ENVGEN, level="row").iloc[0]["llm_calls"])
    cost = load_reported_llm_cost()
    usd = cost["initial"] + (calls - 1) * cost["feedback"]
    lines = [
        "## LLM use, measured",
        "",
        f"The paper (data/paper): {calls} LLM calls per EnvGen run, the first about "
        f"${cost['initial']:.2f} and each feedback call about ${cost['feedback']:.2f}, so about "
        f"${usd:.2f} per run. Ours, from each run's "
        f"{LLM_ACCOUNTING} (cached replies are counted with the tokens recorded with them):",
        "",
        "| Experiment | Runs | Calls per run | Prompt tokens per run | Completion tokens per run "
        "| Cost per run (USD) | Models |",
        "|" + "---|" * 7,
    ]
    for label, arm in arms_by_label(tables).items():
        records = [a for a in (read_accounting(r.run_dir) for r in arm.runs) if a is not None]
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
        prog="python -m envgen.report.claims_md", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("runs", nargs="+", type=Path, help="runs.json files, one per table")
    parser.add_argument("--out", type=Path, required=True, help="the CLAIMS.md to write")
    args = parser.parse_args(argv)
    try:
        text = claims_markdown(load_tables(args.runs))
    except EnvGenError as exc:
        print(f"envgen.report.claims_md: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
