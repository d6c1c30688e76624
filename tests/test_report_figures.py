"""Figure functions on hand-made inputs: score curves, cycle changes, files and determinism."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from envgen.report import figures
from envgen.report.curves import bin_width, score_vs_step
from envgen.report.inputs import Cycle, RowRecord, RunRecord, TableRecord
from envgen.scoring import ACHIEVEMENTS, crafter_score
from envgen.stats.paper import load_reported_per_achievement


def episode(step: int, phase: str, reward: float = 1.0, **unlocked: int) -> dict:
    return {
        "length": 100,
        "reward": reward,
        **{f"achievement_{a}": unlocked.get(a, 0) for a in ACHIEVEMENTS},
        "step": step,
        "phase": phase,
        "config_index": 0,
    }


def test_score_vs_step_bins_original_game_episodes_over_runs():
    run_a = [
        episode(50, "pretrain", collect_wood=1),
        episode(90, "llm1", collect_wood=1, place_table=1),  # an LLM environment: left out
        episode(100, "orig1"),  # the edge belongs to the bin it closes
        episode(250, "final", reward=3.0, collect_wood=2),
    ]
    run_b = [episode(180, "final", reward=5.0)]
    curve = score_vs_step([run_a, run_b], bin_steps=100)
    assert curve["step"].tolist() == [100, 200, 300]
    assert curve["episodes"].tolist() == [2, 1, 1]
    wood_half = crafter_score([50.0 if a == "collect_wood" else 0.0 for a in ACHIEVEMENTS])
    wood_all = crafter_score([100.0 if a == "collect_wood" else 0.0 for a in ACHIEVEMENTS])
    assert curve["score"].tolist() == pytest.approx([wood_half, 0.0, wood_all])
    assert curve["reward"].tolist() == [1.0, 5.0, 3.0]
    assert bin_width(4000) == 100 and bin_width(4001) == 101 and bin_width(0) == 1


def env(biome: str = "natural", coal: str = "common", **items: int) -> dict:
    return {
        "environment_settings": {"target_biome": biome, "coal_rarity": coal},
        "inventory_settings": items,
        "length": 1024,
    }


def test_change_lines_list_first_cycle_then_changes():
    cycles = [
        Cycle(1, (env(wood=2), env("mountain", stone=1)), None),
        Cycle(2, (env(wood=2), env("mountain", "rare", iron=3)), None),
    ]
    assert figures.change_lines(cycles) == [
        "cycle 1:",
        "  env 1: target_biome=natural, coal_rarity=common, wood=2",
        "  env 2: target_biome=mountain, coal_rarity=common, stone=1",
        "cycle 2:",
        "  env 1: unchanged",
        "  env 2: coal_rarity common->rare, iron 0->3, stone 1->0",
    ]


def test_change_lines_wrap_long_lines():
    many = {f"item{i}": 1 for i in range(30)}
    lines = figures.change_lines([Cycle(1, (env(**many),), None)], width=60)
    assert len(lines) > 3 and all(len(line) <= 60 for line in lines)
    assert all(line.startswith("      ") for line in lines[2:])


def rates(value: float) -> dict[str, float]:
    return {a: value * (i % 3) for i, a in enumerate(ACHIEVEMENTS)}


def unlock_run(seed: int, steps: dict[str, int]) -> RunRecord:
    return RunRecord(
        seed=seed,
        initial_set=0,
        run_dir=Path("."),
        score=1.0,
        reward=1.0,
        success_rates=rates(1.0),
        first_unlock_step={a: steps.get(a) for a in ACHIEVEMENTS},
        llm_calls=0,
        global_steps=1000,
    )


def test_figures_are_png_and_pdf_and_deterministic(tmp_path: Path):
    paper = load_reported_per_achievement()
    ours = {"Crafter only": rates(10.0), "EnvGen": rates(20.0)}
    first = figures.per_achievement(ours, paper, tmp_path / "a" / "fig4", note="profile smoke")
    again = figures.per_achievement(ours, paper, tmp_path / "b" / "fig4", note="profile smoke")
    assert [p.name for p in first] == ["fig4.png", "fig4.pdf"]
    for one, two in zip(first, again, strict=True):
        assert one.read_bytes() == two.read_bytes()
    runs = {
        "Crafter only": [unlock_run(0, {"collect_wood": 10}), unlock_run(1, {})],
        "EnvGen": [unlock_run(0, {"collect_wood": 5, "make_iron_sword": 400})],
    }
    png, pdf = figures.first_unlock(runs, 500, tmp_path / "fig5", note="profile smoke")
    image = np.asarray(Image.open(png))
    assert image.ndim == 3 and image.shape[1] > image.shape[0] > 100
    assert pdf.read_bytes().startswith(b"%PDF")


def test_scale_note_marks_smoke_figures():
    assert figures.scale_note("paper") == "profile paper"
    assert "SMOKE-SCALE" in figures.scale_note("smoke")
    assert "SMOKE-SCALE" in figures.scale_note("mixed (paper, smoke)")


def campaign_table(scores_by_row: dict[str, list[float]]) -> TableRecord:
    rows = tuple(
        RowRecord(
            row=label,
            status="done" if scores else "not_started",
            reason="",
            config_hash="abc" if scores else None,
            reported_as=None,
            runs=tuple(
                dataclasses.replace(unlock_run(seed, {}), score=score)
                for seed, score in enumerate(scores)
            ),
            planned_runs=5,
        )
        for label, scores in scores_by_row.items()
    )
    return TableRecord("campaign_cpu", "a campaign", "cpu", False, rows, Path("runs.json"))


def test_campaign_scores_plot_every_seed_and_rows_without_runs(tmp_path: Path):
    table = campaign_table({"A": [15.0, 16.5, 14.0], "B": [21.8], "C": []})
    png, pdf = figures.campaign_scores(table, tmp_path / "scores")
    assert np.asarray(Image.open(png)).ndim == 3 and pdf.read_bytes().startswith(b"%PDF")


def test_a_campaign_alone_draws_no_paper_figure(tmp_path: Path):
    table = campaign_table({"A": [], "B": []})  # nothing finished: no episodes to read
    lines = figures.write_figures([table], tmp_path / "figs", tmp_path / "plots")
    written = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert written == [
        "score_vs_step_campaign_cpu.pdf",
        "score_vs_step_campaign_cpu.png",
        "scores_campaign_cpu.pdf",
        "scores_campaign_cpu.png",
    ]
    assert not any("fig4" in line or "fig6" in line for line in lines)


def test_a_campaign_with_finished_runs_draws_its_per_achievement_bars(tmp_path: Path):
    table = campaign_table({"A": [15.0, 16.5], "B": [21.8]})
    lines = figures._campaign_achievements(table, tmp_path / "per_achievement_campaign_cpu")
    assert lines == [
        f"wrote {tmp_path / 'per_achievement_campaign_cpu.png'}",
        f"wrote {tmp_path / 'per_achievement_campaign_cpu.pdf'}",
    ]
    image = np.asarray(Image.open(tmp_path / "per_achievement_campaign_cpu.png"))
    assert image.ndim == 3 and image.shape[1] > image.shape[0]
    empty = campaign_table({"A": []})
    assert figures._campaign_achievements(empty, tmp_path / "none") == [
        "skipped none: no finished runs"
    ]
