"""Read what the pipeline's train stages wrote: `runs.json` per table and run directories.

`runs.json` (one per table) lists each row with its status and, for rows that ran, one
record per (seed, initial set) run, whose `run_dir` is `results/runs/<config-hash>/seed-<K>/`
(`envgen.store.run_dir`), relative to the working directory (the repository root under
`dvc repro`).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from envgen import json_input
from envgen.agents.runlog import read_jsonl
from envgen.envs.game_rules import GAME_RULES
from envgen.errors import ConfigError, EnvGenError, ReportInputError
from envgen.input_checks import OneLineParser, safe_name
from envgen.scoring import ACHIEVEMENTS
from envgen.stats.paper_claims import SAME_EXPERIMENT, SUCCESS, TABLE_METRICS
from envgen.store.manifest import read_run_bytes, run_file_exists
from envgen.store.run_dir import RunDir

DONE, NOT_RECORDED, FAILED, NOT_IMPLEMENTED, REPORTED_ONLY, LLM_UNUSABLE, NOT_STARTED = (
    "done",
    "not_recorded",
    "failed",
    "not_implemented",
    "reported_only",
    "llm_unusable",
    "not_started",  # a campaign row none of whose seeds has finished yet
)
CONFIG_ERROR = "config_error"  # a setting no run can follow (`envgen.errors.RunSettingError`)
STATUSES = (
    DONE,
    NOT_RECORDED,
    FAILED,
    NOT_IMPLEMENTED,
    REPORTED_ONLY,
    LLM_UNUSABLE,
    NOT_STARTED,
    CONFIG_ERROR,
)
# Tables whose id starts with this are campaigns (`envgen campaign`): their own claims,
# never the paper's (CLAIMS.md's campaign section).
CAMPAIGN_PREFIX = "campaign_"


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One finished (config, seed) run of a row, as runs.json lists it."""

    seed: int
    """The run's seed."""
    initial_set: int
    """Which initial LLM environment set the run used."""
    run_dir: Path
    """Its directory (`results/runs/<hash>/seed-<K>`)."""
    score: float
    """Crafter score (%) over the final phase's episodes (Heist: success % in the test)."""
    reward: float
    """Mean episode return over the final phase (Heist: over the test episodes)."""
    success_rates: Mapping[str, float]
    """Percent of final-phase episodes unlocking each achievement (Heist: empty)."""
    first_unlock_step: Mapping[str, int | None]
    """Steps into the final phase at which each achievement was first unlocked (Heist:
    empty)."""
    llm_calls: int
    """LLM calls the run made (cache hits included)."""
    global_steps: int
    """Environment steps the run took in all."""
    game: str = "crafter"
    """The game it played (runs.json written before Heist was wired name none: Crafter)."""
    machine: str = "unknown"
    """Where it trained (`envgen.store.provenance.machine_label`; runs.json written before
    machines were listed name none)."""

    def value(self, metric: str) -> float:
        """The run's number for a claim's metric: "score", "reward" or
        "success_rate:<achievement>" (`envgen.stats.paper_claims.Claim.metric`)."""
        if metric in TABLE_METRICS:
            return getattr(self, metric)
        kind, achievement = metric.split(":", 1)
        if kind != SUCCESS:
            raise ValueError(f"{metric!r} is not a per-run number (first unlocks can be None)")
        return self.success_rates[achievement]


