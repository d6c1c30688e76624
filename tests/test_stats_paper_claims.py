"""Claim verdicts: one test per outcome of the rule, TOST for ties, Bonferroni, smoke."""

import math

import numpy as np
import pytest

from envgen.errors import StatsInputError
from envgen.stats.compare import bonferroni, hedges_g_from_stats, welch_test
from envgen.stats.intervals import welch_interval
from envgen.stats.paper import load_reported_first_unlock
from envgen.stats.paper_claims import (
    FIGURE4_CLAIMS,
    FIGURE5_ACHIEVEMENTS,
    FIGURE5_CLAIMS,
    PAPER_CLAIMS,
    Claim,
    PaperNumbers,
    evaluate_claims,
    paper_designer,
)
from envgen.stats.runs import SampleStats
from envgen.stats.verdict import (
    INCONCLUSIVE,
    NOT_A_TIE,
    OPPOSITE,
    REPRODUCED,
    SMALLER,
    PaperEffect,
    tie_margin,
    tost_p,
    verdict,
)

pytestmark = pytest.mark.filterwarnings("error")

ENVGEN = Claim("EnvGen > Crafter-only", "PPO + EnvGen", "1.96M Crafter only")
FIXED = Claim("EnvGen > Fixed", "PPO + EnvGen", "Fixed (no curriculum)")
PAPER_5_8 = PaperEffect(5.8)  # Table 1's EnvGen - Crafter-only
LEVEL = 0.05


@pytest.fixture(scope="module")
def paper():
    return PaperNumbers.load()


def _rule(diff: float, *, sd: float = 1.0, n: int = 30, effect=PAPER_5_8, profile="paper"):
    """Verdict for our a - b = `diff` with `n` runs of spread `sd` per arm."""
    ours = (SampleStats(30.0 + diff, sd, n), SampleStats(30.0, sd, n))
    return verdict(profile=profile, ours=ours, paper=effect, level=LEVEL)


# --- one test per outcome ---------------------------------------------------------------
def test_reproduced_when_the_interval_is_above_zero_and_reaches_the_paper():
    word, reason = _rule(5.5)  # CI about [4.98, 6.02] holds 5.8
    assert word == REPRODUCED and "reaches the paper's +5.8" in reason
    assert _rule(9.0)[0] == REPRODUCED  # larger than reported still reproduces the claim


def test_smaller_than_reported_when_the_interval_ends_below_the_paper():
    word, reason = _rule(2.0)  # CI about [1.48, 2.52], above 0 but below 5.8
    assert word == SMALLER and "below the paper's +5.8" in reason
    assert _rule(0.2)[0] == SMALLER  # a null result that rules out the paper's effect


def test_opposite_when_the_interval_is_below_zero():
    word, reason = _rule(-1.0)
    assert word == OPPOSITE and "reversed" in reason


def test_inconclusive_when_the_interval_holds_zero_and_the_paper():
    word, reason = _rule(1.0, sd=5.0, n=5)  # CI about [-6.3, +8.3]
    assert word == INCONCLUSIVE and "holds both 0 and the paper's +5.8" in reason


def test_direction_only_claims_reproduce_or_reverse_without_a_magnitude():
    assert _rule(1.0, effect=PaperEffect(None))[0] == REPRODUCED
    assert _rule(-1.0, effect=PaperEffect(None))[0] == OPPOSITE
    assert _rule(0.1, sd=3.0, n=5, effect=PaperEffect(None))[0] == INCONCLUSIVE


def test_tie_reproduced_by_tost():
    tie = PaperEffect(0.1, tie_margin=0.39)  # Table 3 at 0.06M
    word, reason = _rule(0.05, sd=0.3, n=60, effect=tie)
    assert word == REPRODUCED and "TOST" in reason


def test_tie_refuted_when_the_interval_lies_outside_the_margin():
    tie = PaperEffect(0.1, tie_margin=0.39)
    word, reason = _rule(2.0, sd=0.5, effect=tie)
    assert word == NOT_A_TIE and "outside" in reason


def test_tie_inconclusive_when_tost_cannot_reject():
    tie = PaperEffect(0.1, tie_margin=0.39)
    word, reason = _rule(0.0, sd=2.0, n=5, effect=tie)
    assert word == INCONCLUSIVE and "TOST p" in reason


@pytest.mark.parametrize("profile", ["smoke", "Paper", ""])
def test_non_claim_grade_profile_is_never_decisive(profile):
    for diff in (5.5, 2.0, -1.0):
        word, reason = _rule(diff, profile=profile)
        assert word == INCONCLUSIVE and "not claim-grade" in reason


