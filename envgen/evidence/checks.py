"""The checks `envgen verify` runs, one `Check` (a line of its report) each; what each
re-derives is in `envgen.evidence.verify`'s docstring. Imports the report, the pipeline
and the statistics, which `envgen verify --help` must not load."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ParamSpec

from envgen import json_input
from envgen.campaign.registry import campaigns
from envgen.errors import EnvGenError
from envgen.evidence import doc_numbers, doc_templates, docfigures, history
from envgen.evidence.derive import accounting_difference, rederived, run_config
from envgen.evidence.history import HISTORY_NEEDED, registration_order
from envgen.evidence.verify_plan import label_problem, plan_differences
from envgen.games import game_spec
from envgen.llm.cache import ResponseCache, slots_verdict
from envgen.llm.chains import history_verdict
from envgen.loop.identity import check_identity
from envgen.pipeline.results import metrics_and_scores, row_replay, run_entry
from envgen.report import claims_md, figures, tables
from envgen.report.campaign_section import withheld_runs
from envgen.report.inputs import load_table, runs_json_files
from envgen.results_version import RESULTS_VERSION, version_key
from envgen.stats.campaign_spec import missing_words, words
from envgen.store import MANIFEST, is_sealed, recorded_version, verify_run
from envgen.store.identity import read_mapping, refuse_links
from envgen.store.manifest import CHECKPOINT_DIR
from envgen.store.run_dir import RunDir

RUNS_ROOT = Path("results/runs")
CACHE_DIR = Path("data/llm_cache")
TOLERANCE = 1e-9  # re-derived floats: same code, same inputs, so equal up to float printing
P = ParamSpec("P")


@dataclasses.dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str
    checked: bool = True
    """False when this checkout cannot tell (`ok` is then True and means nothing)."""
    needed: str | None = None
    """For a check not made: what this checkout needs to make it (`HISTORY_NEEDED`);
    `envgen verify` then exits non-zero. None: an unchecked check counts neither way."""

    def line(self) -> str:
        word = "matches" if self.ok else "DIFFERS"
        return f"{self.name}: {word if self.checked else 'not checked'} ({self.detail})"


def _check(name: str) -> Callable[[Callable[P, str]], Callable[P, Check]]:
    """A check's body made the check: the detail it returns matches, the `EnvGenError`
    it raises differs."""

    def decorate(body: Callable[P, str]) -> Callable[P, Check]:
        @functools.wraps(body)
        def check(*args: P.args, **kwargs: P.kwargs) -> Check:
            try:
                return Check(name, True, body(*args, **kwargs))
            except EnvGenError as exc:
                return Check(name, False, str(exc))

        return check

    return decorate


def _raise_first(problems: Sequence[object | None], hint: str = "") -> None:
    """An `EnvGenError` of the first problem (None is none) and how many more there are."""
    found = [p for p in problems if p]
    if found:
        more = f" (and {len(found) - 1} more{hint})" if len(found) > 1 else ""
        raise EnvGenError(f"{found[0]}{more}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _first_key_differing(a: dict[str, Any], b: dict[str, Any]) -> str:
    keys = sorted(set(a) | set(b))
    return next((k for k in keys if not _same(a.get(k), b.get(k))), "?")


# --- 1. the LLM cache ---------------------------------------------------------------------
def check_cache(cache_dir: Path = CACHE_DIR) -> Check:
    count = 0
    try:
        for _ in ResponseCache(cache_dir).entries():
            count += 1
    except EnvGenError as exc:
        return Check("LLM cache", False, f"after {count} good files: {exc}")
    return Check("LLM cache", True, f"{count} files in {cache_dir}")


# --- 2. the run store ------------------------------------------------------------------------
def listed_run_dirs(runs_files: Sequence[Path]) -> list[Path]:
    """Every run directory a runs.json entry names (the runs the committed numbers use)."""
    found: set[Path] = set()
    for path in runs_files:
        table = json_input.read(path)
        found |= {Path(entry["run_dir"]) for row in table["rows"] for entry in row["runs"]}
    return sorted(found)


def sealed_runs(tree: Path) -> list[Path]:
    """Every sealed run (a folder holding its manifest) anywhere under `tree`, sorted;
    hidden folders (.git, .venv, .dvc) and checkpoints are not searched, nor a run's
    own subfolders."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(tree):
        if MANIFEST in files:
            found.append(Path(folder))
            dirs.clear()
            continue
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != CHECKPOINT_DIR]
    return sorted(found)