@dataclasses.dataclass(frozen=True)
class RowRecord:
    """One row of a table: its status and its runs (empty unless status is done)."""

    row: str
    """Row label as in replication/<table>.yaml."""
    status: str
    """One of `STATUSES`."""
    reason: str
    """For rows not done: why, and the command that fixes it."""
    config_hash: str | None
    """RunConfig hash of the row's runs; None for rows that are not run."""
    reported_as: tuple[str, str] | None
    """(table, row) of the paper's number this row is compared with, when not its own."""
    runs: tuple[RunRecord, ...]
    """Finished runs, in the order runs.json lists them. A row not done may list the
    runs that finished; the report uses a row's runs only once it is done (all ran)."""
    game: str | None = None
    """The game its runs play; None for rows not run here (and in runs.json written
    before Heist was wired)."""
    llm_replay: Mapping[str, Any] | None = None
    """How its runs' LLM replies were served and their feedback drift, summed over runs
    (`envgen.pipeline.results.row_replay`); None for rows without LLM calls."""
    designer: str | None = None
    """Who designed its environments ("llm:<model>", "heuristic", "random"); None for rows
    without designed environments (and in runs.json written before designers were named)."""
    planned_runs: int | None = None
    """Runs the row plans (campaign rows, whose runs.json may list fewer while it runs);
    None elsewhere."""

    def claim_label(self) -> str:
        """The paper's label for this experiment as `envgen.stats.PAPER_CLAIMS` name it."""
        label = self.reported_as[1] if self.reported_as else self.row
        return SAME_EXPERIMENT.get(label, label)


def machine_counts(runs: Sequence[RunRecord]) -> str:
    """Each machine `runs` trained on, as "label: n runs", most first."""
    counts = Counter(run.machine for run in runs)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "; ".join(f"{label}: {n} run{'s' if n != 1 else ''}" for label, n in ranked)


@dataclasses.dataclass(frozen=True)
class TableRecord:
    """One table's runs.json."""

    table: str
    """Table id, e.g. "table2" (replication/<table>.yaml)."""
    caption: str
    """The table's caption."""
    profile: str
    """Profile the runs were made under ("smoke", "paper", ...)."""
    claim_grade: bool
    """Whether that profile may reproduce or contradict the paper's claims."""
    rows: tuple[RowRecord, ...]
    """Rows in the table's order."""
    source: Path
    """The runs.json file read."""

    @property
    def n_runs(self) -> int:
        """Finished runs of done rows."""
        return sum(len(r.runs) for r in self.rows if r.status == DONE)

    def machines(self) -> str:
        """Each machine the done rows' runs trained on, as "label: n runs", most first."""
        return machine_counts([run for row in self.rows if row.status == DONE for run in row.runs])

    @property
    def is_campaign(self) -> bool:
        """A campaign's table (`CAMPAIGN_PREFIX`), not one of the paper's."""
        return self.table.startswith(CAMPAIGN_PREFIX)

    @property
    def games(self) -> frozenset[str]:
        """Games its rows play, from the rows and their runs (empty if none says)."""
        return frozenset(
            {r.game for r in self.rows if r.game} | {run.game for r in self.rows for run in r.runs}
        )


