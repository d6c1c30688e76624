"""Docs that hold by construction: the result passages README.md and docs/ quote are their
templates (docs/templates/) filled from the runs (`envgen.evidence.docfigures`, run by
`make verify`), the README's "Where" table names
every part of envgen/, its first screen says what the project is, how to run it and
where it stands, and the plan the docs print is what the command prints."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envgen.errors import EnvGenError
from envgen.evidence import doc_numbers, doc_templates, docfigures
from envgen.report.inputs import load_tables

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tables():
    """The pipeline's tables, read once from every runs.json dvc.yaml names."""
    return load_tables([REPO / p for p in docfigures.runs_json_files(REPO / "dvc.yaml")])


@pytest.fixture(scope="module")
def values(tables) -> dict[str, str]:
    return docfigures.figures(tables, REPO)


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    """README.md, docs/, and every .md under results/ and data/, copied: the files the
    check reads."""
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    for path in [*(REPO / "results").rglob("*.md"), *(REPO / "data").rglob("*.md")]:
        copy = tmp_path / path.relative_to(REPO)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, copy)
    return tmp_path


def test_the_committed_docs_quote_what_the_runs_give(values):
    problems, checked = docfigures.check(values, REPO)
    assert checked == len(doc_templates.load(REPO)) > 0 and not problems, "\n".join(
        map(str, problems)
    )


def test_every_passage_names_only_computed_figures_and_starts_and_ends_with_words(values):
    for passage in doc_templates.load(REPO):
        names = re.findall(r"\{([a-z0-9_.]+)\}", passage.text)
        assert names, passage
        assert set(names) <= set(values), (passage.template, set(names) - set(values))
        assert not passage.text.startswith("{") and not passage.text.endswith("}"), passage


def test_an_edited_figure_is_named_with_what_the_runs_give_and_write_restores_it(values, docs_copy):
    readme = docs_copy / "README.md"
    original = readme.read_text(encoding="utf-8")
    assert values["confirm.dr"] == "21.55 ± 1.29"  # the committed runs' figure
    readme.write_text(original.replace("21.55 ± 1.29", "21.56 ± 1.29", 1), encoding="utf-8")
    problems, _ = docfigures.check(values, docs_copy)
    line = original[: original.index("21.55 ± 1.29")].count("\n") + 1
    assert [str(p) for p in problems] == [
        f"README.md line {line}: confirm.dr reads '21.56 ± 1.29', the runs give '21.55 ± 1.29'"
    ]
    docfigures.check(values, docs_copy, write=True)
    assert readme.read_text(encoding="utf-8") == original
    assert docfigures.check(values, docs_copy)[0] == []


def test_a_figure_in_a_registration_and_in_claims_audit_is_checked_too(values, docs_copy):
    registration = docs_copy / "docs" / "campaign_confirm.md"
    text = registration.read_text(encoding="utf-8")
    edited = text.replace("difference 0.0014", "difference 0.002")
    registration.write_text(edited, encoding="utf-8")
    claims = docs_copy / "results" / "CLAIMS.md"
    claims.write_text(
        claims.read_text(encoding="utf-8").replace("(Spearman -0.19)", "(Spearman -0.29)"),
        encoding="utf-8",
    )
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert any(
        p.startswith("docs/campaign_confirm.md line")
        and "audit.perm_p reads '0.002', the runs give '0.0014'" in p
        for p in problems
    ), problems
    assert any(
        p.startswith("results/CLAIMS.md line")
        and "audit.load_rho reads '-0.29', the runs give '-0.19'" in p
        for p in problems
    ), problems