def test_single_run_is_inconclusive():
    assert _rule(5.5, n=1)[0] == INCONCLUSIVE


# --- the pieces of the rule ------------------------------------------------------------
def test_tie_margin_from_the_papers_own_numbers(paper):
    effects = {c.name: paper.effect(c)[2] for c in PAPER_CLAIMS}
    ties = {name for name, e in effects.items() if e.tie_margin is not None}
    assert ties == {
        "Table 3: PPO + EnvGen > update every 0.06M (8 cycles)",  # +0.1, p = 0.49
        "Table 4: EnvGen > Crafter-only at 1.24M steps",  # +1.2, p = 0.15
    }
    a, b = SampleStats(32.2, 0.6, 30), SampleStats(32.1, 0.5, 30)
    assert tie_margin(a, b) == pytest.approx(max(map(abs, welch_interval(a, b))))
    assert tie_margin(a, b) == pytest.approx(0.386, abs=1e-3)


def test_tost_p_matches_its_interval_and_statsmodels():
    from statsmodels.stats.weightstats import ttost_ind

    rng = np.random.default_rng(5)
    x, y = rng.normal(0.1, 1.0, 25), rng.normal(0.0, 1.5, 20)
    a, b = SampleStats.of(x, "x"), SampleStats.of(y, "y")
    ours = tost_p(a, b, 0.8)
    assert ours == pytest.approx(ttost_ind(x, y, -0.8, 0.8, usevar="unequal")[0])
    low, high = welch_interval(a, b, 1 - 2 * ours)  # TOST rejects exactly inside the margin
    assert max(abs(low), abs(high)) == pytest.approx(0.8)
    assert tost_p(SampleStats(1.0, 0.0, 3), SampleStats(1.2, 0.0, 3), 0.5) == 0.0
    assert math.isnan(tost_p(SampleStats(1.0, math.nan, 1), a, 0.5))


# --- evaluate_claims -------------------------------------------------------------------
def test_smoke_runs_with_a_huge_effect_are_inconclusive(paper):
    runs = {"score": {"PPO + EnvGen": [40.0, 41.0, 42.0], "1.96M Crafter only": [1.0, 2.0, 3.0]}}
    (result,) = evaluate_claims([ENVGEN], runs, paper=paper, profile="smoke")
    assert result.verdict == INCONCLUSIVE and "not claim-grade" in result.reason
    assert result.welch.p < 1e-3  # the statistics are still reported


def test_evaluate_claims_by_hand(paper):
    runs = {
        "score": {
            "PPO + EnvGen": [32.0, 33.0, 31.5, 32.5, 32.2],
            "1.96M Crafter only": [25.0, 28.0, 26.0, np.nan, 27.0],
            "Fixed (no curriculum)": [31.0, 33.5, 30.0, 32.0, 34.0],
        }
    }
    results = evaluate_claims([ENVGEN, FIXED], runs, paper=paper, profile="paper")
    raw = [
        welch_test(runs["score"]["PPO + EnvGen"], runs["score"][row]).p
        for row in ("1.96M Crafter only", "Fixed (no curriculum)")
    ]
    np.testing.assert_allclose([r.p_adj for r in results], bonferroni(raw))
    first, second = results
    assert first.level == second.level == 0.025
    assert first.ours_b.n == 4  # the NaN run was dropped
    assert first.paper_a == SampleStats(32.2, 0.6, 30)
    assert first.paper_g == pytest.approx(hedges_g_from_stats(first.paper_a, first.paper_b))
    assert first.ci == pytest.approx(welch_interval(first.ours_a, first.ours_b, 0.975))
    assert first.verdict == REPRODUCED and first.p_adj < 0.05 and first.ci[0] > 0
    assert second.verdict == INCONCLUSIVE and second.ci[0] < 0 < 2.3 < second.ci[1]


def test_interval_and_adjusted_p_always_agree(paper):
    rng = np.random.default_rng(11)
    for _ in range(50):
        runs = {
            "score": {
                "PPO + EnvGen": rng.normal(30, 2, 4),
                "1.96M Crafter only": rng.normal(28, 2, 5),
                "Fixed (no curriculum)": rng.normal(29, 3, 3),
            }
        }
        for r in evaluate_claims([ENVGEN, FIXED], runs, paper=paper, profile="paper"):
            assert (r.ci[0] > 0 or r.ci[1] < 0) == (r.p_adj < 0.05)