def load_table(path: Path) -> TableRecord:
    """Parse and check one runs.json; errors name the file and the field at fault."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ReportInputError(where, f"cannot read: {exc.strerror}; run the train stage") from None
    try:
        data = json_input.loads(raw, where)
    except json_input.JSONInputError as exc:
        raise ReportInputError(where, f"{exc.detail}; re-run the train stage") from None
    data = _mapping(data, where)
    rows = _field(data, "rows", list, where)
    table = _field(data, "table", str, where)
    try:
        safe_name(table, "table")  # names the report's output files
    except ConfigError as exc:
        raise ReportInputError(f"{where}.table", exc.message) from None
    return TableRecord(
        table=table,
        caption=_field(data, "caption", str, where),
        profile=_field(data, "profile", str, where),
        claim_grade=_field(data, "claim_grade", bool, where),
        rows=tuple(_row(r, f"{where}:rows[{i}]") for i, r in enumerate(rows)),
        source=path,
    )


def profile_of(tables: Sequence[TableRecord]) -> str:
    """The profile all tables share, or "mixed (a, b)" (never claim-grade)."""
    profiles = sorted({t.profile for t in tables})
    return profiles[0] if len(profiles) == 1 else f"mixed ({', '.join(profiles)})"


def load_tables(paths: list[Path]) -> list[TableRecord]:
    """`load_table` for each path; table ids must be unique."""
    tables = [load_table(p) for p in paths]
    seen: dict[str, Path] = {}
    for t in tables:
        if t.table in seen:
            raise ReportInputError(
                str(t.source), f"table {t.table!r} is also in {seen[t.table]}; pass each once"
            )
        seen[t.table] = t.source
    return tables


def _row(data: Any, where: str) -> RowRecord:
    data = _mapping(data, where)
    status = _field(data, "status", str, where)
    if status not in STATUSES:
        raise ReportInputError(f"{where}.status", f"{status!r}; allowed: {', '.join(STATUSES)}")
    runs = tuple(_run(r, f"{where}.runs[{i}]") for i, r in enumerate(data.get("runs") or []))
    if status == DONE and not runs:
        raise ReportInputError(f"{where}.runs", "a done row lists its finished runs; found none")
    reported_as = data.get("reported_as")
    if reported_as is not None:
        reported_as = _mapping(reported_as, f"{where}.reported_as")
        reported_as = (
            _field(reported_as, "table", str, f"{where}.reported_as"),
            _field(reported_as, "row", str, f"{where}.reported_as"),
        )
    game = data.get("game")
    return RowRecord(
        row=_field(data, "row", str, where),
        status=status,
        reason=str(data.get("reason") or ""),
        config_hash=data.get("config_hash"),
        reported_as=reported_as,
        runs=runs,
        game=None if game is None else _game(data, where),
        llm_replay=_replay(data.get("llm_replay"), f"{where}.llm_replay"),
        designer=None if data.get("designer") is None else _field(data, "designer", str, where),
        planned_runs=(
            None if data.get("planned_runs") is None else _field(data, "planned_runs", int, where)
        ),
    )


def _replay(data: Any, where: str) -> Mapping[str, Any] | None:
    if data is None:
        return None
    data = _mapping(data, where)
    for key in ("calls", "exact", "slot", "live", "feedback_calls", "max_drift", "mean_drift"):
        if not isinstance(data.get(key), int | float):
            raise ReportInputError(f"{where}.{key}", "missing or not a number")
    return data


def _run(data: Any, where: str) -> RunRecord:
    data = _mapping(data, where)
    game = _game(data, where) if "game" in data else "crafter"
    rates: Mapping[str, Any] = {}
    if GAME_RULES[game].scored_in_training:  # else no achievements: its number is the test's
        rates = _mapping(_field(data, "success_rates", dict, where), f"{where}.success_rates")
        missing = [a for a in ACHIEVEMENTS if a not in rates]
        if missing and rates:
            raise ReportInputError(f"{where}.success_rates", f"missing {missing}")
    return RunRecord(
        seed=_field(data, "seed", int, where),
        initial_set=int(data.get("initial_set", 0)),
        run_dir=Path(_field(data, "run_dir", str, where)),
        score=_finite(data, "score", where),
        reward=_finite(data, "reward", where),
        success_rates={k: float(v) for k, v in rates.items()},
        first_unlock_step=dict(data.get("first_unlock_step") or {}),
        llm_calls=int(data.get("llm_calls", 0)),
        global_steps=int(data.get("global_steps", 0)),
        game=game,
        machine=str(data.get("machine", "unknown")),
    )


def _game(data: Mapping[str, Any], where: str) -> str:
    game = _field(data, "game", str, where)
    if game not in GAME_RULES:
        raise ReportInputError(f"{where}.game", f"{game!r}; allowed: {', '.join(GAME_RULES)}")
    return game


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReportInputError(where, f"expected a JSON object, got {type(value).__name__}")
    return value


def _field(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise ReportInputError(f"{where}.{key}", "missing; the train stage writes it")
    value = data[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (bool not in kinds and isinstance(value, bool)) or not isinstance(value, kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise ReportInputError(f"{where}.{key}", f"expected {expected}, got {type(value).__name__}")
    return value


def _finite(data: Mapping[str, Any], key: str, where: str) -> float:
    value = _field(data, key, (int, float), where)
    if not math.isfinite(value):
        raise ReportInputError(f"{where}.{key}", f"must be a finite number, got {value!r}")
    return float(value)


# --- a run directory -------------------------------------------------------------------
def read_episodes(run_dir: Path) -> list[dict[str, Any]]:
    """A run's episodes: crafter stats.jsonl lines plus `step`, `phase`."""
    path = RunDir(run_dir).episodes
    if not run_file_exists(path):
        raise ReportInputError(str(path), "missing; the run is not finished or was moved")
    return read_jsonl(path)


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """A run's config (its RunConfig fields, seed and hash)."""
    run = RunDir(run_dir)
    if not run.config.is_file():
        raise ReportInputError(str(run.config), "missing; the run is not finished or was moved")
    return run.read_config()