def test_the_llm15_verdicts_figures_in_the_readme_are_checked(values, tables, docs_copy):
    """Its figures come from the complete campaign's runs (none while any is missing)."""
    assert (values["llm15.diff"], values["llm15.upper"]) == ("-1.98", "-1.11")
    readme = docs_copy / "README.md"
    text = readme.read_text(encoding="utf-8")
    readme.write_text(text.replace("upper bound -1.11;", "upper bound -1.21;"), encoding="utf-8")
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert any("llm15.upper reads '-1.21', the runs give '-1.11'" in p for p in problems)
    shorter = []
    for table in tables:
        if table.table == "campaign_llm15":  # one run short: no figure
            short = dataclasses.replace(table.rows[0], runs=table.rows[0].runs[:-1])
            table = dataclasses.replace(table, rows=(short, *table.rows[1:]))
        shorter.append(table)
    assert "llm15.diff" not in docfigures.figures(shorter, REPO)


def _as_headline(tables, shift: float = 0.0, short: bool = False):
    """llm15's table as if it were the headline campaign's (its DR row standing in for
    Crafter-only), arm a's scores moved by `shift`, arm a one run short if `short`; the
    headline's own runs.json, once the pipeline reads it, is left out."""
    out = []
    for table in tables:
        if table.table == "campaign_headline":  # the real one, once in the pipeline: unread
            continue
        if table.table == "campaign_llm15":
            a, b = table.rows
            runs = tuple(dataclasses.replace(r, score=r.score + shift) for r in a.runs)
            a = dataclasses.replace(a, runs=runs[:-1] if short else runs)
            b = dataclasses.replace(b, row="PPO 1.96M Crafter only")
            table = dataclasses.replace(table, table="campaign_headline", rows=(a, b))
        out.append(table)
    return out


def test_the_headline_verdict_is_its_registered_sentence_once_every_run_is_in(tables):
    """The README's headline passage quotes `headline.verdict`: the registration's words
    (docs/campaign_headline.md, "Verdicts") filled from the complete campaign's runs."""
    worse = docfigures.figures(_as_headline(tables), REPO)
    assert (worse["headline.diff"], worse["headline.upper"]) == ("-1.98", "-1.11")
    assert worse["headline.verdict"] == (
        "worse: PPO + EnvGen with the 1.5B LLM designer scored 1.98 points below PPO with "
        "the same 1.96M steps in Crafter alone (one-sided 95% upper bound -1.11; 16 + 16 "
        "seeds)."
    )
    level = docfigures.figures(_as_headline(tables, shift=2.48), REPO)["headline.verdict"]
    assert level.startswith("no difference detected: +0.50 points (one-sided 95% bounds [")
    assert level.endswith(  # the paper's two differences the registration names
        "; it rules out +5.80 (the paper's PPO + EnvGen − Crafter-only); it rules out +2.30 "
        "(the paper's PPO + EnvGen − Fixed)."
    ), level
    for shift, ruled in ((6.0, "it rules out"), (8.0, "it does not rule out")):
        better = docfigures.figures(_as_headline(tables, shift=shift), REPO)
        verdict = better["headline.verdict"]
        assert verdict.startswith("better: PPO + EnvGen with the 1.5B LLM designer scored +")
        assert f"lower bound {better['headline.lower']}, p = {better['headline.p']};" in verdict
        assert verdict.endswith(  # against +5.8 alone, so that a smaller gain is said
            "for the nature network on CPU. The data rule out an effect of "
            f"{better['headline.upper']} or more; {ruled} +5.80 (the paper's PPO + EnvGen − "
            "Crafter-only)."
        ), verdict
    withheld = docfigures.figures(_as_headline(tables, short=True), REPO)
    assert not [name for name in withheld if name.startswith("headline.")]


