"""What a campaign declares: the `campaign:` section of its replication file.

`replication/campaign_<name>.yaml` lists a campaign's rows and, under `campaign:`, its
profile, seeds, registration, claims, verdict words and report analyses; the registry,
CLAIMS.md's section, the evidence checks and dvc.yaml's campaign lists all read it here
(docs/pipeline.md, "Add a campaign"). The verdict words live here, not in the
registrations (those are frozen above their "Deviations"); `envgen verify` checks that
each declared phrase is written in the registration (`missing_words`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError
from envgen.input_checks import read_yaml_mapping


@dataclasses.dataclass(frozen=True)
class CampaignClaim:
    """a beats b on the score, with the paper's pair that gives it context (if one applies)."""

    name: str
    """The claim in words."""
    a: str
    """Row label (the campaign's replication file) of the arm claimed higher."""
    b: str
    """Row label of the arm it is compared with."""
    paper: tuple[str, str] | None = None
    """The paper's (a, b) labels whose difference is shown beside ours, as context; None
    where no paper pair applies (no paper difference, scaled gain or power then)."""
    better: str = "EnvGen schedule better"
    """The verdict when a beats b."""
    metric: str = "score"
    """"score", or "success_rate:<achievement>" (% of final-phase episodes)."""


@dataclasses.dataclass(frozen=True)
class Family:
    """Claims tested together, Bonferroni within the family."""

    heading: str
    """CLAIMS.md's heading of the family."""
    claims: tuple[CampaignClaim, ...]
    registered: bool = False
    """Registered (its campaign names a registration) before any of its runs: no verdict,
    difference, bound or p until every planned run of its arms is in ("registered verdict
    withheld: k of n runs")."""
    post_hoc: str = ""
    """When, relative to the runs, and why the family was added after runs had been
    seen; "" for a family fixed before the campaign's runs."""


@dataclasses.dataclass(frozen=True)
class Registration:
    """A registered campaign's document and the words its "Verdicts" fixed."""

    document: str
    """The registration, committed before any of the campaign's runs."""
    primary: CampaignClaim
    """H1, the claim whose verdict is the campaign's answer."""
    subject: str
    """What arm a is, as the verdict sentences name it."""
    against: str
    """What arm b is, as they name it."""
    runs: str
    """The run counts' words ({a}, {b}: the arms' runs), in the better verdict."""
    coda: str
    """The better verdict's closing sentence ({rate}: the outcome)."""
    paper_references: tuple[tuple[str, str, str], ...] = ()
    """(words, paper row a, paper row b): the paper's differences a no-difference verdict
    says it rules out or not (none: the report's own, as confirm registered them)."""
    runs_otherwise: str = ""
    """The run counts' words in the worse and no-difference verdicts ("": as `runs`)."""
    after_better: tuple[str, ...] = ()
    """The words of the `paper_references` a better verdict also says it rules out or not,
    so that a gain smaller than the paper's is said (headline's "Verdicts")."""


REPLICATION = Path("replication")
PREFIX = "campaign_"
ANALYSES = tuple(
    "baseline pooled per_achievement beside trained_worlds budget designer_worlds".split()
)
"""The report's analyses a campaign may list (`envgen.report.campaign_section.ANALYSES`)."""


@dataclasses.dataclass(frozen=True)
class CampaignSpec:
    """One campaign as its replication file declares it (its `campaign:` keys are these
    fields but `name` and `table`)."""

    name: str
    """Its name on the command line (the file is replication/campaign_<name>.yaml)."""
    table: Path
    """Its replication file."""
    profile: str
    """The params.yaml profile its runs train under."""
    families: tuple[Family, ...]
    """Its claims, Bonferroni within each family; the first claim is its primary."""
    order: int = 0
    """Its place among the campaigns (the registry's, dvc.yaml's, CLAIMS.md's)."""
    seeds: tuple[int, ...] | None = None
    """Its own seeds in place of the profile's (a registered campaign's fresh seeds: its rows
    keep the profile's run configs, hence their run directories); None: the profile's."""
    registration: str | None = None
    """Its registration document (committed before any of its runs); None: not registered."""
    verdict: Registration | None = None
    """A registered campaign's verdict words (`Registration`)."""
    local_model: str | None = None
    """A local LLM (`envgen.llm.local_models`) whose replies its runs record as they ask
    (fill mode: each recorded once, in data/llm_cache); None: they replay the cache only."""
    local_server: str | None = None
    """The local server (`envgen.llm.server.SERVERS`) its registration recorded with, fixed
    for every session (`Campaign.environment`) so that its arm never mixes samplers; None:
    the default server, or `ENVGEN_LOCAL_SERVER` as set."""
    report: bool = True
    """Whether its collect stage, tables, figures and CLAIMS.md section are in the pipeline
    (dvc.yaml); a registered campaign joins when its last run is in."""
    what: str = ""
    """CLAIMS.md's heading words for it ("": its caption)."""
    machine_note: str = ""
    """What is known of its machines beyond provenance."""
    rliable_when: str = ""
    """When rliable's views of it were chosen, relative to its data."""
    pooled_with: str | None = None
    """The table whose runs of the same configs its `pooled` analysis pools with."""
    analyses: tuple[tuple[str, Any], ...] = ()
    """(analysis, its argument or None), in CLAIMS.md's order, shown after the claims of a
    registered campaign."""

    @property
    def table_id(self) -> str:
        return PREFIX + self.name

    @property
    def out_dir(self) -> Path:
        """Where `envgen campaign collect` writes its runs.json, metrics and scores."""
        return Path("results") / self.table_id


