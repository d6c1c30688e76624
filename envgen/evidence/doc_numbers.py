"""Numbers in the docs that look like results: each one checked, or listed as not a result.

A result figure typed into README.md, docs/ (any depth) or a results/**/README.md holds
only while a check ties it to the runs: a declared passage of
`envgen.evidence.docfigures.PHRASES`, checked at every occurrence. Any other number in a
result's form (`FORMS`) is named by `make verify` with its file and line, unless
`NOT_RESULTS` lists the text around it with the reason it is not one of our results
(the paper's own numbers, a measurement printed beside its command, a worked example, a
threshold). An entry that no longer excuses anything is named too, so the list cannot
outgrow the docs.

The forms were chosen from what a result looks like in these docs: a mean ± std, a
signed difference or bound, "N points", a p-value, an interval, a number right after
"score", "X vs Y" with decimals, a percentage with decimals, a decimal that opens a
table cell (a table of settings or speeds is excused whole by its header row in
`NOT_RESULTS`). Not results by form:
unsigned integers outside a p-value (steps, seeds, counts, years, a grid's points),
dates and versions (digits joined by dots or dashes to more digits), hashes, and a
number fused to a unit ("0.96M", "1.5B", "3x") or followed by one of time, size or rate
("12.3 s", "1.2 GiB").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

_DEC = r"\d+\.\d+(?:e[-+−]?\d+)?"
_NUM = r"\d+(?:\.\d+)?(?:e[-+−]?\d+)?"
_BEFORE = r"(?<![\w.\-−+/])"  # not inside a word, a version, a date or a path
_UNIT = (
    r"(?!\.?\d|[A-Za-z_]|\s*(?:s|ms|µs|us|min|h|GiB|MiB|KiB|GB|MB|KB|kB|TB|B|bytes|"
    r"GHz|steps/s|it/s|SPS|cores?|threads?|x|×)\b)"
)  # a number not continued by more digits, and not followed by a unit

# (form, pattern): each match is one result-looking number.
FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a ± pair", re.compile(rf"{_BEFORE}{_NUM}\s*%?\s*(?:±|\+/-)\s*{_NUM}")),
    ("a signed difference", re.compile(rf"(?<![\w.)\]/])[+−-]{_DEC}{_UNIT}")),
    ("a number of points", re.compile(rf"{_BEFORE}(?:[+−-]{_NUM}|{_DEC})\s+points?\b")),
    (
        "a p-value",
        re.compile(
            rf"\bp(?:-value)?(?:\s*[=<>≤≥]\s*|\s+of the mean difference\s+|\s+){_NUM}(?!\w|\.\d)"
        ),
    ),
    ("a bound", re.compile(rf"\b(?:bounds?|interval|U|L)\s*(?:=\s*)?\[?\s*[+−-]?{_DEC}")),
    ("a score", re.compile(rf"\bscor(?:e|es|ed|ing)\s+(?:of\s+|=\s*)?{_DEC}{_UNIT}")),
    (
        "a comparison",
        re.compile(rf"{_BEFORE}{_DEC}\s*%?\s+(?:vs\.?|versus|against|over|to)\s+{_DEC}"),
    ),
    ("a percentage", re.compile(rf"{_BEFORE}{_DEC}\s?%")),
    (
        "a number of points",
        re.compile(rf"{_BEFORE}[+−-]?{_NUM}\s*(?:pts?\b|percentage points?\b|pp\b)"),
    ),
    ("a p-value", re.compile(rf"\bp\s*[≈~]\s*{_NUM}")),
    ("a score", re.compile(rf"\bscore\s*:\s*{_DEC}")),
    ("a table cell", re.compile(rf"(?:(?<=\|)|(?<=\| ))(?:\*\*)?[+−-]?{_DEC}{_UNIT}")),
)


@dataclasses.dataclass(frozen=True)
class NotResult:
    """Text in a doc whose result-looking numbers are not our results, and why."""

    path: str
    """The doc, relative to the repository root."""
    text: str
    """Exact words around the numbers (whitespace, line breaks included, matches any); a
    Markdown table's header row (`| ... |`, whole) excuses every row of its table."""
    why: str
    """What the numbers are instead: the paper's, a measurement and its command, ..."""


