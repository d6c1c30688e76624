"""Claim verdicts: every branch of the rule, Holm across claims, smoke never reproduces."""

import math

import numpy as np
import pytest

from envgen.errors import StatsInputError
from envgen.stats.claims import (
    CONTRADICTED,
    INCONCLUSIVE,
    PAPER_CLAIMS,
    REPRODUCED,
    Claim,
    evaluate_claims,
    verdict,
)
from envgen.stats.compare import WelchResult, hedges_g_from_stats, holm, welch_test
from envgen.stats.paper import load_reported
from envgen.stats.runs import SampleStats

pytestmark = pytest.mark.filterwarnings("error")

ENVGEN = Claim("EnvGen > Crafter-only", "PPO + EnvGen", "1.96M Crafter only")
FIXED = Claim("EnvGen > Fixed", "PPO + EnvGen", "Fixed (no curriculum)")


@pytest.fixture(scope="module")
def frame():
    return load_reported()


def _rule(profile="paper", p_holm=0.001, ours_diff=1.0, paper_diff=5.8, power=0.5, n=10):
    ours = (SampleStats(30.0 + ours_diff, 1.0, n), SampleStats(30.0, 1.0, n))
    welch = WelchResult(t=1.0, df=18.0, p=p_holm if n >= 2 else math.nan)
    return verdict(
        profile=profile,
        ours=ours,
        paper_diff=paper_diff,
        welch=welch,
        p_holm=p_holm if n >= 2 else math.nan,
        power=power,
    )[0]


def test_verdict_rule_branches():
    assert _rule() == REPRODUCED
    assert _rule(ours_diff=-1.0) == CONTRADICTED  # significant, opposite direction
    assert _rule(p_holm=0.2, power=0.9) == CONTRADICTED  # well-powered miss
    assert _rule(p_holm=0.2, power=0.5) == INCONCLUSIVE
    assert _rule(paper_diff=0.0) == INCONCLUSIVE  # nothing to reproduce
    assert _rule(n=1) == INCONCLUSIVE


@pytest.mark.parametrize("profile", ["smoke", "Paper", ""])
def test_non_claim_grade_profile_is_never_decisive(profile):
    assert _rule(profile=profile) == INCONCLUSIVE
    assert _rule(profile=profile, ours_diff=-1.0) == INCONCLUSIVE
    assert _rule(profile=profile, p_holm=0.2, power=0.99) == INCONCLUSIVE


def test_smoke_runs_with_a_huge_effect_are_inconclusive(frame):
    runs = {"PPO + EnvGen": [40.0, 41.0, 42.0], "1.96M Crafter only": [1.0, 2.0, 3.0]}
    (result,) = evaluate_claims([ENVGEN], runs, reported_frame=frame, profile="smoke")
    assert result.verdict == INCONCLUSIVE and "not claim-grade" in result.reason
    assert result.welch.p < 1e-3  # the statistics are still reported


def test_evaluate_claims_by_hand(frame):
    runs = {
        "PPO + EnvGen": [32.0, 33.0, 31.5, 32.5, 32.2],
        "1.96M Crafter only": [25.0, 28.0, 26.0, np.nan, 27.0],
        "Fixed (no curriculum)": [31.0, 33.5, 30.0, 32.0, 34.0],
    }
    results = evaluate_claims([ENVGEN, FIXED], runs, reported_frame=frame, profile="paper")
    raw = [
        welch_test(runs["PPO + EnvGen"], runs["1.96M Crafter only"]).p,
        welch_test(runs["PPO + EnvGen"], runs["Fixed (no curriculum)"]).p,
    ]
    np.testing.assert_allclose([r.p_holm for r in results], holm(raw))
    first, second = results
    assert first.ours_b.n == 4  # the NaN run was dropped
    assert first.paper_a == SampleStats(32.2, 0.6, 30)
    assert first.paper_g == pytest.approx(hedges_g_from_stats(first.paper_a, first.paper_b))
    assert first.verdict == REPRODUCED and first.p_holm < 0.05
    assert second.verdict == INCONCLUSIVE and second.power < 0.8
    assert 0 < second.power < first.power <= 1


def test_single_run_claim_is_inconclusive_and_leaves_the_family(frame):
    runs = {
        "PPO + EnvGen": [32.0, 33.0, 31.5],
        "1.96M Crafter only": [25.0, 28.0, 26.0],
        "Fixed (no curriculum)": [29.0],
    }
    results = evaluate_claims([ENVGEN, FIXED], runs, reported_frame=frame, profile="paper")
    assert results[1].verdict == INCONCLUSIVE and math.isnan(results[1].p_holm)
    assert results[1].power == 0.0
    assert results[0].p_holm == pytest.approx(results[0].welch.p)  # family of one


def test_tied_rows_do_not_reproduce(frame):
    runs = {"PPO + EnvGen": [30.0] * 4, "1.96M Crafter only": [30.0] * 4}
    (result,) = evaluate_claims([ENVGEN], runs, reported_frame=frame, profile="paper")
    assert (result.welch.p, result.g) == (1.0, 0.0)
    assert result.verdict == CONTRADICTED  # 4 tied runs each: power 1 for the paper's gap


def test_missing_row_names_the_row_and_the_claim(frame):
    with pytest.raises(StatsInputError, match=r"runs\['1.96M Crafter only'\].*EnvGen > Crafter"):
        evaluate_claims(
            [ENVGEN], {"PPO + EnvGen": [1.0, 2.0]}, reported_frame=frame, profile="paper"
        )


def test_all_paper_claims_evaluate_on_synthetic_paper_scale_runs(frame):
    rng = np.random.default_rng(0)
    rows = {r for c in PAPER_CLAIMS for r in (c.a, c.b)}
    runs = {}
    for row in sorted(rows):
        paper = frame.xs(row, level="row").iloc[0]
        runs[row] = rng.normal(paper["score_mean"], paper["score_std"], int(paper["n_runs"]))
    results = evaluate_claims(PAPER_CLAIMS, runs, reported_frame=frame, profile="paper")
    assert all(0.0 <= r.power <= 1.0 for r in results)
    assert all(r.verdict != CONTRADICTED for r in results if r.power < 0.8 and r.g > 0)
    assert sum(r.verdict == REPRODUCED for r in results) >= len(PAPER_CLAIMS) // 2
