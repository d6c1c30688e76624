"""The paper's figures from our runs: one function per figure (inputs, output path).

Each figure function takes plain data and an output path without suffix and writes
<path>.png and <path>.pdf (matplotlib's object API: no pyplot, no global state). `main`
picks the rows each figure needs by the paper's labels and writes every figure it has
data for (a campaign: its own, never the paper's), the score-vs-step CSVs for `dvc plots
show` (one per row) and, with `--curves`, one learning-curve file per table:

    python -m envgen.report.figures RUNS_JSON... --out paper_figures --plots results/plots \
        --curves results/curves
"""

from __future__ import annotations

import itertools
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from envgen.envs.crafter.config import LLM_ENV_LENGTH, CrafterConfig
from envgen.envs.crafter.preview import render_world_map
from envgen.games import game_spec
from envgen.input_checks import safe_name
from envgen.report.achievements import achievement_frame, done_rows
from envgen.report.campaign_section import what, withheld_runs
from envgen.report.curves import CURVE_COLUMNS, bin_width, curve_table, score_vs_step
from envgen.report.inputs import (
    DONE,
    Cycle,
    RowRecord,
    RunRecord,
    TableRecord,
    profile_of,
    read_cycles,
    read_episodes,
    read_run_config,
    report_main,
)
from envgen.report.rliable_campaign import (
    ACHIEVEMENT_RATES,
    SCORE,
    VIEWS,
    WHERE,
    CampaignArms,
    campaign_arms,
)
from envgen.report.select import arms_by_label
from envgen.scoring import ACHIEVEMENTS
from envgen.stats.intervals import mean_interval
from envgen.stats.paper import load_reported_per_achievement
from envgen.stats.paper_claims import CRAFTER_ONLY, ENVGEN
from envgen.stats.rliable_views import (
    compare,
    improvement_probability,
    iqm_interval,
    performance_profile,
)
from envgen.stats.runs import SampleStats
from envgen.stats.summary import Interval
from envgen.stats.verdict import CLAIM_GRADE_PROFILES

FORMATS = ("png", "pdf")
# Figure 5's achievements (the paper's three, after the easier steps leading to them,
# so that a smoke-scale run, which unlocks only the first ones, still draws a curve).
FIRST_UNLOCK_ACHIEVEMENTS = (
    "collect_wood",
    "place_table",
    "make_wood_pickaxe",
    "make_stone_pickaxe",
    "make_iron_pickaxe",
    "make_iron_sword",
)
LOG_FLOOR = 0.01  # percent: the bottom of Figure 4's log axis (0% has no log)
GALLERY_SEED = 0  # world seed of every gallery preview
LINE_STYLES = ("-", "--", ":", "-.")  # rows that overlap stay visible
PAPER_COLORS = ("#bbbbbb", "#7aa6d6")  # Figure 4's bars: the paper's two rows
OURS_COLORS = ("#555555", "#1f4e99", "#b35806", "#1b7837")  # ours, in row order


def save(fig: Figure, out: Path) -> list[Path]:
    """Write `fig` as <out>.png and <out>.pdf."""
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = [out.with_name(f"{out.name}.{fmt}") for fmt in FORMATS]
    for path in paths:  # no creation date in the files, so equal inputs give equal bytes
        metadata = {"CreationDate": None} if path.suffix == ".pdf" else {"Software": None}
        fig.savefig(path, dpi=120, bbox_inches="tight", metadata=metadata)
    return paths


# --- Figure 4: per-achievement success rates --------------------------------------------
def scale_note(profile: str) -> str:
    """The profile, and a smoke marker unless it is claim-grade, for a figure's title."""
    if profile in CLAIM_GRADE_PROFILES:
        return f"profile {profile}"
    return f"profile {profile}: SMOKE-SCALE, not the paper's budgets"