_PAPER = "the paper's own numbers (docs/paper.md), not a result of our runs"
_EXAMPLE = "a worked example of the method on made-up runs, not a result"
_THRESHOLD = "the test's significance level, not a result"
_POWER = (
    "the registration's power analysis (assumed effects, simulated power), printed by the "
    "python -m envgen.stats.power command beside it before any run: a plan, not a result"
)
_CPU_SMOKE = (
    "the 0.15M-step CPU check of PPO against a random policy: runs outside the run store, "
    "their envgen train commands in docs/measurements.md's table"
)
_PRECISION_AB = (
    "the H200 float32-vs-bf16 A/B of envgen bench precision (its log ab.log, "
    "results/gpu/2026-11-26-h200): a measurement with its command, no run of the store"
)

_SFL_AUDIT = (
    "descriptive figures of results/audit/sfl_open_ends/analysis.out, beside the command "
    "that prints them; tests/test_audit_sfl.py re-derives that file from the runs"
)
_INTEL_RETRAIN = (
    "scores of two confirm runs retrained in full on an Intel AMX box in an earlier "
    "session (issue 69); their logs were not committed, so they are quoted as reported, "
    "labelled exploratory"
)

_SPEED = "speeds of the bench command beside the table, a measurement of this machine"
_SETTINGS = "settings of the code (defaults, profiles), not a measurement"

