"""The docs' result passages as templates: docs/templates/*.md, filled from the runs.

A sentence quoting a result would drift from the runs if typed by hand, and as a Python
string it could not be reworded without editing code. So each such passage is data: one
template file per doc, its first line `# Passages of PATH` naming the doc, each passage
between two `~~~` lines with its exact words and line breaks, every figure a `{name}`
(`envgen.evidence.docfigures` derives them). Text outside the fences is free comment.

`check` finds every copy of every passage in its doc (words fixed, figures any short
text, a figure whose value is a sentence, such as a registered verdict, any text on one
line; whitespace flexible) and compares it byte for byte with the passage filled from
the runs; `write` puts the filled passage in place of each copy that differs. A passage
the doc lacks is named, as is a guarded headline figure copied outside every passage.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from envgen.errors import EnvGenError

TEMPLATES = "docs/templates"
"""The templates' folder, relative to the repository root."""

FENCE = "~~~"
_HEAD = re.compile(r"# Passages of (\S+)")
_NAME = re.compile(r"\{([a-z0-9_.]+)\}")
_ANY_NUMBER = r"[-+−\[]{0,2}\d[-+−\d.,e%±\[\]\s]{0,40}?"
_ANY_WORD = r"[a-z_]+"
_ANY_PHRASE = r"[^\n]{1,2000}?"  # a sentence figure (`headline.verdict`): one line, any words
_DECIMAL = re.compile(r"\d+\.\d{2,}")
_SENTENCE = re.compile(r"[A-Za-z]{2,} ")  # a value with words in it (not "21.55 ± 1.29")


@dataclasses.dataclass(frozen=True)
class Passage:
    """One templated passage: where it is written and its words."""

    doc: str
    """The doc it is written into, relative to the repository root."""
    template: str
    """Its template file and line, for the messages: `docs/templates/x.md line 7`."""
    text: str
    """The exact words, line breaks included, each figure a `{name}`."""

    @property
    def names(self) -> list[str]:
        """Its figures' names in order (a name used twice is listed twice)."""
        return _NAME.findall(self.text)

    def fill(self, values: Mapping[str, str]) -> str:
        """The passage as the doc must print it, each figure its value."""
        return _NAME.sub(lambda m: values[m.group(1)], self.text)

    def phrases(self, values: Mapping[str, str]) -> frozenset[str]:
        """Its figures whose value is a sentence (`headline.verdict`), for `pattern`."""
        return frozenset(n for n in self.names if _SENTENCE.search(values[n]))

    def pattern(self, phrases: frozenset[str] = frozenset()) -> re.Pattern[str]:
        """Any copy of the passage: its words with whitespace flexible, each figure any
        short number or word (group `f{i}`), or for a name in `phrases` (figures whose
        value is a sentence) any text on one line; a table row only from a line's start."""
        parts: list[str] = []
        pos = 0
        for i, m in enumerate(_NAME.finditer(self.text)):
            parts.append(_literal(self.text[pos : m.start()]))
            if m.group(1) in phrases:
                parts.append(f"(?P<f{i}>{_ANY_PHRASE})")
            else:
                parts.append(f"(?P<f{i}>{_ANY_NUMBER}|{_ANY_WORD})(?!\\.\\d)")  # not mid-number
            pos = m.end()
        parts.append(_literal(self.text[pos:]))
        start = "(?m:^)" if self.text.startswith("|") else ""
        return re.compile(start + "".join(parts))


def _literal(text: str) -> str:
    if not text.strip():
        return r"\s+" if text else ""
    return r"\s+".join(re.escape(w) for w in re.split(r"\s+", text))


def load(root: Path = Path(".")) -> list[Passage]:
    """Every passage of every template under `root`/docs/templates, in file order."""
    passages: list[Passage] = []
    for file in sorted((root / TEMPLATES).glob("*.md")):
        rel = file.relative_to(root).as_posix()
        lines = file.read_text(encoding="utf-8").splitlines()
        head = _HEAD.fullmatch(lines[0]) if lines else None
        if head is None:
            raise EnvGenError(f"{rel}: its first line must be '# Passages of PATH' (the doc)")
        opened: int | None = None
        for i, line in enumerate(lines):
            if line != FENCE:
                continue
            if opened is None:
                opened = i
                continue
            text = "\n".join(lines[opened + 1 : i])
            if not _NAME.search(text) or text[0] == "{" or text[-1] == "}":
                raise EnvGenError(
                    f"{rel} line {opened + 2}: a passage starts and ends with words and "
                    "quotes at least one {figure}"
                )
            passages.append(Passage(head.group(1), f"{rel} line {opened + 2}", text))
            opened = None
        if opened is not None:
            raise EnvGenError(f"{rel} line {opened + 1}: a passage's {FENCE} is never closed")
    return passages


