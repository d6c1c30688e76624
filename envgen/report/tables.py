"""Results tables: our rows beside the paper's, as CSV and Markdown, plus a metrics JSON.

One table per runs.json. A row shows our mean, std, 95% t-interval of the mean and
number of runs (docs/stats.md) next to the paper's mean +/- std, and in its note the
scale artefacts (`envgen.report.flags`); a row that did not run says why and how to fix
it, a reported-only row shows the paper's numbers alone. "Score" is the game's table
number: the Crafter score, or Heist's test success rate, which the header then names.

    python -m envgen.report.tables RUNS_JSON... --out results/tables \
        --metrics results/metrics.json
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from envgen.input_checks import safe_name
from envgen.report import replay
from envgen.report.achievements import achievement_frame, achievement_markdown, comparison_markdown
from envgen.report.campaign_section import CAMPAIGN_SECTION, withheld_runs
from envgen.report.flags import row_flags
from envgen.report.inputs import DONE, RowRecord, TableRecord, profile_of, report_main
from envgen.stats.campaign_claims import WITHHELD
from envgen.stats.campaign_spec import words
from envgen.stats.paper import load_reported
from envgen.stats.summary import summarize_row
from envgen.store.provenance import PROVENANCE

METRICS = ("score", "reward")
SCORE_NAMES = {"crafter": "Score %", "heist": "Success %"}  # the paper's column names
COLUMNS = (
    "row",
    "status",
    "n_runs",
    *(f"{m}_{s}" for m in METRICS for s in ("mean", "std", "ci_low", "ci_high")),
    *(f"paper_{m}_{s}" for m in METRICS for s in ("mean", "std")),
    "paper_n_runs",
    "note",
)


def table_frame(table: TableRecord, reported: pd.DataFrame) -> pd.DataFrame:
    """One line per row with `COLUMNS`; NaN where a value does not exist. `reported`:
    `envgen.stats.paper.load_reported()`."""
    lines = []
    flags = row_flags(table, reported)
    for row in table.rows:
        n_runs = len(row.runs) if row.status == DONE else 0
        line: dict[str, object] = {"row": row.row, "status": row.status, "n_runs": n_runs}
        if row.status == DONE:
            for metric in METRICS:
                values = [getattr(run, metric) for run in row.runs]
                summary = summarize_row(values, name=f"{table.table}/{row.row}")
                for stat in ("mean", "std", "ci_low", "ci_high"):
                    line[f"{metric}_{stat}"] = getattr(summary, stat)
        line.update(_paper(reported, table.table, row))
        line["note"] = "; ".join(filter(None, [_note(row), *flags.get(row.row, [])]))
        lines.append(line)
    return pd.DataFrame(lines, columns=list(COLUMNS))


def _paper(reported: pd.DataFrame, table: str, row: RowRecord) -> dict[str, object]:
    """The paper's numbers for `reported_as`, else (table, label), else the label alone. Row
    labels are unique across the paper's tables (data/paper/README.md), so a row that a
    table of ours borrows from another table is still found."""
    key = row.reported_as or (table, row.row)
    if key in reported.index:
        record = reported.loc[key]
    else:
        matches = reported[reported.index.get_level_values("row") == key[1]]
        if len(matches) != 1:
            return {"paper_n_runs": math.nan}
        record = matches.iloc[0]
    out: dict[str, object] = {
        f"paper_{m}_{s}": float(record[f"{m}_{s}"]) for m in METRICS for s in ("mean", "std")
    }
    out["paper_n_runs"] = math.nan if pd.isna(record["n_runs"]) else int(record["n_runs"])
    return out


def _note(row: RowRecord) -> str:
    if row.status == DONE:
        paper = f"paper's number: {' / '.join(row.reported_as)}" if row.reported_as else ""
        return "; ".join(filter(None, [paper, row.reason]))  # e.g. a campaign in progress
    words = row.status.replace("_", " ")
    return f"{words}: {row.reason}" if row.reason else words


# --- Markdown ---------------------------------------------------------------------------
def caption(table: TableRecord) -> str:
    """The caption line: table, caption, profile, run count, and whether claim-grade."""
    if table.claim_grade:
        grade = "claim-grade"
    elif table.is_campaign:
        grade = f'a campaign: its own claims (CLAIMS.md, "{CAMPAIGN_SECTION}"), not the paper\'s'
    else:
        grade = "NOT claim-grade: smoke-scale numbers"
    return (
        f"{table.table}: {table.caption}. Profile `{table.profile}`, {grade}; "
        f"{table.n_runs} runs. Ours: mean ± std, 95% t-interval of the mean, n runs; "
        f"paper: mean ± std."
    )


def score_name(table: TableRecord) -> str:
    """The score column's name: the game's (Heist: success %), "Score %" if mixed or unknown."""
    names = {SCORE_NAMES[game] for game in table.games}
    return names.pop() if len(names) == 1 else SCORE_NAMES["crafter"]


def to_markdown(table: TableRecord, frame: pd.DataFrame) -> str:
    """The table as GitHub Markdown, caption first."""
    score = score_name(table)
    header = (
        f"| Row | {score} (ours) | 95% CI | n | Reward (ours) | {score} (paper) | "
        "Reward (paper) | Note |"
    )
    lines = [f"**{caption(table)}**", "", header, "|" + "---|" * 8]
    for r in frame.itertuples(index=False):
        cells = [
            r.row,
            _pm(r.score_mean, r.score_std),
            _ci(r.score_ci_low, r.score_ci_high),
            str(r.n_runs) if r.status == DONE else "-",
            _pm(r.reward_mean, r.reward_std),
            _pm(r.paper_score_mean, r.paper_score_std),
            _pm(r.paper_reward_mean, r.paper_reward_std),
            r.note.replace("|", "\\|"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if table.n_runs:
        lines += ["", f"Trained on ({PROVENANCE}): {table.machines()}."]
    lines += replay.row_lines(table)
    return "\n".join(lines) + "\n"


def _pm(mean: float, std: float) -> str:
    if pd.isna(mean):
        return "-"
    if pd.isna(std):
        return f"{mean:.2f} (one run)"
    return f"{mean:.2f} ± {std:.2f}"


def _ci(low: float, high: float) -> str:
    return "-" if pd.isna(low) else f"[{low:.2f}, {high:.2f}]"


# --- metrics for `dvc metrics show` -----------------------------------------------------
def metrics(frames: dict[str, pd.DataFrame], profile: str) -> dict[str, Any]:
    """{"profile": profile, table: {row: {score_mean, reward_mean, n_runs, paper_score_mean}}}
    of done rows; the profile says whether the numbers are claim-grade."""
    out: dict[str, Any] = {"profile": profile}
    for table, frame in frames.items():
        done = frame[frame["status"] == DONE]
        out[table] = {
            r.row: {
                "score_mean": round(float(r.score_mean), 4),
                "reward_mean": round(float(r.reward_mean), 4),
                "n_runs": int(r.n_runs),
                **(
                    {}
                    if pd.isna(r.paper_score_mean)
                    else {"paper_score_mean": float(r.paper_score_mean)}
                ),
            }
            for r in done.itertuples(index=False)
        }
    return out


def write_tables(tables: Sequence[TableRecord], out_dir: Path, metrics_path: Path) -> list[Path]:
    """Write <out_dir>/<table>.csv and .md for each table and the metrics JSON."""
    reported = load_reported()
    out_dir.mkdir(parents=True, exist_ok=True)
    frames: dict[str, pd.DataFrame] = {}
    written = []
    for table in tables:
        safe_name(table.table, f"{table.source}: table")  # its files stay under out_dir
        withheld = withheld_runs(table)
        if withheld is not None:  # a registered campaign in progress: no scores yet
            md = out_dir / f"{table.table}.md"
            registration = words(table.table).document
            md.write_text(
                f"{table.table}: {table.caption}.\n\n**{WITHHELD}: {withheld}** "
                f"({registration}): its rows, scores and figures appear when every planned "
                "run is in.\n",
                encoding="utf-8",
            )
            written.append(md)
            continue
        frame = table_frame(table, reported)
        frames[table.table] = frame
        csv, md = out_dir / f"{table.table}.csv", out_dir / f"{table.table}.md"
        frame.to_csv(csv, index=False, float_format="%.6g")
        markdown = to_markdown(table, frame)
        if table.is_campaign:  # which skills each designer moved, beside the score
            rates = achievement_frame(table)
            rates_csv = out_dir / f"{table.table}_achievements.csv"
            rates.to_csv(rates_csv, float_format="%.6g")
            markdown += "\n".join(achievement_markdown(table, rates)) + "\n"
            markdown += "\n".join(comparison_markdown(table)) + "\n"
            written.append(rates_csv)
        md.write_text(markdown, encoding="utf-8")
        written += [csv, md]
    metrics_path.parent.mkdir(parents=True, exist_ok=True)
    # the paper's tables' profile (a campaign's own is in its caption)
    profile = profile_of([t for t in tables if not t.is_campaign] or tables)
    metrics_path.write_text(json.dumps(metrics(frames, profile), indent=2, sort_keys=True) + "\n")
    return [*written, metrics_path]


def main(argv: Sequence[str] | None = None) -> int:
    return report_main(
        argv,
        "envgen.report.tables",
        __doc__,
        ("--metrics", "summary metrics JSON"),
        lambda tables, out, metrics: [f"wrote {p}" for p in write_tables(tables, out, metrics)],
    )


if __name__ == "__main__":
    raise SystemExit(main())