NOT_RESULTS: tuple[NotResult, ...] = (
    NotResult(
        "docs/agent.md",
        "| preset | network | params | FLOP per env step* |",
        "network sizes and FLOP counts, counted by the test named under the table",
    ),
    NotResult("docs/agent.md", "| setting | value | source |", _SETTINGS),
    NotResult(
        "docs/agent.md",
        "| network | command | torch threads | ours env steps/s | reference env steps/s | ratio |",
        _SPEED,
    ),
    NotResult(
        "docs/agent.md",
        "| network (AD params) | command | ours env steps/s | reference env steps/s |",
        _SPEED,
    ),
    NotResult(
        "docs/agent.md",
        "| random (our measurement, 300 episodes, seed 0) | 1.53 | 1.41 |",
        "the random policy's score on 300 stock-Crafter episodes, measured as the text "
        "under the table says; no run of the store",
    ),
    NotResult(
        "docs/agent.md",
        "| policy | Crafter score % (last 50k steps) | reward | episodes |",
        "a 0.1M-step AD run and the random policy, outside the run store, the envgen train "
        "command above the table",
    ),
    NotResult(
        "docs/campaign_confirm.md",
        "| diff | sd a | sd b | n = 10 | n = 11 | n = 12 | n = 13 | n = 14 | n = 15 |",
        _POWER,
    ),
    NotResult(
        "docs/crafter.md",
        "| settings | stock coal / iron | authors coal / iron |",
        "tile counts of generated worlds, measured by the test named above the table",
    ),
    NotResult("docs/crafter.md", "| design | 1 worker | 2 workers | 2 / 1 |", _SPEED),
    NotResult("docs/heist.md", "| ours_sps | stock_sps | ratio | cpu_ratio |", _SPEED),
    NotResult("docs/heist.md", "| setting | value |", _SETTINGS),
    NotResult(
        "docs/loop.md",
        "| budget (env steps) | PPO updates | rho (95%) | top-4 overlap | bottom-4 overlap |",
        "the world-ranking study's rank agreements, from the JSON its command writes (this "
        "section), no run of the store",
    ),
    NotResult(
        "docs/measurements.md",
        "| Heist-EnvGen vs plain procgen Heist, random play | 0.91-0.97x (three runs) |",
        _SPEED,
    ),
    NotResult(
        "docs/measurements.md",
        "| row | replayed | committed | LLM calls |",
        "smoke-scale scores of Table 1 replayed at torch_threads 2 into a runs root in /tmp "
        "(its command above the table) beside that day's committed smoke runs: a dated "
        "measurement of the replay",
    ),
    NotResult("docs/pipeline.md", "| field | smoke | cpu | reduced | paper |", _SETTINGS),
    NotResult(
        "docs/campaign_confirm.md",
        "DIR`, the same for seed 6) scored 15.29 and 14.59 against 12.68 and 15.39 on AMD:",
        _INTEL_RETRAIN,
    ),
    NotResult(
        "results/audit/crafter_only_retrain/README.md",
        "Intel class scored 15.29 and 14.59 (12.68 and 15.39 on AMD), inside the AMD runs'",
        _INTEL_RETRAIN,
    ),
    NotResult(
        "README.md",
        "(0.5% of the paper's steps",
        "the smoke profile's share of the paper's training steps (params.yaml), a budget",
    ),
    NotResult(
        "docs/agent.md",
        "(measured: at most 1.4%, AD's matching loss on `impala-small`; PPO's at most 0.02%)",
        "bf16-vs-float32 loss differences on a fixed batch, measured by "
        "tests/test_agents_precision.py named beside them",
    ),
    NotResult(
        "docs/agent.md",
        "return 2.13 +/- 0.31 vs 2.10 +/- 0.14; difference -0.02, 95% interval "
        "[-0.49, +0.44], Welch p 0.90; `ab.log`",
        _PRECISION_AB,
    ),
    NotResult("docs/agent.md", "more than +0.1;", "a reward per step of the game"),
    NotResult("docs/agent.md", "| random (paper Table 1) | 1.6 +/- 0.0 | 2.1 +/- 1.3 |", _PAPER),
    NotResult(
        "docs/agent.md",
        "| PPO `nature`, 0.15M steps, seeds 0/1/2 | **4.66 +/- 0.49** (4.67, 4.06, 5.26) | "
        "4.13 +/- 0.07 |",
        _CPU_SMOKE,
    ),
    NotResult("docs/agent.md", "the paper's PPO reaches 15.5% after 1M steps", _PAPER),
    NotResult("docs/agent.md", "the paper's AD reaches 21.8% after 1M steps", _PAPER),
    NotResult("docs/campaign_confirm.md", "points and 0.61 for +1.5;", _POWER),
    NotResult(
        "docs/campaign_confirm.md",
        "It reaches power 0.80 at +1.94 points (observed stds) or +2.56 (both 2.74):",
        _POWER,
    ),
    NotResult("docs/campaign_confirm.md", "where the +1.5 line is weakest", _POWER),
    NotResult("docs/campaign_confirm.md", "1. L > 0 (equivalently p < 0.05)", _THRESHOLD),
    NotResult("docs/campaign_confirm.md", "- +5.8, the paper's own difference", _PAPER),
    NotResult(
        "docs/campaign_confirm.md",
        "power at N = 15 is 1.00 for that difference and 0.91 for +10 points",
        _POWER,
    ),
    NotResult(
        "docs/campaign_llm15.md",
        "difference: +2.3 points, the paper's PPO + EnvGen − Fixed (adaptation's own value "
        "in the paper's Table 4), and +1.5 as a smaller effect.",
        _POWER,
    ),
    NotResult(
        "docs/campaign_llm15.md",
        """| diff | sd | sd | n = 10 | n = 12 | n = 14 | n = 16 | n = 18 | n = 20 |
        |---|---|---|---|---|---|---|---|---|
        | +2.3 | 1.29 | 1.61 | 0.96 | 0.98 | 0.99 | 1.00 | 1.00 | 1.00 |
        | +2.3 | 1.29 | 2.74 | 0.73 | 0.81 | 0.86 | 0.90 | 0.93 | 0.95 |
        | +2.3 | 2.13 | 2.13 | 0.75 | 0.82 | 0.87 | 0.91 | 0.94 | 0.96 |
        | +1.5 | 1.29 | 1.61 | 0.71 | 0.79 | 0.84 | 0.88 | 0.92 | 0.94 |
        | +1.5 | 1.29 | 2.74 | 0.44 | 0.50 | 0.56 | 0.61 | 0.66 | 0.70 |
        | +1.5 | 2.13 | 2.13 | 0.45 | 0.51 | 0.57 | 0.62 | 0.67 | 0.71 |""",
        _POWER,
    ),
    NotResult(
        "docs/campaign_llm15.md",
        "Power 0.90-1.00 for +2.3 points under every std setting, 0.61-0.88 for +1.5.",
        _POWER,
    ),
    NotResult(
        "docs/campaign_llm15.md", "20 would add 0.05 at +2.3 and about 0.08 at +1.5.", _POWER
    ),
    NotResult("docs/campaign_llm15.md", "1. L > 0 (equivalently p < 0.05)", _THRESHOLD),
    NotResult(
        "docs/campaign_llm15.md",
        "+2.3, the paper's PPO + EnvGen − Fixed; +5.8, the paper's PPO + EnvGen − Crafter-only",
        _PAPER,
    ),
    NotResult(
        "docs/campaign_headline.md",
        "Crafter alone: 32.2 ± 0.6 against 26.4 ± 2.1, +5.8 points.",
        _PAPER,
    ),
    NotResult(
        "docs/campaign_headline.md",
        "Reference differences: +5.8, the paper's PPO + EnvGen − Crafter-only, and +2.3, the "
        "paper's PPO + EnvGen − Fixed, as a smaller effect.",
        _POWER,
    ),
    NotResult(
        "docs/campaign_headline.md",
        """| diff | sd a | sd b | n = 8 | n = 10 | n = 12 | n = 14 | n = 16 | n = 18 | n = 20 |
        |---|---|---|---|---|---|---|---|---|---|
        | +5.8 | 1.51 | 2.13 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |
        | +5.8 | 1.51 | 2.74 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |
        | +5.8 | 2.13 | 2.74 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |
        | +2.3 | 1.51 | 2.13 | 0.76 | 0.84 | 0.90 | 0.94 | 0.96 | 0.98 | 0.99 |
        | +2.3 | 1.51 | 2.74 | 0.62 | 0.71 | 0.79 | 0.84 | 0.89 | 0.92 | 0.94 |
        | +2.3 | 2.13 | 2.74 | 0.55 | 0.64 | 0.72 | 0.78 | 0.83 | 0.87 | 0.90 |""",
        _POWER,
    ),
    NotResult(
        "docs/campaign_headline.md",
        "power 1.00 for the paper's +5.8 under every std setting, 0.83-0.96 for +2.3.",
        _POWER,
    ),
    NotResult("docs/campaign_headline.md", "1. L > 0 (equivalently p < 0.05)", _THRESHOLD),
    NotResult(
        "docs/campaign_headline.md",
        "+5.8, the paper's PPO + EnvGen − Crafter-only; +2.3, the paper's PPO + EnvGen − Fixed.",
        _PAPER,
    ),
    NotResult(
        "docs/campaign_headline.md",
        'stated against +5.8 the same way (U < 5.8: "it rules out the paper\'s +5.8")',
        _PAPER,
    ),
    NotResult(
        "results/audit/sfl_open_ends/README.md",
        """| comparison | SFL − DR | p |
        |---|---|---|
        | each arm's own final 1M trained steps (as registered) | −0.97 | 0.023 |
        | the same 1M window of trained steps, (830,912, 1,830,912] | −0.34 | 0.388 |
        | the overlap of both final phases, (961,984, 1,830,912] | +0.01 | 0.987 |""",
        _SFL_AUDIT,
    ),
    NotResult(
        "results/audit/sfl_open_ends/README.md",
        "paired over its 20 runs): +0.62 points, 95% t-interval [+0.48, +0.77]. The audit's "
        'figures for these ("21.95 vs 21.95"; "+0.99 [0.88, 1.10]") used other windows;',
        _SFL_AUDIT,
    ),
    NotResult(
        "docs/paper.md",
        "- **Figure 9 (obfuscated parameter names).** 28.5 against 32.2.",
        _PAPER,
    ),
    NotResult(
        "docs/paper.md",
        "make iron pickaxe (0.12 to 0.41), make iron sword (0.07 to\n  0.67)",
        _PAPER,
    ),
    NotResult(
        "docs/stats.md",
        "the paper's stds range from 0.5 to\n  2.8 within one table",
        _PAPER,
    ),
    NotResult(
        "data/paper/README.md",
        "1.5 to 3.5 points above the paper's scores (PPO 1.96M Crafter 27.9 vs 26.4, PPO +\n"
        "  EnvGen 33.8 vs 32.2, AD 32.3 vs 31.8, AD + EnvGen 38.8 vs 35.3)",
        "the paper's scores beside the score recomputed from its own Figure 4 bars "
        "(data/paper/reported_per_achievement.csv): the paper's numbers, no run of ours",
    ),
    NotResult("data/paper/README.md", "small rates such as 0.024 % are", _PAPER),
    NotResult("data/paper/README.md", "(AD 1.96M Crafter `wake_up` = 4.0 % stands", _PAPER),
    NotResult(
        "docs/heist.md",
        "reaches 25.9 +/- 13.2 % success (reward 4.1 +/- 1.8); 5M steps in LLM-made "
        '"Heist-EnvGen" environments then 20M Heist steps reach 37.7 +/- 7.5 % (5.5 +/- 0.9)',
        _PAPER,
    ),
    NotResult(
        "docs/llm.md",
        "wrote 4 distinct worlds, toward weakness +0.150 (the weakest skills were coal, "
        "diamond, iron, stone, skeletons); adapt3 and adapt4 repeated nearly the same set "
        "(3 of 4 distinct, +0.000)",
        "design quality of replies from one run outside the pipeline, its envgen run "
        "command beside it (the replies are not committed)",
    ),
    NotResult(
        "docs/loop.md",
        "(scores 11.7-15.7 against 4.1-6.5 at 20k",
        "the world-ranking study's per-agent scores, from the JSON its command writes "
        "(this section), no run of the store",
    ),
    NotResult(
        "docs/loop.md", "`- collect_wood: 83% +/- 5%`", "an example of the feedback's format"
    ),
    NotResult(
        "docs/measurements.md",
        "| PPO vs a random policy | 4.66 +/- 0.49 % Crafter score (3 seeds, 0.15M steps, "
        "`nature`, last 50k steps) vs random 1.53 % (300 episodes) |",
        _CPU_SMOKE,
    ),
    NotResult(
        "docs/measurements.md",
        "| AD vs a random policy | 3.72 % (1 seed, 0.1M steps, `nature`, last 50k steps; "
        "31 min wall) vs 1.53 % |",
        "a 0.1M-step AD run outside the run store, its envgen train command in the next column",
    ),
    NotResult(
        "docs/measurements.md",
        "82.7 / 123.8 vs 50.5 / 16.4 (first world of env seeds 0-19)",
        "tile counts of generated worlds, measured by the test named in the next column",
    ),
    NotResult(
        "docs/measurements.md",
        "feedback drift up to 47.1 points",
        "replay drift of the simulated-machine rerun, its command at the section's start",
    ),
    NotResult(
        "docs/measurements.md",
        "(drift up to 66.7 points)",
        "replay drift of the simulated-machine rerun, its command at the section's start",
    ),
    NotResult("docs/measurements.md", "packaging (26.4 vs 26.3)", "package versions"),
    NotResult("docs/paper.md", "PPO + EnvGen 32.2 +/- 0.6 / 12.6", _PAPER),
    NotResult(
        "docs/paper.md",
        "EnvGen ahead at 1.24M (22.3 vs 21.1), 1.48M (27.9 vs 21.9) and 1.96M (32.2 vs 26.4)",
        _PAPER,
    ),
    NotResult(
        "docs/paper.md",
        "PPO 25M Heist steps 25.9 +/- 13.2 % success; PPO + EnvGen, 5M steps in Heist-EnvGen "
        "then 20M in Heist, 37.7 +/- 7.5 %.",
        _PAPER,
    ),
    NotResult(
        "docs/pipeline.md",
        "the paper's 25.9 +/- 13.2 % / 4.1 +/- 1.8 and 37.7 +/- 7.5 % / 5.5 +/- 0.9",
        _PAPER,
    ),
    NotResult(
        "docs/pipeline.md",
        "(toward weakness +0.05 on average over the 6 adaptations",
        "design quality of Table 1's PPO + EnvGen replies, from the python -m "
        "envgen.loop.design_quality command beside it",
    ),
    NotResult("docs/report.md", "log axis from 0.01 %", "a plot's axis limit"),
    NotResult(
        "docs/stats.md",
        "Monte Carlo sd about 0.5 points",
        "the coverage simulation's own error (intervals.simulated_coverage), no run",
    ),
    NotResult("docs/stats.md", "Bonferroni-adjusted p < 0.05", _THRESHOLD),
    NotResult("docs/stats.md", "Welch p < 0.05 on the same runs", _THRESHOLD),
    NotResult("docs/stats.md", "`n_runs` gives p ≥ 0.05", _THRESHOLD),
    NotResult("docs/stats.md", "(29.9 vs 26.4; Tables 1, 2)", _PAPER),
    NotResult("docs/stats.md", "(26.3 vs 21.5; Table 5)", _PAPER),
    NotResult(
        "docs/stats.md",
        "t = 0, p = 1 for equal means and t = ±inf, p = 0 otherwise",
        "the test's defined edge cases",
    ),
    NotResult(
        "docs/stats.md",
        "Table 3 at 0.06M (+0.1, p = 0.49) and Table 4 at 1.24M (+1.2, p = 0.15)",
        "Welch on the paper's own means and stds: " + _PAPER,
    ),
    NotResult(
        "docs/stats.md",
        """D = +5.8, a family of m = 18 testable
        claims, so level 0.05/18 = 0.0028). Our 30 EnvGen runs 31.0 ± 1.0 and 10 Crafter-only
        runs 29.0 ± 2.0 give a − b = +2.0, Welch df 10.5, 99.7 % interval [−0.55, +4.55].
        Line 4: U = 4.55 ≥ 0. Line 5: U = 4.55 < 5.8 -> **smaller than reported**, although the
        difference is not even significant against 0: the runs say the effect is not the
        paper's +5.8. A tie: Table 3 at 0.06M, δ = 0.39; runs
        32.0 ± 0.6 and 31.95 ± 0.5 (30 each) give TOST p = 0.011 ≥ 0.0028 -> **inconclusive**
        (the 1 − 2·level interval [−0.36, +0.46] is not inside ±0.39)""",
        _EXAMPLE,
    ),
    NotResult(
        "docs/stats.md",
        "(PPO + EnvGen vs 1.96M Crafter-only, +5.8; Fixed vs Crafter-only, +3.5; EnvGen vs "
        "Fixed, +2.3)",
        _PAPER,
    ),
    NotResult(
        "docs/stats.md",
        "naming the paper's +2.3 (PPO + EnvGen − Fixed) and +5.8 (PPO + EnvGen − Crafter-only)",
        _PAPER,
    ),
    NotResult(
        "results/gpu/2026-11-26-h200/README.md",
        "window return 2.126 +/- 0.309 (float32) and 2.103 +/- 0.136 (bf16), difference "
        "-0.023, 95% interval [-0.485, +0.440], Welch p 0.90.",
        _PRECISION_AB,
    ),
    NotResult(
        "docs/campaign_sfl.md",
        "131,072 a run (6.7%)",
        "SFL's curation share of a run's steps, a budget of the design",
    ),
    NotResult(
        "docs/campaign_sfl.md",
        "differences: +2.3 points, the paper's PPO + EnvGen − Fixed (adaptation's own value "
        "in the paper's Table 4), +1.5 and +1.0 as smaller effects.",
        _POWER,
    ),
    NotResult(
        "docs/campaign_sfl.md",
        """| diff | sd b | sd a | n = 12 | n = 16 | n = 20 | n = 24 |
        |---|---|---|---|---|---|---|
        | +2.3 | 1.40 | 1.40 | 0.99 | 1.00 | 1.00 | 1.00 |
        | +2.3 | 1.40 | 2.13 | 0.91 | 0.97 | 0.99 | 1.00 |
        | +2.3 | 1.40 | 2.74 | 0.80 | 0.89 | 0.95 | 0.97 |
        | +1.5 | 1.40 | 1.40 | 0.81 | 0.91 | 0.95 | 0.98 |
        | +1.5 | 1.40 | 2.13 | 0.63 | 0.74 | 0.83 | 0.88 |
        | +1.5 | 1.40 | 2.74 | 0.49 | 0.60 | 0.69 | 0.76 |
        | +1.0 | 1.40 | 1.40 | 0.52 | 0.63 | 0.72 | 0.79 |
        | +1.0 | 1.40 | 2.13 | 0.37 | 0.46 | 0.53 | 0.60 |
        | +1.0 | 1.40 | 2.74 | 0.29 | 0.35 | 0.41 | 0.47 |""",
        _POWER,
    ),
    NotResult(
        "docs/campaign_sfl.md",
        "power at least 0.8 for +1.5 points under the middle std setting (2.13). SFL chooses "
        "among the worlds DR draws, so an effect well below the paper's +2.3 is plausible, "
        "hence +1.5 as the planning effect. Power with N = 20: 0.95-1.00 for +2.3, "
        "0.69-0.95 for +1.5, 0.41-0.72 for +1.0.",
        _POWER,
    ),
    NotResult("docs/campaign_sfl.md", "1. L > 0 (equivalently p < 0.05)", _THRESHOLD),
    NotResult(
        "docs/campaign_sfl.md",
        "+2.3, the paper's PPO + EnvGen − Fixed; +5.8, the paper's PPO + EnvGen − Crafter-only",
        _PAPER,
    ),
    NotResult(
        "docs/loop.md",
        "131,072 over 4 cycles: 6.7% of the 1.96M steps",
        "SFL's curation share of a run's steps, a budget of the design",
    ),
    NotResult(
        "docs/measurements.md",
        "drift up to 26.0 points (mean 0.651)",
        "Table 1 replayed at torch_threads 2 into a runs root in /tmp, measured with its "
        "command above it; no run of the store",
    ),
    NotResult(
        "docs/measurements.md",
        "drift up to 34.0 points (mean 1.295)",
        "Table 1 replayed at torch_threads 2 into a runs root in /tmp, measured with its "
        "command above it; no run of the store",
    ),
    NotResult(
        "docs/loop.md",
        "# score 1.72%, global_steps 3,072",
        "the output of the smoke run whose envgen run command is on the line above, no run "
        "of the store",
    ),
    NotResult(
        "docs/stats.md",
        "gave intervals [-0.416, 0.192] and [-0.416, 0.158]",
        "rliable's bootstrap on a random matrix, to show its seeding, not a result",
    ),
)