def specs(directory: Path = REPLICATION) -> dict[str, CampaignSpec]:
    """{name: spec} of every campaign declared in `directory`, by `order`; a relative
    `directory` is looked for in the working directory, then its parents (a command typed
    in a subdirectory of the repository finds its campaigns), then the checkout this
    package is imported from."""
    here, checkout = Path.cwd(), Path(__file__).resolve().parents[2]
    places = (here, *here.parents, checkout)
    found = next((d / directory for d in places if (d / directory).is_dir()), None)
    return dict(_specs(found)) if found else {}


@functools.lru_cache(maxsize=8)
def _specs(directory: Path) -> tuple[tuple[str, CampaignSpec], ...]:
    """The declarations in `directory`, read once per process."""
    found = [_read(path) for path in sorted(directory.glob(f"{PREFIX}*.yaml"))]
    return tuple((s.name, s) for s in sorted((s for s in found if s), key=lambda s: s.order))


def by_table(table_id: str, directory: Path = REPLICATION) -> CampaignSpec | None:
    """The campaign whose table is `table_id`, or None (a paper table, an unknown id)."""
    name = table_id.removeprefix(PREFIX)
    return specs(directory).get(name) if name != table_id else None


def families(table_id: str) -> tuple[Family, ...]:
    """The claim families of table `table_id` (none for a table no campaign declares)."""
    spec = by_table(table_id)
    return spec.families if spec else ()


def words(table_id: str) -> Registration | None:
    """The registered verdict words of table `table_id`, or None when not registered."""
    spec = by_table(table_id)
    return spec.verdict if spec else None


def primary(table_id: str) -> CampaignClaim:
    """A campaign's primary claim: the first it declares."""
    return families(table_id)[0].claims[0]


def missing_words(spec: CampaignSpec, registration_text: str) -> str | None:
    """The first declared verdict phrase that the registration's text does not hold
    (whitespace aside; a `{placeholder}` matches anything), or None."""
    w = spec.verdict
    flat = " ".join(registration_text.split())
    for phrase in (w.subject, w.against, w.runs, w.coda, w.runs_otherwise) if w else ():
        parts = [re.escape(" ".join(p.split())) for p in re.split(r"\{\w+\}", phrase)]
        if not re.search(".*?".join(parts), flat):
            return phrase
    return None


def _read(path: Path) -> CampaignSpec | None:
    """The campaign declared in replication file `path`; None if it declares none. Each
    mapping is splatted into its dataclass, so a misspelt or missing key fails, naming
    the file and the key."""
    data = read_yaml_mapping(path, "a replication table (table:, rows:)")
    if "campaign" not in data:
        return None
    try:
        if data.get("table") != path.stem:
            raise ConfigError("table", f"must be {path.stem!r}, the campaign file's name")
        s = _keys(CampaignSpec, data["campaign"], "campaign", "name table")
        seeds = s.get("seeds")
        if seeds is not None and not (seeds and all(isinstance(k, int) for k in seeds)):
            raise ConfigError("campaign.seeds", "must be a list of integer seeds")
        registered = s.get("registration") is not None
        fams = tuple(_family(f, f"campaign.families[{i}]", registered)
                     for i, f in enumerate(s.get("families") or ()))  # fmt: skip
        if not fams or not fams[0].claims or registered != ("verdict" in s):
            raise ConfigError("campaign", "needs a claim; a registration needs a verdict")
        return _make(
            CampaignSpec,
            s,
            "campaign",
            "name table",
            name=path.stem.removeprefix(PREFIX),
            table=REPLICATION / path.name,
            families=fams,
            seeds=tuple(seeds) if seeds is not None else None,
            analyses=tuple(_analysis(a) for a in s.get("analyses") or ()),
            verdict=_verdict(s["verdict"], s["registration"], fams[0]) if registered else None,
        )
    except ConfigError as exc:
        raise exc.in_file(path) from None