@_check("run store")
def check_run_store(
    runs_root: Path = RUNS_ROOT,
    listed: Sequence[Path] = (),
    cache_dir: Path = CACHE_DIR,
    tree: Path | None = None,
) -> str:
    """Every sealed run against its folder's name, its manifest and its logs, and every
    run in `listed` sealed and current: a run without its manifest could not be checked,
    so its logs could change a table; a stale one is not what the code would report.
    The sealed runs are `runs_root`'s, and with `tree` every sealed run under it (a run
    committed elsewhere, as results/audit's, is quoted by docs as the store's are)."""
    unsealed = [p for p in listed if not is_sealed(p)]
    if unsealed:
        raise EnvGenError(
            f"{unsealed[0]}: no {MANIFEST}, so its files cannot be checked, yet runs.json uses "
            f"it ({len(unsealed)} such run(s)): restore it from git (git checkout -- PATH)"
        )
    for run_dir in sorted({*runs_root.glob("*/seed-*"), *listed}):
        refuse_links(run_dir)
    for run_dir in listed:
        _refuse_stale(run_dir)
    runs = sorted(
        {p for p in runs_root.glob("*/seed-*") if is_sealed(p)}
        | set(sealed_runs(tree) if tree is not None else ())
    )
    elsewhere = [p for p in runs if not p.is_relative_to(runs_root)]
    for run_dir in elsewhere:
        refuse_links(run_dir)
    files = 0
    for run_dir in runs:
        files += verify_run(run_dir)
        check_identity(run_dir)
        final = read_mapping(RunDir(run_dir).final_metrics)
        derived = rederived(run_dir, final)
        _raise_first([accounting_difference(run_dir, cache_dir)])
        recorded = {k: final.get(k) for k in derived}
        if not _same(recorded, derived):
            key = _first_key_differing(recorded, derived)
            raise EnvGenError(
                f"{RunDir(run_dir).final_metrics}: {key} is {recorded.get(key)!r}, its logs give "
                f"{derived.get(key)!r}"
            )
        _raise_first([over_budget(run_dir, final)])  # logs agree: is the run its size?
    outside = f" ({len(elsewhere)} outside {runs_root})" if elsewhere else ""
    return (
        f"{len(runs)} sealed runs{outside}, each in its own folder, {files} files against "
        "their manifests; final metrics and LLM accounting re-derived from the logs"
    )


def _refuse_stale(run_dir: Path) -> None:
    """An `EnvGenError` when a run runs.json uses is not of the code's results version."""
    game = read_mapping(RunDir(run_dir).final_metrics).get("game", "crafter")
    config = run_config(run_dir)  # a random-policy run has none: no LLM adapts its worlds
    key = version_key(game, config is not None and config.llm_adapts)
    version = recorded_version(run_dir)
    if key not in RESULTS_VERSION or version != RESULTS_VERSION[key]:
        raise EnvGenError(
            f"{run_dir}: results version {version!r}, the code's for {key!r} is "
            f"{RESULTS_VERSION.get(key)!r}: the run is stale, yet runs.json uses it"
        )


# --- 3, 4. tables, CLAIMS.md ---------------------------------------------------------------
def _diff_files(ours: Path, committed: Path) -> str | None:
    """Where two text files first differ ("path line N"), or None when equal."""
    if not committed.is_file():
        return f"{committed} is missing"
    if not ours.is_file():
        return f"{committed} is not produced by the current code"
    a, b = ours.read_text(encoding="utf-8"), committed.read_text(encoding="utf-8")
    if a == b:
        return None
    for number, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), 1):
        if x != y:
            return f"{committed} line {number}"
    return f"{committed}: {len(a.splitlines())} lines rebuilt vs {len(b.splitlines())}"


def _runs_json_differences(path: Path, withheld: bool) -> str | None:
    """What in `path` (a runs.json) and its metrics.json and scores.json is not what the
    runs give; `withheld`: a registered campaign in progress (run counts only)."""
    table = json_input.read(path)
    if not isinstance(table, dict):
        return f"{path}: not a mapping"
    problem = plan_differences(path, table, RUNS_ROOT, lagging_ok=withheld)
    if problem:
        return problem
    cache = ResponseCache(CACHE_DIR)
    for row in table["rows"]:
        label = label_problem(row, cache)
        if label:
            return f"{path}: row {row['row']!r}: {label}"
        for entry in row["runs"]:
            fields = (entry[k] for k in ("seed", "initial_set", "config_hash", "game"))
            derived = run_entry(Path(entry["run_dir"]), *fields)
            if not _same(entry, derived):
                key = _first_key_differing(entry, derived)
                return f"{path}: row {row['row']!r} seed {entry['seed']}: {key}"
        if row["runs"] and not _same(row.get("llm_replay"), row_replay(row["runs"])):
            return f"{path}: row {row['row']!r}: llm_replay"
    derived = metrics_and_scores(table, withheld)
    for name, data in zip(("metrics.json", "scores.json"), derived, strict=True):
        sibling = path.with_name(name)
        if sibling.is_file() and not _same(json_input.read(sibling), data):
            return f"{sibling}: not what runs.json gives"
    return None