def test_single_run_claim_is_inconclusive_and_leaves_the_family(paper):
    runs = {
        "score": {
            "PPO + EnvGen": [32.0, 33.0, 31.5],
            "1.96M Crafter only": [25.0, 28.0, 26.0],
            "Fixed (no curriculum)": [29.0],
        }
    }
    results = evaluate_claims([ENVGEN, FIXED], runs, paper=paper, profile="paper")
    assert results[1].verdict == INCONCLUSIVE and math.isnan(results[1].p_adj)
    assert results[0].p_adj == pytest.approx(results[0].welch.p)  # family of one
    assert results[0].level == 0.05


def test_one_configuration_in_both_arms_is_no_comparison(paper):
    runs = {"score": {"PPO + EnvGen": [32.0, 33.0, 34.0], "1.96M Crafter only": [2.0, 3.0, 4.0]}}
    configs = {"PPO + EnvGen": "abc", "1.96M Crafter only": "abc"}
    (result,) = evaluate_claims([ENVGEN], runs, paper=paper, profile="paper", configs=configs)
    assert result.verdict == INCONCLUSIVE and "one configuration (abc)" in result.reason
    assert math.isnan(result.p_adj)


def test_missing_row_names_the_row_and_the_claim(paper):
    with pytest.raises(StatsInputError, match=r"runs\['1.96M Crafter only'\].*EnvGen > Crafter"):
        evaluate_claims(
            [ENVGEN], {"score": {"PPO + EnvGen": [1.0, 2.0]}}, paper=paper, profile="paper"
        )


def test_all_paper_claims_reproduce_on_synthetic_paper_scale_runs(paper):
    rng = np.random.default_rng(0)
    rows = {r for c in PAPER_CLAIMS for r in (c.a, c.b)}
    scores = {}
    for row in sorted(rows):
        p = paper.results.xs(row, level="row").iloc[0]
        scores[row] = rng.normal(p["score_mean"], p["score_std"], int(p["n_runs"]))
    results = evaluate_claims(PAPER_CLAIMS, {"score": scores}, paper=paper, profile="paper")
    words = {r.claim.name: r.verdict for r in results}
    assert OPPOSITE not in words.values() and NOT_A_TIE not in words.values()
    assert sum(w == REPRODUCED for w in words.values()) >= len(PAPER_CLAIMS) * 2 // 3


def test_figure_claims_take_the_papers_numbers_from_data_paper(paper):
    iron = next(c for c in FIGURE4_CLAIMS if c.achievement == "collect_iron")
    pa, pb, effect = paper.effect(iron)
    assert (pa, pb, effect) == (None, None, PaperEffect(55.0 - 18.0))
    assert tuple(load_reported_first_unlock().index) == FIGURE5_ACHIEVEMENTS
    sword, pickaxe = FIGURE5_CLAIMS[2], FIGURE5_CLAIMS[0]
    assert paper.effect(sword)[2] == PaperEffect(930_000 - 190_000)  # later minus earlier
    assert paper.effect(pickaxe)[2] == PaperEffect(None)  # the text gives a direction only
    runs = {
        sword.metric: {"1.96M Crafter only": [9e5, 8e5, 9.5e5], "PPO + EnvGen": [2e5, 1e5, 3e5]}
    }
    (result,) = evaluate_claims([sword], runs, paper=paper, profile="paper")
    assert result.verdict == REPRODUCED and math.isnan(result.power)


def test_table_claims_added_by_issue_18():
    pairs = {(c.a, c.b) for c in PAPER_CLAIMS}
    assert ("Fixed (no curriculum)", "1.96M Crafter only") in pairs
    assert ("Deepseek Coder 33B Instruct (fixed)", "GPT-3.5-Turbo (fixed)") in pairs
    assert ("GPT-4-Turbo (fixed)", "GPT-3.5-Turbo (fixed)") in pairs  # its own arm, not Fixed's


def test_a_claim_rests_on_the_papers_designer_or_says_whose_replies_it_rests_on(paper):
    runs = {"score": {"PPO + EnvGen": [32.0, 33.0, 34.0], "1.96M Crafter only": [2.0, 3.0, 4.0]}}
    small = {"PPO + EnvGen": "llm:smollm2-135m-instruct", "1.96M Crafter only": None}
    (result,) = evaluate_claims([ENVGEN], runs, paper=paper, profile="paper", designers=small)
    assert result.verdict == INCONCLUSIVE
    assert result.reason == (
        "designer of 'PPO + EnvGen' is llm:smollm2-135m-instruct, not the paper's GPT-4-Turbo"
    )
    gpt4 = {**small, "PPO + EnvGen": "llm:gpt-4-1106-preview"}
    (result,) = evaluate_claims([ENVGEN], runs, paper=paper, profile="paper", designers=gpt4)
    assert result.verdict == REPRODUCED
    assert paper_designer("GPT-3.5-Turbo (fixed)") == "llm:gpt-3.5-turbo"