@dataclasses.dataclass(frozen=True)
class Hit:
    """A result-looking number: where it lies in its text and which form it has."""

    start: int
    end: int
    form: str
    number: str


def hits(text: str) -> list[Hit]:
    """Every result-looking number in `text`, by position (overlapping forms kept once:
    the earliest, longest match)."""
    found = sorted(
        (Hit(m.start(), m.end(), form, m.group()) for form, p in FORMS for m in p.finditer(text)),
        key=lambda h: (h.start, -h.end),
    )
    out: list[Hit] = []
    for hit in found:
        if out and hit.start < out[-1].end:
            continue
        out.append(hit)
    return out


# Markdown that `envgen verify` rebuilds from the runs and compares byte for byte: its
# numbers are checked already, so the scanner leaves it to that check.
REBUILT = ("results/CLAIMS.md", "results/tables/")


def doc_files(root: Path) -> list[Path]:
    """README.md and every .md under docs/, results/ and data/, but the files verify
    rebuilds (`REBUILT`)."""
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    for folder in ("docs", "results", "data"):
        files += sorted(
            p
            for p in (root / folder).rglob("*.md")
            if not p.relative_to(root).as_posix().startswith(REBUILT)
        )
    return files


def literal(text: str) -> str:
    """`text` as a regex in which any whitespace (line breaks included) matches any."""
    return r"\s+".join(re.escape(w) for w in text.split())


