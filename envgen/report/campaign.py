"""CLAIMS.md's campaign section: each campaign's own claims, kept apart from the paper's.

A campaign table (`TableRecord.is_campaign`) enters neither the paper's claim families
nor the profile line of CLAIMS.md; its claims (`envgen.stats.campaign`) are judged by
their own rule on the runs finished so far, and the section says in its heading and
first line that it tests something else than the paper.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from envgen.report.inputs import DONE, TableRecord
from envgen.stats.campaign import CAMPAIGN_FAMILIES, CampaignResult, evaluate_campaign
from envgen.stats.claims import PaperNumbers
from envgen.stats.runs import SampleStats
from envgen.stats.verdict import ALPHA

CAMPAIGN_SECTION = "Campaigns"
WHAT = {
    "campaign_cpu": "EnvGen's schedule with designer D vs Crafter-only, nature network, "
    "CPU (profile cpu)",
}


def campaign_lines(tables: Sequence[TableRecord], paper: PaperNumbers) -> list[str]:
    """The section's Markdown lines; empty when no campaign table is given."""
    campaigns = [t for t in tables if t.is_campaign]
    if not campaigns:
        return []
    lines = [
        f"## {CAMPAIGN_SECTION}: a different claim from the paper's",
        "",
        "A campaign tests what this project's machines can train, with designers that need "
        "no LLM and a smaller network: not the paper's claim (GPT-4-Turbo designer, the "
        "paper's network), and none of its runs enters the verdicts above. Rule "
        '(docs/stats.md, "Campaign claims"): one-sided Welch test of a > b on the score (or '
        "on one achievement's success rate), Bonferroni across a family's m claims at "
        f"α = {ALPHA} (level α/m); **better** "
        "when the one-sided lower bound of a − b lies above 0, **worse** when the upper "
        "bound lies below 0, otherwise no difference detected, with the power the test had "
        "for the paper's point difference (none for achievements: the paper gives their rates "
        "without a spread). The paper's differences (GPT-4-Turbo, its network) are context "
        "only. Fewer than 2 finished runs in "
        "an arm: not enough runs. Fewer than the campaign plans: the verdict is marked "
        "**interim** (read, not final: the plan's seeds are run whatever it says).",
    ]
    for table in campaigns:
        lines += ["", *_campaign(table, paper)]
    return lines


def _campaign(table: TableRecord, paper: PaperNumbers) -> list[str]:
    families = {
        name: claims[table.table]
        for name, claims in CAMPAIGN_FAMILIES.items()
        if claims.get(table.table)
    }
    what = WHAT.get(table.table, table.caption)
    head = [f"### {table.table}: {what}", ""]
    if not families:
        return [*head, "No claims are defined for this campaign (envgen.stats.campaign)."]
    done = [r for r in table.rows if r.status == DONE]
    planned = {r.row: r.planned_runs or len(r.runs) for r in table.rows}
    lines = [
        *head,
        f"Profile `{table.profile}`; {len(families)} families of claims, each "
        "Bonferroni-corrected on its own. Rows, runs and every achievement's rates: "
        f"results/tables/{table.table}.md.",
    ]
    for name, claims in families.items():
        metrics = {c.metric for c in claims}
        runs = {m: {r.row: [run.value(m) for run in r.runs] for r in done} for m in metrics}
        results = evaluate_campaign(claims, runs, planned, paper)
        lines += [
            "",
            f"#### {name}: {len(claims)} claims, each at level {results[0].level:.3g}",
            "",
            "| Claim | Ours a (n of planned) | Ours b (n of planned) | Diff [one-sided bounds] "
            "| adj. p | g | Paper a − b (context) | Power | Verdict |",
            "|" + "---|" * 9,
            *(_line(r) for r in results),
        ]
    return lines


def _line(r: CampaignResult) -> str:
    a, b = r.ours_a, r.ours_b
    diff = "-"
    if a is not None and b is not None:
        low, high = r.bounds
        bounds = "" if math.isnan(low) else f" [{low:+.2f}, {high:+.2f}]"
        diff = f"{a.mean - b.mean:+.2f}{bounds}"
    return (
        f"| {r.claim.name} | {_arm(a, r.planned[0])} | {_arm(b, r.planned[1])} | {diff} "
        f"| {_num(r.p_adj, '.3g')} | {_num(r.g, '+.2f')} "
        f"| {r.paper_diff:+.1f} ({r.claim.context[0]} − {r.claim.context[1]}) "
        f"| {_num(r.power, '.2f')} | **{r.verdict}** |"
    )


def _arm(s: SampleStats | None, planned: int) -> str:
    if s is None:
        return f"- (0 of {planned})"
    spread = "" if math.isnan(s.std) else f" ± {s.std:.2f}"
    return f"{s.mean:.2f}{spread} ({s.n} of {planned})"


def _num(value: float, fmt: str) -> str:
    return "-" if math.isnan(value) else format(value, fmt)