def _report_stage(main: Callable[[list[str]], int], argv: list[str]) -> str:
    """Run a report stage quietly; its one-line error ("" when it succeeded)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return "" if code == 0 else (err.getvalue().strip().splitlines() or ["failed"])[-1]


def check_tables(runs_files: Sequence[Path], work: Path) -> list[Check]:
    """One line per runs.json, then the summary metrics and CLAIMS.md: a table whose runs
    or files fail names that failure on its own line, and every other table is still
    checked."""
    args = [str(p) for p in runs_files]
    tables_error = _report_stage(
        tables.main, [*args, "--out", str(work / "tables"), "--metrics", str(work / "m.json")]
    )
    claims_error = _report_stage(claims_md.main, [*args, "--out", str(work / "CLAIMS.md")])
    checks = []
    for path in runs_files:
        try:
            problem = _table_problem(path, work)
        except EnvGenError as exc:
            problem = str(exc)
        except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:  # a damaged run
            problem = f"{path}: a run it uses is unreadable ({type(exc).__name__}: {exc})"
        detail = "runs.json, metrics, table, plot CSVs, curves" if problem is None else problem
        checks.append(Check(path.parent.name, problem is None, detail))
    for label, ours, committed, error in (
        ("summary metrics", work / "m.json", Path("results/metrics.json"), tables_error),
        ("CLAIMS.md", work / "CLAIMS.md", Path("results/CLAIMS.md"), claims_error),
    ):
        problem = error or _diff_files(ours, committed)
        checks.append(Check(label, problem is None, problem or f"rebuilt {committed}"))
    return checks


def _table_problem(path: Path, work: Path) -> str | None:
    """What in one table (its runs.json, metrics, report files, plot CSVs and curves) is
    not what its runs give, or None; the report stages wrote theirs under `work`."""
    name = path.parent.name
    record = load_table(path)
    withheld = withheld_runs(record) is not None
    problem = _runs_json_differences(path, withheld)
    produced: list[tuple[Path, Path]] = [
        (work / "tables" / f"{name}.{ext}", Path("results/tables") / f"{name}.{ext}")
        for ext in ("md", "csv")
    ]
    if withheld:  # its table says so, and it has no CSV or curves yet
        produced = produced[:1]
    else:
        figures.write_curve_csvs(record, work / "plots", work / "curves")
        committed_plots = Path("results/plots") / name
        names = {p.name for p in (work / "plots" / name).glob("*.csv")}
        names |= {p.name for p in committed_plots.glob("*.csv")}
        produced += [(work / "plots" / name / n, committed_plots / n) for n in sorted(names)]
        curves = f"{name}.csv"  # the table's learning curves (results/curves)
        produced.append((work / "curves" / curves, Path("results/curves") / curves))
    produced += [  # a table's other files, e.g. campaign_cpu_achievements.csv
        (p, Path("results/tables") / p.name)
        for p in sorted((work / "tables").glob(f"{name}_*"))
        if p.is_file()
    ]
    for ours, committed in produced:
        problem = problem or _diff_files(ours, committed)
    return problem


def verify(
    runs_files: Sequence[Path] | None = None, echo: Callable[[str], None] = print
) -> list[Check]:
    """Every check, each printed as it finishes."""
    checks: list[Check] = []

    def add(check: Check) -> None:
        checks.append(check)
        echo(check.line())

    runs_files = runs_files or runs_json_files()
    add(check_cache())
    add(Check("LLM slots", *slots_verdict(CACHE_DIR, [RUNS_ROOT])))
    add(Check("LLM history", *history_verdict(CACHE_DIR)))
    try:
        add(check_run_store(listed=listed_run_dirs(runs_files), tree=Path(".")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        add(Check("run store", False, f"a runs.json file is unreadable ({exc})"))
    with tempfile.TemporaryDirectory(prefix="envgen-verify-") as tmp:
        try:
            for check in check_tables(runs_files, Path(tmp)):
                add(check)
        except EnvGenError as exc:
            add(Check("report", False, str(exc)))
    add(check_doc_figures(runs_files))
    for check in check_registrations(runs_files):
        add(check)
    add(check_runs_unchanged())
    add(check_registrations_frozen())
    return checks


def over_budget(run_dir: Path, final: dict[str, Any]) -> str | None:
    """Why a run's env steps exceed what its config allows, or None: its phases' steps
    (`RunConfig.total_steps`), each phase rounded up to whole rollouts. SFL's and PLR's
    `env_steps` count their curation rollouts, which the budget includes."""
    config = run_config(run_dir)
    if config is None:
        return None  # a random-policy run: counted in episodes
    rollout = game_spec(config.game).ppo_config(config.ppo).rollout_size
    phases = 2 * config.n_cycles + 1 if config.method != "original_only" else 1
    allowed = config.total_steps + phases * rollout
    steps = final.get("env_steps", final.get("global_steps"))
    if isinstance(steps, int) and steps > allowed:
        return (
            f"{RunDir(run_dir).final_metrics}: {steps:,} env steps, above the {allowed:,} its "
            f"config allows ({config.total_steps:,} and a rollout of rounding per phase)"
        )
    return None


# --- 7. committed evidence against the commit that added it ---------------------------------
@_check("evidence as committed")
def check_runs_unchanged(repo: Path = Path(".")) -> str:
    """Every committed run's manifest and audit record is its first commit's bytes, and
    every cached LLM reply its first commit's record, but for recorded changes
    (`envgen.evidence.history`)."""
    _raise_first([history.history_missing(repo)])
    problems, checked, uncommitted = history.run_changes(repo)
    reply_problems, replies = history.cache_changes(repo)
    _raise_first(problems + reply_problems)
    return (
        f"{checked} committed run manifests and audit records are the bytes their first "
        f"commit added and {replies} cached replies its record, or a recorded change's "
        f"({history.RUN_CHANGES})" + (f"; {uncommitted} not committed yet" if uncommitted else "")
    )


@_check("registrations frozen")
def check_registrations_frozen(repo: Path = Path(".")) -> str:
    """Each campaign registration's text above its Deviations is its first commit's, but
    for changes its Deviations name, and holds the verdict words its campaign declares."""
    registered = [c for c in campaigns().values() if c.registration]
    documents = sorted({c.registration for c in registered})
    _raise_first([history.history_missing(repo)])
    problems = [p for d in documents if (p := history.registration_changes(d, repo))]
    for c in (c for c in registered if (repo / c.registration).is_file()):
        text = history.above_deviations((repo / c.registration).read_text(encoding="utf-8"))
        phrase = missing_words(c, text)
        if phrase is not None:
            problems.append(f"{c.table}: its verdict words {phrase!r} are not in {c.registration}")
    _raise_first(problems[:1])
    return (
        f"{len(documents)} registrations: the text above Deviations is their first commit's, "
        "or each change is named in their Deviations"
    )


# --- 6. registrations before runs ----------------------------------------------------------
def check_registrations(runs_files: Sequence[Path], repo: Path = Path(".")) -> list[Check]:
    """Each registered campaign's registration committed before every run it lists."""
    checks = []
    for path in runs_files:
        registration = words(path.parent.name)
        if registration is None:
            continue
        name = f"{path.parent.name} registration"
        try:
            table = load_table(path)
        except EnvGenError as exc:
            checks.append(Check(name, False, str(exc)))
            continue
        run_dirs = sorted({run.run_dir.as_posix() for row in table.rows for run in row.runs})
        order = registration_order(repo, registration.document, run_dirs)
        if order.unknown:
            needed = HISTORY_NEEDED if order.shallow else None
            checks.append(Check(name, True, order.unknown, checked=False, needed=needed))
            continue
        detail = order.problem or (
            f"{registration.document} ({order.registration}) is an ancestor of the "
            f"first commit of each of its {order.runs} runs"
        )
        checks.append(Check(name, order.problem is None, detail))
    return checks


@_check("docs figures")
def check_doc_figures(runs_files: Sequence[Path], root: Path = Path(".")) -> str:
    """The figures README.md, docs/ and results/**/README.md quote, against the runs
    (`envgen.evidence.docfigures`): the first problem, and how many there are."""
    problems = docfigures.run(runs_files, root)
    passages, excuses = doc_templates.load(root), doc_numbers.not_results(root)
    _raise_first(problems, ": python -m envgen.evidence.docfigures")
    return (
        f"{len(passages)} passages of {doc_templates.TEMPLATES}/ match the runs at every copy; "
        f"every other result-looking number is excused by one of {len(excuses)} entries of "
        f"{doc_numbers.NOT_RESULTS}"
    )
