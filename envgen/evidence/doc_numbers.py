"""Numbers in the docs that look like results: each one checked, or listed as not a result.

A result figure in README.md, docs/ or a results/**/README.md holds only while a check
ties it to the runs: a passage filled from docs/templates/ (`doc_templates`). Any other
number in a result's form (`FORMS`) is named by `make verify` with its file and line,
unless docs/not_results.yaml (`NOT_RESULTS`) lists the text around it with the reason it
is not one of our results (the paper's numbers, a measurement beside its command, an
example, a threshold; a table's header row excuses its table); an entry that excuses
nothing is named too, so the list cannot outgrow the docs.

The forms are what a result looks like in these docs: a mean ± std, a signed difference
or bound, "N points", a p-value, an interval, a number after "score", "X vs Y" with
decimals, a percentage with decimals, a decimal opening a table cell. Not results by
form: unsigned integers outside a p-value (steps, seeds, counts, years), dates and
versions, hashes, and a number fused to or followed by a unit ("0.96M", "3x", "12.3 s").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from envgen import yaml_input
from envgen.errors import EnvGenError
from envgen.evidence.doc_templates import Problem, line_of

_DEC = r"\d+\.\d+(?:e[-+−]?\d+)?"
_NUM = r"\d+(?:\.\d+)?(?:e[-+−]?\d+)?"
_BEFORE = r"(?<![\w.\-−+/])"  # not inside a word, a version, a date or a path
_UNIT = (
    r"(?!\.?\d|[A-Za-z_]|\s*(?:s|ms|µs|us|min|h|GiB|MiB|KiB|GB|MB|KB|kB|TB|B|bytes|"
    r"GHz|steps/s|it/s|SPS|cores?|threads?|x|×)\b)"
)  # a number not continued by more digits, and not followed by a unit

# (form, pattern): each match is one result-looking number.
FORMS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (form, re.compile(pattern))
    for form, pattern in (
        ("a ± pair", rf"{_BEFORE}{_NUM}\s*%?\s*(?:±|\+/-)\s*{_NUM}"),
        ("a signed difference", rf"(?<![\w.)\]/])[+−-]{_DEC}{_UNIT}"),
        ("a number of points", rf"{_BEFORE}(?:[+−-]{_NUM}|{_DEC})\s+points?\b"),
        (
            "a p-value",
            rf"\bp(?:-value)?(?:\s*[=<>≤≥]\s*|\s+of the mean difference\s+|\s+)"
            rf"{_NUM}(?!\w|\.\d)",
        ),
        ("a bound", rf"\b(?:bounds?|interval|U|L)\s*(?:=\s*)?\[?\s*[+−-]?{_DEC}"),
        ("a score", rf"\bscor(?:e|es|ed|ing)\s+(?:of\s+|=\s*)?{_DEC}{_UNIT}"),
        ("a comparison", rf"{_BEFORE}{_DEC}\s*%?\s+(?:vs\.?|versus|against|over|to)\s+{_DEC}"),
        ("a percentage", rf"{_BEFORE}{_DEC}\s?%"),
        ("a number of points", rf"{_BEFORE}[+−-]?{_NUM}\s*(?:pts?\b|percentage points?\b|pp\b)"),
        ("a p-value", rf"\bp\s*[≈~]\s*{_NUM}"),
        ("a score", rf"\bscore\s*:\s*{_DEC}"),
        ("a table cell", rf"(?:(?<=\|)|(?<=\| ))(?:\*\*)?[+−-]?{_DEC}{_UNIT}"),
    )
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


NOT_RESULTS = "docs/not_results.yaml"
"""The list of `NotResult`s, relative to the repository root: `not_results:`, each entry
`path`, `text` and `why` (shared reasons are YAML anchors under `reasons:`)."""


def not_results(root: Path = Path(".")) -> tuple[NotResult, ...]:
    """The entries of `root`/docs/not_results.yaml; one `EnvGenError` line if malformed."""
    path = root / NOT_RESULTS
    data = yaml_input.read(path)
    entries = data.get("not_results") if isinstance(data, dict) else None
    fields = [f.name for f in dataclasses.fields(NotResult)]
    if not isinstance(entries, list) or not all(
        isinstance(e, dict)
        and sorted(e) == sorted(fields)
        and all(isinstance(v, str) for v in e.values())
        for e in entries
    ):
        raise EnvGenError(f"{path}: `not_results:` must list entries of {', '.join(fields)} (text)")
    return tuple(NotResult(**e) for e in entries)


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
        if not out or hit.start >= out[-1].end:
            out.append(hit)
    return out


# Markdown that `envgen verify` rebuilds from the runs and compares byte for byte, and
# the templates whose filled copies it compares: their numbers are checked already (or
# are placeholders), so the scanner leaves them to that check.
REBUILT = ("results/CLAIMS.md", "results/tables/", "docs/templates/")


def doc_files(root: Path) -> list[Path]:
    """README.md and every .md under docs/, results/ and data/, but the files verify
    rebuilds or fills in (`REBUILT`)."""
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


def unchecked(
    root: Path,
    covered: Mapping[str, Sequence[tuple[int, int]]],
    allowed: Sequence[NotResult] | None = None,
) -> list[Problem]:
    """Every result-looking number in the docs outside `covered` (spans of generated
    passages, by path) and outside `allowed` (default: `not_results(root)`); then every
    `allowed` entry that excuses no number."""
    allowed = not_results(root) if allowed is None else allowed
    problems: list[Problem] = []
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
            what = (
                f"{' '.join(hit.number.split())!r} looks like a result ({hit.form}) "
                "that no check covers: quote it in a passage of docs/templates/, or, "
                "if it is not a result of our runs, list it in docs/not_results.yaml "
                "with the reason"
            )
            problems.append(Problem(rel, line_of(text, hit.start), what))
    fix = "excuses no result-looking number there any more: remove it from docs/not_results.yaml"
    unused = [entry for i, entry in enumerate(allowed) if i not in used]
    return problems + [
        Problem(e.path, None, f"not_results entry {e.text[:60]!r} {fix}") for e in unused
    ]