@dataclasses.dataclass(frozen=True)
class Problem:
    """One failed check: where and what."""

    path: str
    line: int | None
    what: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path} line {self.line}"
        return f"{where}: {self.what}"


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def check(
    passages: Sequence[Passage],
    values: Mapping[str, str],
    root: Path = Path("."),
    write: bool = False,
    source: Mapping[str, str] | None = None,
) -> tuple[list[Problem], dict[str, list[tuple[int, int]]]]:
    """Every copy of every passage against the passage filled with `values`, byte for
    byte; (problems, the copies' spans by doc). `source` names where a figure comes from
    ({name prefix: what}, for the messages). With `write`, each differing copy is
    replaced by the filled passage."""
    problems: list[Problem] = []
    covered: dict[str, list[tuple[int, int]]] = {}
    texts: dict[str, str | None] = {}
    edits: dict[str, list[tuple[int, int, str]]] = {}
    for passage in passages:
        path, names = passage.doc, passage.names
        if path not in texts:
            file = root / path
            texts[path] = file.read_text(encoding="utf-8") if file.is_file() else None
            if texts[path] is None:
                problems.append(Problem(path, None, f"missing ({passage.template} quotes it)"))
        text = texts[path]
        unknown = [n for n in names if n not in values]
        if unknown:
            what = f"{unknown[0]}: the runs give no such figure"
            problems.append(Problem(passage.template, None, what))
        if unknown or text is None:
            continue
        filled = passage.fill(values)
        copies = list(passage.pattern(passage.phrases(values)).finditer(text))
        if not copies:
            what = f"passage of {passage.template} not found ({passage.text[:60]!r}...)"
            problems.append(Problem(path, None, f"{what}: word the doc and its template alike"))
        for copy in copies:  # every copy: a wrong one after a right one is still wrong
            if text.startswith(filled, copy.start()):  # (the loose match may stop short)
                covered.setdefault(path, []).append((copy.start(), copy.start() + len(filled)))
                continue
            covered.setdefault(path, []).append(copy.span())
            edits.setdefault(path, []).append((*copy.span(), filled))
            read = [" ".join(copy[f"f{i}"].split()) for i in range(len(names))]  # spaces as one
            wrong = [(i, n) for i, n in enumerate(names) if read[i] != values[n]]
            for i, name in wrong:
                where = (source or {}).get(name.rsplit(".", 1)[0], "")
                what = f"{name}{where} reads {copy[f'f{i}']!r}, the runs give {values[name]!r}"
                problems.append(Problem(path, line_of(text, copy.start(f"f{i}")), what))
            if not wrong:
                what = f"differs from its template ({passage.template}) in line breaks or spaces"
                problems.append(Problem(path, line_of(text, copy.start()), what))
    for path, changes in edits.items() if write else ():
        text = texts[path] or ""
        for start, end, value in sorted(changes, reverse=True):
            text = text[:start] + value + text[end:]
        (root / path).write_text(text, encoding="utf-8")
    return problems, covered


def copies_outside(
    guarded: Mapping[str, str], files: Sequence[Path], root: Path, covered: Mapping[str, list]
) -> list[Problem]:
    """Each decimal of a `guarded` figure ({name: value}) in `files` outside every
    covered span: a copy of a headline figure no check covers."""
    tokens = {t: name for name, value in guarded.items() for t in _DECIMAL.findall(value)}
    problems = []
    for file in files:
        rel = file.relative_to(root).as_posix()
        text = file.read_text(encoding="utf-8")
        spans = covered.get(rel, [])
        for m in re.finditer(rf"(?<![\d.]){_DECIMAL.pattern}(?![\d])", text):
            name = tokens.get(m.group())
            if name and not any(a <= m.start() < b for a, b in spans):
                what = (
                    f"{m.group()} ({name}) is a copy no check covers: quote it in a "
                    f"passage of {TEMPLATES}/ or point at results/CLAIMS.md"
                )
                problems.append(Problem(rel, line_of(text, m.start()), what))
    return problems