_TABLE_ROWS = re.compile(r"(?:\n\|[^\n]*)*")  # the rows that follow a table's line


def _spans(pattern: str, text: str) -> Iterator[tuple[int, int]]:
    """Where `pattern` matches; a match of whole table lines (from a line's first `|` to
    its last) runs on to the table's end, so a header row excuses its table."""
    for m in re.finditer(pattern, text):
        start, end = m.span()
        if (
            text.startswith("|", start)
            and text[start - 1 : start] in ("", "\n")
            and text[end - 1 : end] == "|"
            and text[end : end + 1] in ("", "\n")
        ):
            end = _TABLE_ROWS.match(text, end).end()
        yield start, end


@dataclasses.dataclass(frozen=True)
class Unchecked:
    """A result-looking number no check covers, or an allow-list entry that covers none."""

    path: str
    line: int | None
    what: str


def unchecked(
    root: Path,
    covered: Mapping[str, Sequence[tuple[int, int]]],
    allowed: Sequence[NotResult] = NOT_RESULTS,
) -> list[Unchecked]:
    """Every result-looking number in the docs outside `covered` (spans of declared
    passages, by path) and outside `allowed`; then every `allowed` entry that excuses
    no number."""
    problems: list[Unchecked] = []
    used: set[int] = set()
    for file in doc_files(root):
        rel = file.relative_to(root).as_posix()
        text = file.read_text(encoding="utf-8")
        spans = list(covered.get(rel, ()))
        excused = [
            (i, span)
            for i, entry in enumerate(allowed)
            if entry.path == rel
            for span in _spans(literal(entry.text), text)
        ]
        for hit in hits(text):
            if any(a <= hit.start < b for a, b in spans):
                continue
            by = [i for i, (a, b) in excused if a <= hit.start and hit.end <= b]
            if by:
                used.update(by)
                continue
            problems.append(
                Unchecked(
                    rel,
                    text.count("\n", 0, hit.start) + 1,
                    f"{' '.join(hit.number.split())!r} looks like a result ({hit.form}) "
                    "that no check covers: declare its passage in envgen/evidence/"
                    "docfigures.py PHRASES, or, if it is not a result of our runs, list "
                    "it in envgen/evidence/doc_numbers.py NOT_RESULTS with the reason",
                )
            )
    for i, entry in enumerate(allowed):
        if i not in used:
            problems.append(
                Unchecked(
                    entry.path,
                    None,
                    f"NOT_RESULTS entry {entry.text[:60]!r} excuses no result-looking "
                    "number there any more: remove it from envgen/evidence/doc_numbers.py",
                )
            )
    return problems