def per_achievement(
    ours: Mapping[str, Mapping[str, float]], paper: pd.DataFrame, out: Path, *, note: str
) -> list[Path]:
    """Success rate (%) of each achievement, log scale: ours beside the paper's Figure 4.
    `ours`: {"Crafter only": rates, "EnvGen": rates} (a campaign: one entry per row), rates
    {achievement: % averaged over runs}. `paper`: `load_reported_per_achievement()`
    (approximate values read off the paper's bars). Zero rates have no bar (log scale).
    `note`: `scale_note(profile)`, or a campaign's own line."""
    bars = {
        "paper: PPO 1.96M Crafter": paper["ppo_1.96M_crafter"],
        "paper: PPO + EnvGen": paper["ppo_envgen"],
        **{f"ours: {label}": pd.Series(rates) for label, rates in ours.items()},
    }
    colors = [*PAPER_COLORS, *itertools.islice(itertools.cycle(OURS_COLORS), len(ours))]
    x = np.arange(len(ACHIEVEMENTS))
    width = 0.8 / len(bars)
    fig = Figure(layout="constrained", figsize=(14, 4.5))
    ax = fig.subplots()
    for i, (label, rates) in enumerate(bars.items()):
        values = np.array([rates.get(a, np.nan) for a in ACHIEVEMENTS], dtype=float)
        values[values <= 0] = np.nan
        ax.bar(x + (i - (len(bars) - 1) / 2) * width, values, width, label=label, color=colors[i])
    ax.set_yscale("log")
    ax.set_ylim(LOG_FLOOR, 100)
    ax.set_xticks(x, [a.replace("_", " ") for a in ACHIEVEMENTS], rotation=60, ha="right")
    ax.set_ylabel("success rate (%)")
    ax.set_title(
        "Per-achievement success rate (paper Figure 4; paper values approximate; no bar: under "
        f"{LOG_FLOOR}%, the axis floor)"
        f"\nours: {note}",
        pad=28,
    )
    ax.legend(ncol=len(bars), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return save(fig, out)


# --- Figure 5: first unlocks over the final Crafter steps -------------------------------
def first_unlock(
    runs: Mapping[str, Sequence[RunRecord]],
    final_steps: int,
    out: Path,
    achievements: Sequence[str] = FIRST_UNLOCK_ACHIEVEMENTS,
    *,
    note: str,
) -> list[Path]:
    """Fraction of runs that have unlocked each achievement by step t of the final phase.
    `runs`: {label: runs of that row}; `final_steps`: length of the final phase (x axis);
    `note`: `scale_note(profile)`."""
    fig = Figure(layout="constrained", figsize=(3 * len(achievements), 3))
    axes = fig.subplots(1, len(achievements), sharey=True, squeeze=False)[0]
    grid = np.linspace(0, final_steps, 200)
    for ax, achievement in zip(axes, achievements, strict=True):
        for style, (label, row_runs) in zip(
            itertools.cycle(LINE_STYLES), runs.items(), strict=False
        ):
            steps = [r.first_unlock_step.get(achievement) for r in row_runs]
            unlocked = np.array([s for s in steps if s is not None], dtype=float)
            fraction = [(unlocked <= t).sum() / len(row_runs) for t in grid]
            ax.step(grid, fraction, style, where="post", label=f"{label} ({len(row_runs)} runs)")
        ax.set_title(achievement.replace("_", " "), fontsize=9)
        ax.set_xlabel("step of the final phase")
        ax.set_ylim(-0.05, 1.05)
    axes[0].set_ylabel("fraction of runs unlocked")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"First unlock during the final Crafter steps (paper Figure 5); {note}")
    return save(fig, out)