def _mapping(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(where, "must be a mapping")
    return value


def _keys(cls: type, value: object, where: str, derived: str = "") -> dict[str, Any]:
    """`value`, a mapping of `cls`'s fields but the `derived` ones (which follow from the
    file, never set); else a ConfigError naming the first other key."""
    keys = {f.name for f in dataclasses.fields(cls)} - set(derived.split())
    unknown = sorted(set(_mapping(value, where)) - keys)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}", f"unknown; allowed: {', '.join(sorted(keys))}")
    return value  # type: ignore[return-value]


def _make(cls: type, value: object, where: str, derived: str = "", **parsed: Any) -> Any:
    """`cls(**value)` (`_keys`) with `parsed` in place of raw values."""
    value = _keys(cls, value, where, derived)
    try:
        return cls(**{**value, **parsed})
    except TypeError as exc:  # a required key missing
        raise ConfigError(where, str(exc).replace("__init__() ", "")) from None


def _verdict(value: object, document: str, first: Family) -> Registration:
    """The registration's words (`campaign.verdict`), its H1 the first family's first claim."""
    refs = _paper_references(_mapping(value, "campaign.verdict").get("paper_references"))
    return _make(
        Registration, value, "campaign.verdict", "document primary", document=document,
        primary=first.claims[0], paper_references=refs,
        after_better=_after_better(_mapping(value, "campaign.verdict").get("after_better"), refs),
    )  # fmt: skip


def _paper_references(value: object) -> tuple[tuple[str, str, str], ...]:
    """`paper_references`: [words, paper row a, paper row b] lists; else one line."""
    refs = value or []
    if not isinstance(refs, list) or not all(
        isinstance(r, list) and len(r) == 3 and all(isinstance(x, str) for x in r) for r in refs
    ):
        what = "must be a list of [words, paper row a, paper row b]"
        raise ConfigError("campaign.verdict.paper_references", what)
    return tuple((a, b, c) for a, b, c in refs)


def _after_better(value: object, refs: tuple[tuple[str, str, str], ...]) -> tuple[str, ...]:
    """`after_better`: a list of `paper_references`' words; one line naming the first that
    is none of them (a typo would silently drop the clause the registration asks for)."""
    where = "campaign.verdict.after_better"
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(where, "must be a list of paper_references' words")
    named = [r[0] for r in refs]
    unknown = [v for v in value if v not in named]
    if unknown:
        allowed = "; ".join(named) or "none declared"
        raise ConfigError(
            where, f"{unknown[0]!r} names none of paper_references (allowed: {allowed})"
        )
    return tuple(value)


def _family(value: object, where: str, registered: bool) -> Family:
    f = _mapping(value, where)
    claims = tuple(
        _make(CampaignClaim, c, f"{where}.claims[{j}]",
              **({"paper": tuple(c["paper"])} if isinstance(c, dict) and c.get("paper") else {}))
        for j, c in enumerate(f.get("claims") or ())
    )  # fmt: skip
    return _make(Family, f, where, "registered", claims=claims, registered=registered)


ANALYSIS_OPTIONS = {
    "per_achievement": ("heading", "named", "named_as"),
    "beside": ("heading", "rows_of", "arms", "crafter_only", "crafter_only_of", "machines"),
}
"""The options of an analysis whose argument may be a mapping (docs/pipeline.md, "Add a
campaign"); per_achievement's may also be its heading alone."""


def _analysis(value: object) -> tuple[str, Any]:
    name, arg = next(iter(value.items())) if isinstance(value, dict) else (value, None)
    if name not in ANALYSES:
        raise ConfigError("campaign.analyses", f"{name!r}: choose from {', '.join(ANALYSES)}")
    if name == "per_achievement" and not arg:
        raise ConfigError("campaign.analyses", "per_achievement: give its heading")
    unknown = set(arg) - set(ANALYSIS_OPTIONS.get(name, ())) if isinstance(arg, dict) else ()
    if unknown:
        raise ConfigError(
            f"campaign.analyses.{name}",
            f"unknown option(s) {', '.join(sorted(unknown))}: "
            f"choose from {', '.join(ANALYSIS_OPTIONS.get(name, ())) or 'none'}",
        )
    return str(name), arg
