"""The simulated power of a one-sided Welch test: its false-positive rate, known limits,
the figures the registration quotes, and its command."""

import math

import pytest

from envgen.errors import StatsInputError
from envgen.stats.compare import welch_power
from envgen.stats.power import main, power_table, simulated_welch_power
from envgen.stats.runs import SampleStats

pytestmark = pytest.mark.filterwarnings("error")


def test_no_difference_rejects_at_the_level():
    # 40,000 campaigns: the rate's standard error is about 0.0011 at 0.05.
    rate = simulated_welch_power(0.0, 0.96, 2.74, 15, 0.05, sims=40_000, seed=3)
    assert rate == pytest.approx(0.05, abs=0.005)


def test_a_wrong_sign_difference_almost_never_rejects():
    assert simulated_welch_power(-3.0, 1.0, 1.0, 10, 0.05, sims=5_000) < 0.001


def test_grows_with_runs_and_difference():
    small = simulated_welch_power(1.5, 0.96, 2.74, 10, 0.05)
    more_runs = simulated_welch_power(1.5, 0.96, 2.74, 15, 0.05)
    larger = simulated_welch_power(2.37, 0.96, 2.74, 10, 0.05)
    assert small < more_runs and small < larger


def test_same_seed_same_figure_and_other_seed_close():
    a = simulated_welch_power(2.37, 0.96, 2.74, 12, 0.05, sims=20_000, seed=0)
    assert a == simulated_welch_power(2.37, 0.96, 2.74, 12, 0.05, sims=20_000, seed=0)
    assert a == pytest.approx(
        simulated_welch_power(2.37, 0.96, 2.74, 12, 0.05, sims=20_000, seed=1), abs=0.015
    )


def test_no_spread_rejects_exactly_when_the_difference_is_positive():
    assert simulated_welch_power(0.5, 0.0, 0.0, 5, 0.05, sims=100) == 1.0
    assert simulated_welch_power(-0.5, 0.0, 0.0, 5, 0.05, sims=100) == 0.0


def test_first_campaign_figures_and_the_formula_overstating_them():
    """The first campaign's four score claims (n = 5 per arm, level 0.05/4, the paper's
    differences, the larger of the paper's std and ours): simulation gives 0.82, 0.84,
    0.41, 0.41, where the noncentral-t formula printed 0.84, 0.85, 0.41, 0.44."""
    cases = [(5.8, 1.61, 2.74, 0.82), (5.8, 0.96, 2.74, 0.84), (3.5, 1.29, 2.74, 0.41)]
    cases += [(2.3, 1.61, 1.29, 0.41)]
    for diff, sd_a, sd_b, expected in cases:
        simulated = simulated_welch_power(diff, sd_a, sd_b, 5, 0.0125, sims=40_000)
        assert simulated == pytest.approx(expected, abs=0.01)
        formula = welch_power(SampleStats(diff, sd_a, 5), SampleStats(0.0, sd_b, 5), 5, 5, 0.025)
        assert formula >= simulated - 0.005


def test_unequal_arms():
    # One run more in the noisy arm helps more than one more in the quiet arm.
    noisy_more = simulated_welch_power(2.0, 0.5, 3.0, 6, 0.05, n_b=8)
    quiet_more = simulated_welch_power(2.0, 0.5, 3.0, 8, 0.05, n_b=6)
    assert noisy_more > quiet_more


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"n": 1}, "n"),
        ({"alpha": 0.0}, "alpha"),
        ({"sd_a": -1.0}, "sd"),
        ({"sd_b": math.inf}, "sd"),
        ({"sims": 0}, "sims"),
    ],
)
def test_bad_input_names_the_argument(kwargs, names):
    args = {"diff": 1.0, "sd_a": 1.0, "sd_b": 1.0, "n": 5, "alpha": 0.05, **kwargs}
    with pytest.raises(StatsInputError, match=names):
        simulated_welch_power(**args)


def test_table_and_command(capsys):
    lines = power_table([2.37], [(0.96, 2.74)], [10, 15], 0.05, sims=2_000)
    assert lines[0] == "| diff | sd a | sd b | n = 10 | n = 15 |"
    assert lines[2].startswith("| +2.37 | 0.96 | 2.74 | ")
    assert main(["--diffs", "2.37", "--sds", "0.96,2.74", "--n", "10", "15", "--sims", "2000"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == lines[2]
    with pytest.raises(SystemExit):
        main(["--diffs", "1", "--sds", "0.96", "--n", "10"])