def test_a_verdict_sentence_in_a_passage_is_found_written_and_checked(tables, docs_copy):
    """A figure whose value is a sentence (`headline.verdict`) is found in its doc as
    any text on one line: `--write` puts the verdict in place of a placeholder, and a
    word edited in it afterwards is named with what the runs give."""
    values = docfigures.figures(_as_headline(tables), REPO)  # llm15 stands in
    verdict = values["headline.verdict"]
    assert "1.98 points below" in verdict
    (docs_copy / "docs" / "templates" / "standin.md").write_text(
        "# Passages of docs/standin.md\n\n~~~\nIn a campaign standing in for `headline`, the "
        'verdict is\n"{headline.verdict}"\n~~~\n',
        encoding="utf-8",
    )
    doc = docs_copy / "docs" / "standin.md"
    doc.write_text(
        'A stand-in.\nIn a campaign standing in for `headline`, the verdict is\n"to come" '
        "(the registration).\n",
        encoding="utf-8",
    )

    def problems() -> list[str]:
        found = docfigures.check(values, docs_copy)[0]
        return [str(p) for p in found if str(p).startswith("docs/standin.md")]

    assert problems() == [
        f"docs/standin.md line 3: headline.verdict reads 'to come', the runs give {verdict!r}"
    ]
    # what the write found, and nothing else: the verdict's numbers, now written, are
    # inside the copy's span (not "looks like a result that no check covers")
    wrote = docfigures.check(values, docs_copy, write=True)[0]
    assert [str(p) for p in wrote if p.path == "docs/standin.md"] == [
        f"docs/standin.md line 3: headline.verdict reads 'to come', the runs give {verdict!r}"
    ]
    written = doc.read_text(encoding="utf-8")
    assert f'the verdict is\n"{verdict}" (the registration).\n' in written
    assert problems() == []
    doc.write_text(written.replace("1.98 points below", "1.89 points below"), encoding="utf-8")
    (wrong,) = problems()
    assert wrong.startswith("docs/standin.md line 3: headline.verdict reads 'worse: PPO")
    assert "1.89 points below" in wrong and wrong.endswith(f"the runs give {verdict!r}")


def test_a_headline_figure_copied_outside_every_passage_is_named(values, docs_copy):
    page = docs_copy / "docs" / "loop.md"
    page.write_text(
        page.read_text(encoding="utf-8") + "\nThe confirm campaign's Crafter-only runs: 15.14.\n",
        encoding="utf-8",
    )
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert len(problems) == 1 and problems[0].startswith("docs/loop.md line"), problems
    assert "15.14 (confirm.co_mean) is a copy no check covers" in problems[0]


def test_a_passage_whose_prose_changed_is_named(values, docs_copy):
    readme = docs_copy / "README.md"
    text = readme.read_text(encoding="utf-8")
    edited = text.replace("upper bound -1.11; 16 + 16 seeds", "upper bound -1.11; 16 and 16 seeds")
    assert edited != text
    readme.write_text(edited, encoding="utf-8")
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert any(
        p.startswith("README.md: passage of docs/templates/readme.md line") and "not found" in p
        for p in problems
    ), problems


# --- the passages are generated text (issue 65, item 5) ----------------------------------
def _docs(root: Path) -> dict[str, bytes]:
    """Every Markdown file but the templates, by path: its bytes."""
    files = (p for p in root.rglob("*.md") if "templates" not in p.parts)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def test_a_template_edited_without_regenerating_its_doc_is_named(values, docs_copy):
    """A template's words (here a planning figure the power table prints) changed, the
    doc not regenerated: the doc's copy no longer matches its template."""
    template = docs_copy / "docs" / "templates" / "campaign_confirm.md"
    text = template.read_text(encoding="utf-8")
    assert "| {first.co_sd} | 0.78 | 0.82 |" in text
    template.write_text(text.replace("| 0.78 | 0.82 |", "| 0.79 | 0.82 |"), encoding="utf-8")
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert any(
        p.startswith("docs/campaign_confirm.md: passage of docs/templates/campaign_confirm.md")
        and "not found" in p
        for p in problems
    ), problems


def test_a_figure_changed_in_a_template_is_named_and_write_regenerates_the_doc(values, docs_copy):
    """A template now quotes another figure at the same words: the doc is named, then
    regenerated from the template alone."""
    template = docs_copy / "docs" / "templates" / "readme.md"
    text = template.read_text(encoding="utf-8")
    template.write_text(text.replace("{confirm.lower}", "{confirm.diff}"), encoding="utf-8")
    problems = [str(p) for p in docfigures.check(values, docs_copy, write=True)[0]]
    assert len(problems) == 1 and "confirm.diff reads '+5.31', the runs give '+6.41'" in problems[0]
    assert "lower bound +6.41, Welch p" in (docs_copy / "README.md").read_text(encoding="utf-8")
    assert docfigures.check(values, docs_copy)[0] == []