# --- Figure 6: adaptation across cycles ------------------------------------------------
def adaptation(cycles: Sequence[Cycle], out: Path, title: str, *, note: str) -> list[Path]:
    """Each skill's success per cycle (heatmap) beside what the LLM changed each cycle.
    `cycles`: one run's cycles, each with its evaluation (adaptive EnvGen runs); `note`:
    `scale_note(profile)`."""
    evaluated = [c for c in cycles if c.evaluation is not None]
    success = np.array([[c.evaluation["success_mean"][a] for c in evaluated] for a in ACHIEVEMENTS])
    fig = Figure(layout="constrained", figsize=(14, 7))
    ax, text = fig.subplots(1, 2, width_ratios=[max(len(evaluated), 2), 5])
    image = ax.imshow(success, aspect="auto", cmap="viridis", vmin=0, vmax=100)
    for (i, j), value in np.ndenumerate(success):
        ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=7, color="w")
    ax.set_xticks(range(len(evaluated)), [f"cycle {c.index}" for c in evaluated])
    ax.set_yticks(range(len(ACHIEVEMENTS)), [a.replace("_", " ") for a in ACHIEVEMENTS])
    ax.set_title("success % in Crafter after each cycle")
    fig.colorbar(image, ax=ax, fraction=0.05)
    text.axis("off")
    text.set_title("what the designer set (cycle 1) and changed (later cycles)")
    text.text(0, 1, "\n".join(change_lines(cycles)), va="top", family="monospace", fontsize=7)
    fig.suptitle(f"{title} ({note})")
    return save(fig, out)


def change_lines(cycles: Sequence[Cycle], width: int = 110) -> list[str]:
    """Text lines: cycle 1's environments in full, later ones as changes per environment.
    Settings are flattened (`target_biome`, `coal_rarity`, ..., inventory items; an item not
    given counts as 0); a change reads `name old->new`."""
    lines: list[str] = []
    previous: list[dict[str, Any]] = []
    for cycle in cycles:
        lines.append(f"cycle {cycle.index}:")
        current = [_flat(env) for env in cycle.environments]
        for i, env in enumerate(current):
            if i < len(previous):
                old = previous[i]
                keys = sorted(set(old) | set(env), key=lambda k: (k not in _SETTINGS, k))
                changes = [
                    f"{k} {old.get(k, 0)}->{env.get(k, 0)}"
                    for k in keys
                    if old.get(k, 0) != env.get(k, 0)
                ]
                text = ", ".join(changes) or "unchanged"
            else:
                text = ", ".join(f"{k}={v}" for k, v in env.items())
            lines += textwrap.wrap(
                f"env {i + 1}: {text}", width, initial_indent="  ", subsequent_indent="      "
            )
        previous = current
    return lines


_SETTINGS = ("target_biome", "coal_rarity", "iron_rarity", "diamond_rarity", "tree_rarity")


def _flat(env: Mapping[str, Any]) -> dict[str, Any]:
    """Environment settings, then the inventory items given (non-zero), in that order."""
    settings = env.get("environment_settings", {})
    flat = {k: settings[k] for k in _SETTINGS if k in settings}
    flat.update({k: v for k, v in sorted(env.get("inventory_settings", {}).items()) if v})
    return flat