@dataclasses.dataclass(frozen=True)
class Cycle:
    """What one EnvGen cycle left in its folder (`envgen.store.run_dir.CycleDir`)."""

    index: int
    """1-based cycle number."""
    environments: tuple[dict[str, Any], ...]
    """The cycle's CrafterConfig dicts (the authors' JSON layout)."""
    evaluation: dict[str, Any] | None
    """The evaluation (success_mean/std per achievement, step); None if not evaluated."""


def read_cycles(run_dir: Path) -> list[Cycle]:
    """The run's cycles in order; empty for runs without LLM environments."""
    cycles = []
    for directory in RunDir(run_dir).cycles():
        envs_path, eval_path = directory.environments, directory.evaluation
        if not envs_path.is_file():
            continue
        environments = json_input.loads(read_run_bytes(envs_path), envs_path)["configs"]
        evaluation = (
            json_input.loads(read_run_bytes(eval_path), eval_path) if eval_path.is_file() else None
        )
        cycles.append(Cycle(directory.index, tuple(environments), evaluation))
    return cycles


def read_accounting(run_dir: Path) -> dict[str, Any] | None:
    """A run's LLM accounting (calls, tokens, cost_usd); None for runs that used no LLM."""
    path = RunDir(run_dir).llm_accounting
    return json_input.loads(read_run_bytes(path), path) if path.is_file() else None


def runs_json_files(dvc_yaml: Path = Path("dvc.yaml")) -> list[Path]:
    """The runs.json files the report stages read, from dvc.yaml's `vars`."""
    data = yaml.safe_load(dvc_yaml.read_text(encoding="utf-8"))
    found: list[str] = []
    for entry in data.get("vars", []):
        for key in ("all_runs", "campaign_runs"):
            if isinstance(entry, dict) and key in entry:
                found += str(entry[key]).split()
    return [Path(p) for p in found]


def report_main(
    argv: Sequence[str] | None,
    module: str,
    doc: str,
    second: tuple[str, str],
    write: Callable[..., list[str]],
    optional: Sequence[tuple[str, str]] = (),
) -> int:
    """The command line of a report stage (`python -m envgen.report.tables|figures`):
    runs.json files, `--out` and one more path option (`second`: its name and help);
    `write(tables, out, second path)` returns the lines to print. A mistake is one line.
    `optional`: further path options (name, help), passed to `write` as keywords (None
    when not given), so a new output does not change the older command lines."""
    parser = OneLineParser(prog=f"python -m {module}", description=doc.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="runs.json files, one per table")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument(second[0], type=Path, required=True, help=second[1])
    for name, help_text in optional:
        parser.add_argument(name, type=Path, help=help_text)
    args = parser.parse_args(argv)
    extra = {name.lstrip("-"): getattr(args, name.lstrip("-")) for name, _ in optional}
    try:
        lines = write(
            load_tables(args.runs), args.out, getattr(args, second[0].lstrip("-")), **extra
        )
    except EnvGenError as exc:
        print(f"{module}: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