def test_write_regenerates_every_passage_byte_for_byte(values, docs_copy):
    """Each passage's figures blanked and its line breaks changed in the docs: the check
    names them, and `write` gives back the committed docs byte for byte."""
    committed = _docs(docs_copy)
    for passage in doc_templates.load(docs_copy):
        doc = docs_copy / passage.doc
        text = doc.read_text(encoding="utf-8")
        copy = passage.pattern(passage.phrases(values)).search(text)
        assert copy, passage.template
        blank = {name: "0.00" for name in passage.names}
        forged = passage.fill(blank).replace(" ", "\n", 1)
        doc.write_text(text[: copy.start()] + forged + text[copy.end() :], encoding="utf-8")
    assert _docs(docs_copy) != committed
    problems = [str(p) for p in docfigures.check(values, docs_copy, write=True)[0]]
    assert len(problems) >= len(doc_templates.load(docs_copy)), problems
    assert _docs(docs_copy) == committed
    assert docfigures.check(values, docs_copy)[0] == []


def test_a_passage_rewrapped_by_hand_is_named(values, docs_copy):
    readme = docs_copy / "README.md"
    text = readme.read_text(encoding="utf-8")
    wrapped = "against Crafter-only's 15.14 ± 2.13, +6.41 points\n(one-sided"
    assert wrapped in text
    readme.write_text(text.replace(wrapped, wrapped.replace("\n", " ")), encoding="utf-8")
    line = text[: text.index(wrapped)].count("\n") + 1
    (template,) = [p.template for p in doc_templates.load(docs_copy) if "{confirm.dr}" in p.text]
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert problems == [
        f"README.md line {line}: differs from its template ({template}) in line breaks or spaces"
    ], problems


@pytest.mark.parametrize(
    ("template", "error"),
    [
        ("Passages of README.md\n", "its first line must be '# Passages of PATH'"),
        ("# Passages of README.md\n\n~~~\nscored {confirm.dr} against\n", "never closed"),
        ("# Passages of README.md\n\n~~~\nscored 21.55 against\n~~~\n", "at least one"),
    ],
)
def test_a_malformed_template_is_one_line_naming_it(docs_copy, template, error):
    (docs_copy / "docs" / "templates" / "bad.md").write_text(template, encoding="utf-8")
    with pytest.raises(EnvGenError, match=error) as caught:
        doc_templates.load(docs_copy)
    assert str(caught.value).startswith("docs/templates/bad.md") and "\n" not in str(caught.value)


def test_a_malformed_not_results_list_is_one_line_naming_it(docs_copy):
    (docs_copy / "docs" / "not_results.yaml").write_text(
        "not_results:\n  - path: README.md\n    text: 1.5 vs 2.5\n", encoding="utf-8"
    )
    with pytest.raises(EnvGenError, match="must list entries of path, text, why") as caught:
        doc_numbers.not_results(docs_copy)
    assert "\n" not in str(caught.value)


# --- every copy of a passage, every result-looking number (issue 55, case 2) -------------
FORGED = (
    "domain randomization scored 25.00 +/- 1.29 against Crafter-only's 15.04 +/- 2.13, "
    "+9.96 points (one-sided 95% lower bound +8.31, Welch p = 4.04e-10)"
)


def _append(page: Path, line: str) -> int:
    """Append `line` as a paragraph of its own; its line number."""
    text = page.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    page.write_text(text + line + "\n", encoding="utf-8")
    return text.count("\n") + 1