# --- score against steps -----------------------------------------------------------------
def score_curves(
    curves: Mapping[str, pd.DataFrame], out: Path, title: str, ylabel: str
) -> list[Path]:
    """Score against global step, one line per row (`curves`: {row: step, score})."""
    fig = Figure(layout="constrained", figsize=(8, 4.5))
    ax = fig.subplots()
    for label, curve in curves.items():
        ax.plot(curve["step"], curve["score"], marker=".", label=label)
    ax.set_xlabel("environment step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if curves:
        ax.legend(fontsize=7)
    return save(fig, out)


def campaign_scores(table: TableRecord, out: Path) -> list[Path]:
    """Each finished seed's final score per campaign row, with the mean and its 95%
    t-interval: a campaign runs few seeds, so every run stays visible."""
    fig = Figure(layout="constrained", figsize=(8, 0.6 * len(table.rows) + 1.6))
    ax = fig.subplots()
    labels = []
    for y, row in enumerate(table.rows):
        scores = [run.score for run in row.runs]
        planned = row.planned_runs or len(scores)
        labels.append(f"{row.row}\n{len(scores)} of {planned} seeds")
        if not scores:
            continue
        ax.plot(scores, [y] * len(scores), "o", color="C0", alpha=0.7)
        stats = SampleStats.of(scores, row.row)
        low, high = mean_interval(stats)
        ax.plot([stats.mean], [y], "|", color="k", markersize=18)
        if np.isfinite(low):
            ax.hlines(y, low, high, color="k", linewidth=1.5)
    ax.set_yticks(range(len(table.rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("Crafter score (%), final phase: dot = one seed, | = mean, bar = 95% t-interval")
    ax.set_title(
        f"{table.table}: score per seed (profile {table.profile}; a campaign, "
        "its own claims, not the paper's)",
        fontsize=10,
    )
    return save(fig, out)


# --- rliable's views of a campaign ---------------------------------------------------------
def rliable_figure(c: CampaignArms, out: Path) -> list[Path]:
    """A campaign's rliable views (Agarwal et al. 2021; `envgen.stats.rliable_views`): each
    arm's IQM of the score, each pair's P(a > b), and the performance profiles of the score
    and of the achievements' success rates, each with its 95% stratified-bootstrap band."""
    fig = Figure(layout="constrained", figsize=(13, 8))
    (iqm_ax, better_ax), profile_axes = fig.subplots(2, 2)
    scores = c.arms[SCORE]
    for y, (row, matrix) in enumerate(scores.items()):
        x = iqm_interval(matrix, name=f"{c.table}: {row}")
        iqm_ax.errorbar(x.point, y, xerr=_half_widths(x), fmt="o", color=f"C{y}", capsize=4)
    iqm_ax.set_yticks(range(len(scores)), [textwrap.fill(r, 32) for r in scores], fontsize=8)
    iqm_ax.set_ylim(len(scores) - 0.5, -0.5)
    iqm_ax.set_xlabel("IQM of the Crafter score (%), 95% interval")
    for y, (a, b) in enumerate(c.pairs):
        for k, view in enumerate(VIEWS):
            if a in c.arms[view] and b in c.arms[view]:
                x = compare(improvement_probability, c.arms[view][a], c.arms[view][b])
                label = WHERE[view] if y == 0 else None
                better_ax.errorbar(x.point, y + 0.15 * k, xerr=_half_widths(x), fmt="os"[k],
                                   color=f"C{k}", capsize=4, label=label)  # fmt: skip
    better_ax.axvline(0.5, color="k", linestyle=":", linewidth=1)
    better_ax.set_xlim(-0.02, 1.02)
    labels = [textwrap.fill(f"{a} > {b}", 40) for a, b in c.pairs]
    better_ax.set_yticks(range(len(c.pairs)), labels, fontsize=7)
    better_ax.set_ylim(max(len(c.pairs), 1) - 0.5, -0.5)
    better_ax.set_xlabel("P(a > b), 95% interval (0.5: no tendency)")
    if c.pairs:
        better_ax.legend(fontsize=7)
    values = np.concatenate([m.ravel() for m in scores.values()] or [np.zeros(1)])
    low, high = max(0.0, np.floor(values.min()) - 1), np.ceil(values.max()) + 1
    grids = {SCORE: np.linspace(low, high, 101), ACHIEVEMENT_RATES: np.linspace(0, 100, 101)}
    for ax, (view, grid) in zip(profile_axes, grids.items(), strict=True):
        for i, (row, matrix) in enumerate(c.arms[view].items()):
            p = performance_profile(matrix, grid, name=f"{c.table}: {row}")
            ax.plot(p.taus, p.share, color=f"C{i}", label=row)
            ax.fill_between(p.taus, p.low, p.high, color=f"C{i}", alpha=0.2)
        ax.set_xlabel(f"tau: {VIEWS[view]}")
        ax.set_ylabel("share of runs x tasks above tau")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=7)
    fig.suptitle(
        f"{c.table}: rliable's views (descriptive; Agarwal et al. 2021), 95% stratified-"
        "bootstrap intervals and bands",
        fontsize=10,
    )
    return save(fig, out)


def _half_widths(x: Interval) -> list[list[float]]:
    return [[x.point - x.low], [x.high - x.point]] if np.isfinite(x.low) else [[0.0], [0.0]]


# --- gallery of generated environments --------------------------------------------------
def gallery(cycles: Sequence[Cycle], out: Path, title: str) -> list[Path]:
    """World maps of every cycle's LLM environments (rows: cycles, columns: environments)."""
    n_cols = max(len(c.environments) for c in cycles)
    fig = Figure(layout="constrained", figsize=(2.6 * n_cols, 2.9 * len(cycles)))
    axes = fig.subplots(len(cycles), n_cols, squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for row, cycle in enumerate(cycles):
        for col, env in enumerate(cycle.environments):
            config = CrafterConfig.from_dict(env, default_length=LLM_ENV_LENGTH)
            axes[row, col].imshow(render_world_map(config, GALLERY_SEED))
            items = sum(v for _, v in config.inventory)
            purpose = textwrap.shorten(config.purpose or "-", 28, placeholder="...")
            axes[row, col].set_title(
                f"cycle {cycle.index}, env {col + 1}: {purpose}\n"
                f"{config.target_biome}, {items} items at start",
                fontsize=8,
            )
    fig.suptitle(f"{title} (world seed {GALLERY_SEED})")
    return save(fig, out)


# --- main: pick the rows each figure needs ----------------------------------------------
# Adaptive rows whose environments Fig. 6 and the gallery show, with their file suffix:
# the method, and the heuristic designer's baseline (replication/designers.yaml).
ADAPTIVE_ROWS = {ENVGEN: "", "Heuristic designer (baseline): EnvGen schedule": "_heuristic"}


def write_figures(
    tables: Sequence[TableRecord], out_dir: Path, plots_dir: Path, curves: Path | None = None
) -> list[str]:
    """Every figure the runs allow; returns one line per figure (written or why not).
    `curves`: where each table's learning-curve file goes (`write_curve_csvs`); None: none."""
    log: list[str] = []
    for table in tables:  # table ids name files: they stay under out_dir and plots_dir
        safe_name(table.table, f"{table.source}: table")
    waiting = {t.table: k for t in tables if (k := withheld_runs(t)) is not None}
    log += [f"{name}: no figures, registered verdict withheld: {k}" for name, k in waiting.items()]
    tables = [t for t in tables if t.table not in waiting]
    campaigns = [t for t in tables if t.is_campaign]
    paper_tables = [t for t in tables if not t.is_campaign]
    log += _paper_figures(paper_tables, out_dir) if paper_tables else []
    for table in campaigns:
        log += _done(campaign_scores(table, out_dir / f"scores_{table.table}"))
        log += _campaign_rliable(table, out_dir / f"rliable_{table.table}")
        log += _campaign_achievements(table, out_dir / f"per_achievement_{table.table}")
    for table in tables:
        by_row = write_curve_csvs(table, plots_dir, curves)
        title = f"{table.table}: score against steps ({table.profile} profile)"
        out = out_dir / f"score_vs_step_{table.table}"
        ylabel = (  # Heist's curves plot success in training episodes
            "Heist success (%), training episodes in plain Heist"
            if table.games == {"heist"}
            else "Crafter score (%), original-game episodes"
        )
        log += _done(score_curves(by_row, out, title, ylabel))
        log += [f"wrote {curves / f'{table.table}.csv'}"] if curves is not None else []
    return log


def write_curve_csvs(
    table: TableRecord, plots_dir: Path, curves_dir: Path | None = None
) -> dict[str, pd.DataFrame]:
    """The table's score-vs-step curves, one CSV per done row under `plots_dir/<table>/`
    (columns `CURVE_COLUMNS`; the `dvc plots` data; also re-derived by `envgen verify`),
    and with `curves_dir` every row's in `curves_dir/<table>.csv` (`curve_table`: one
    record per (row, step) with the achievements' success too, what `dvc plots diff`
    compares between commits). Both from the same curves, the figure's; returns them."""
    done = [row for row in table.rows if row.status == DONE]
    width = bin_width(max((r.global_steps for row in done for r in row.runs), default=1))
    curves = {row.row: _curve(row, width) for row in done}
    curves = {label: c for label, c in curves.items() if len(c)}
    plot_dir = plots_dir / table.table
    plot_dir.mkdir(parents=True, exist_ok=True)
    for label, curve in curves.items():
        curve[list(CURVE_COLUMNS)].to_csv(
            plot_dir / f"{_slug(label)}.csv", index=False, float_format="%.6g"
        )
    if curves_dir is not None:
        curves_dir.mkdir(parents=True, exist_ok=True)
        path = curves_dir / f"{table.table}.csv"
        curve_table(curves).to_csv(path, index=False, float_format="%.6g")
    return curves


def _paper_figures(tables: Sequence[TableRecord], out_dir: Path) -> list[str]:
    """Figures 4-6 and the galleries, from the paper's tables (campaigns have their own)."""
    log: list[str] = []
    by_label = {label: arm.runs for label, arm in arms_by_label(tables).items()}
    note = scale_note(profile_of(tables))
    pair = {"Crafter only": by_label.get(CRAFTER_ONLY, ()), "EnvGen": by_label.get(ENVGEN, ())}
    if all(pair.values()):
        ours = {
            label: {a: float(np.mean([r.success_rates[a] for r in runs])) for a in ACHIEVEMENTS}
            for label, runs in pair.items()
        }
        log += _done(
            per_achievement(
                ours, load_reported_per_achievement(), out_dir / "fig4_per_achievement", note=note
            )
        )
        final_steps = int(read_run_config(pair["EnvGen"][0].run_dir)["final_steps"])
        log += _done(first_unlock(pair, final_steps, out_dir / "fig5_first_unlock", note=note))
    else:
        labels = {"Crafter only": CRAFTER_ONLY, "EnvGen": ENVGEN}
        missing = " and ".join(repr(labels[key]) for key, runs in pair.items() if not runs)
        log.append(f"skipped fig4, fig5: no finished runs of {missing}")
    for label, suffix in ADAPTIVE_ROWS.items():
        runs = sorted(by_label.get(label, ()), key=lambda r: (r.initial_set, r.seed))
        evaluated = (
            r for r in runs if any(c.evaluation is not None for c in read_cycles(r.run_dir))
        )
        adaptive = next(evaluated, None)
        if adaptive is None:
            log.append(f"skipped fig6{suffix}, gallery{suffix}: no {label!r} run with cycles")
            continue
        cycles = read_cycles(adaptive.run_dir)
        name = f"{label}, seed {adaptive.seed}, initial set {adaptive.initial_set}"
        fig6 = out_dir / f"fig6_adaptation{suffix}"
        log += _done(adaptation(cycles, fig6, f"Adaptation: {name}", note=note))
        log += _done(gallery(cycles, out_dir / f"gallery{suffix}", f"Environments of {name}"))
    return log


def _campaign_achievements(table: TableRecord, out: Path) -> list[str]:
    """Figure 4's bars for every finished campaign row (the figure's data: the table's
    per-achievement section, `envgen.report.achievements`)."""
    frame = achievement_frame(table)
    rows = done_rows(frame)
    if not rows:
        return [f"skipped {out.name}: no finished runs"]
    ours = {row: frame[f"{row} mean"].to_dict() for row in rows}
    note = f"{table.table}: {what(table)}; a campaign, not the paper's setup"
    return _done(per_achievement(ours, load_reported_per_achievement(), out, note=note))


def _campaign_rliable(table: TableRecord, out: Path) -> list[str]:
    """rliable's views of the campaign's finished rows (`rliable_figure`)."""
    arms = campaign_arms(table)
    if not arms.arms[SCORE]:
        return [f"skipped {out.name}: no finished runs"]
    return _done(rliable_figure(arms, out))


def _curve(row: RowRecord, width: int) -> pd.DataFrame:
    """The row's curve, each run's training episodes summarised by its game's summary."""
    (game,) = {r.game for r in row.runs}
    summary = game_spec(game).summarize
    return score_vs_step([read_episodes(r.run_dir) for r in row.runs], width, summarize=summary)


def _slug(label: str) -> str:
    """File name of a row's curve: "PPO + EnvGen" -> "ppo_envgen"."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "row"


def _done(paths: list[Path]) -> list[str]:
    return [f"wrote {p}" for p in paths]


def main(argv: Sequence[str] | None = None) -> int:
    return report_main(
        argv,
        "envgen.report.figures",
        __doc__,
        ("--plots", "score-vs-step CSV directory"),
        write_figures,
        optional=(("--curves", "learning-curve directory: one CSV per table, for dvc plots"),),
    )


if __name__ == "__main__":
    raise SystemExit(main())