def test_the_issues_appended_wrong_copy_is_named_at_its_line(values, docs_copy):
    line = _append(docs_copy / "README.md", FORGED)
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    named = [p for p in problems if p.startswith(f"README.md line {line}: ")]
    assert named and len(named) == len(problems), problems
    for number in ("15.04 +/- 2.13", "+9.96 points", "bound +8.31", "p = 4.04e-10"):
        assert any(f"{number!r} looks like a result" in p for p in named), (number, named)


@pytest.mark.parametrize(
    ("page", "line_text", "number"),
    [
        ("docs/loop.md", "Domain randomization led Crafter-only by +6.4 points.", "+6.4 points"),
        ("docs/loop.md", "Domain randomization led Crafter-only by 6.4 points.", "6.4 points"),
        ("docs/notes/campaigns.md", "The confirm verdict had Welch p = 4.1e-10.", "p = 4.1e-10"),
        (
            "results/audit/crafter_only_retrain/README.md",
            "The retrained seed 1 scored 14.3.",
            "scored 14.3",
        ),
    ],
)
def test_a_rounded_or_unchecked_copy_is_named_in_docs_subfolders_and_results(
    values, docs_copy, page, line_text, number
):
    path = docs_copy / page
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("# Notes\n", encoding="utf-8")
    line = _append(path, line_text)
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert len(problems) == 1 and problems[0].startswith(f"{page} line {line}: "), problems
    assert f"{number!r} looks like a result" in problems[0]


def test_a_second_copy_of_a_declared_passage_with_a_wrong_p_value_is_named(values, docs_copy):
    """The README's verdict passage, copied below with one figure changed: the first copy
    is right, the second is still checked."""
    readme = docs_copy / "README.md"
    text = readme.read_text(encoding="utf-8")
    start = text.index("scored 21.55 ± 1.29 against")
    passage = text[start : text.index(";", start) + 1]
    assert "Welch p = 4.04e-10;" in passage
    line = _append(readme, "Again: " + passage.replace("4.04e-10", "4.04e-11"))
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    assert problems == [
        f"README.md line {line + passage.count(chr(10))}: confirm.p reads '4.04e-11', the "
        "runs give '4.04e-10'"
    ]


def test_a_runs_figure_quoted_in_an_audit_readme_is_named_with_its_run(values, docs_copy):
    readme = docs_copy / "results" / "audit" / "crafter_only_retrain" / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert "| 1 | 14.26 vs 22.13 |" in text
    readme.write_text(text.replace("| 1 | 14.26 vs", "| 1 | 14.62 vs"), encoding="utf-8")
    problems = [str(p) for p in docfigures.check(values, docs_copy)[0]]
    run = "results/audit/crafter_only_retrain/runs/ca3d42bc0a83/seed-1"
    assert len(problems) == 1 and problems[0].startswith(
        "results/audit/crafter_only_retrain/README.md line"
    ), problems
    assert f"retrain1.score (run {run}) reads '14.62', the runs give '14.26'" in problems[0]


@pytest.mark.parametrize(
    "text",
    [
        "19.94 ± 1.51",
        "2.13 +/- 0.31",
        "+6.41 points",
        "-1.98",
        "6.4 points",
        "+10 points",
        "Welch p = 4.04e-10",
        "p 0.55",
        "upper bound 1.11",
        "bounds [-0.81, +4.41]",
        "scored 14.26",
        "16.47 vs 14.66",
        "21.06%",
    ],
)
def test_result_forms_are_found(text):
    assert doc_numbers.hits(f"As measured, {text} here."), text


@pytest.mark.parametrize(
    "text",
    [
        "section 4.2",
        "2026-11-27",
        "torch 2.13.0+cpu",
        "1,961,984 steps",
        "seeds 0-4 vs 5-19",
        "12.3 s",
        "1.2 GiB",
        "0.96M steps",
        "a 1.5B model",
        "commit 4e80fe7",
        "numpy 1.26.4",
        "95% interval",
        "level 0.05/18",
        "a grid of 101 points",
    ],
)
def test_non_results_are_not_found(text):
    assert not doc_numbers.hits(f"As measured, {text} here."), text


def test_a_not_results_entry_that_excuses_nothing_is_named(docs_copy):
    stale = doc_numbers.NotResult("docs/loop.md", "a sentence no doc has", "why")
    problems = doc_numbers.unchecked(docs_copy, {}, (*doc_numbers.not_results(docs_copy), stale))
    assert any(
        p.path == "docs/loop.md" and p.line is None and "excuses no result-looking" in p.what
        for p in problems
    )


# --- README -------------------------------------------------------------------------------
def _where_table() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split("## Where", 1)[1].split("\n## ", 1)[0]


def test_the_where_table_names_every_package_and_top_level_module_of_envgen():
    table = _where_table()
    packages = [p.name for p in (REPO / "envgen").iterdir() if (p / "__init__.py").is_file()]
    modules = [p.name for p in (REPO / "envgen").glob("*.py") if p.name != "__init__.py"]
    missing = [f"envgen/{name}/" for name in packages if f"`envgen/{name}/" not in table]
    missing += [f"envgen/{name}" for name in modules if f"`envgen/{name}`" not in table]
    assert not missing, f"README.md's Where table omits {sorted(missing)}"
    named = set(re.findall(r"`envgen/([a-z_]+)(?:/|\.py)`", table))
    root = REPO / "envgen"
    gone = sorted(n for n in named if not (root / n).is_dir() and not (root / f"{n}.py").is_file())
    assert not gone, f"README.md's Where table names what envgen/ lacks: {gone}"


def test_the_readme_first_screen_says_what_how_where_it_stands_and_links():
    # a newcomer's minute: what it is, the two commands, a three-line status and the
    # "Where" map, all within the first 50 lines; results one paragraph below it
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    head = "\n".join(lines[:50])
    assert head.startswith("# envgen")
    assert "make repro" in head and "make test" in head
    status = head.split("**Status.**", 1)[1].split("\n\n", 1)[0]
    assert len(re.findall(r"^- ", status, flags=re.M)) == 3, status
    assert "results/CLAIMS.md" in status
    assert "## Where" in head and head.index("## Where") > head.index("**Status.**")
    results = "\n".join(lines).split("## Results so far", 1)[1].split("\n## ", 1)[0]
    assert results.strip().count("\n\n") == 0, "one paragraph"


# --- what the plan prints ---------------------------------------------------------------
@pytest.mark.slow
def test_the_gpu_plan_docs_print_is_what_the_command_prints():
    """docs/pipeline.md, "GPU plan", quotes the plan for Tables 1 to 8; on a machine
    without a GPU (the command assumes an 80 GiB card) it must print the same."""
    text = (REPO / "docs" / "pipeline.md").read_text(encoding="utf-8")
    section = text.split("## GPU plan", 1)[1]
    command = "python -m envgen.pipeline.train replication/table*.yaml --profile paper --plan"
    assert f"    {command}\n" in section
    quoted = re.search(r"\n((?:    profile 'paper'.*\n)(?:    .*\n)+)", section)
    assert quoted, "no quoted plan output"
    tables = sorted(str(p.relative_to(REPO)) for p in (REPO / "replication").glob("table*.yaml"))
    done = subprocess.run(
        [sys.executable, "-m", "envgen.pipeline.train", *tables, "--profile", "paper", "--plan"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    printed = [line for line in done.stdout.splitlines() if line.strip()]
    assert [line[4:] for line in quoted.group(1).splitlines()] == printed


def test_params_yaml_states_no_plan_figure_but_points_at_the_command():
    """A profile's runs, env steps and GPU-hours are what `--plan` prints, never a copy."""
    text = (REPO / "params.yaml").read_text(encoding="utf-8")
    comments = "\n".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line)
    assert not re.search(
        r"GPU-hours? in all|\d+ GPU-hours|\d+ runs,|\d[\d.,]*M (Crafter|Heist)", comments
    )
    assert "--plan" in comments
