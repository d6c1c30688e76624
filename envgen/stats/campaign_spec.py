"""What a campaign declares: the `campaign:` section of its replication file.

A campaign is data, not code: `replication/campaign_<name>.yaml` lists its rows (as every
replication file does) and, under `campaign:`, its profile, seeds, registration,
claims, verdict words and the report's analyses of it. The run registry
(`envgen.campaign.registry`), the claims and CLAIMS.md's section (`envgen.report`), the
evidence checks and the test that keeps dvc.yaml's campaign lists in step all read it
from here, so adding a campaign is that file (and, for a registered one, its
registration document, docs/campaign_<name>.md), with no Python (docs/pipeline.md,
"Add a campaign").

The words live in the replication file, not in a block of the registration: the
registrations committed before this format are frozen above their "Deviations"
(`envgen.evidence.history`), and one place for every campaign's words beats two.
`envgen verify` checks instead that each verdict phrase declared here is written in
the registration above its Deviations (`missing_words`), so the declaration cannot
drift from what was registered.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envgen.errors import ConfigError
from envgen.input_checks import read_yaml_mapping
from envgen.stats.campaign_claims import CampaignClaim, Family, Registration

REPLICATION = Path("replication")
PREFIX = "campaign_"
ANALYSES = tuple(
    "baseline pooled per_achievement beside trained_worlds budget designer_worlds".split()
)
"""The report's analyses a campaign may list (`envgen.report.campaign_section.ANALYSES`)."""
KEYS = set(
    "order profile seeds registration local_model report what machine_note rliable_when "
    "pooled_with analyses families verdict".split()
)
CLAIM_KEYS = {"name", "a", "b", "paper", "better", "metric"}
VERDICT_KEYS = {"subject", "against", "runs", "coda", "paper_references", "runs_otherwise"}


@dataclasses.dataclass(frozen=True)
class CampaignSpec:
    """One campaign as its replication file declares it."""

    name: str
    """Its name on the command line (the file is replication/campaign_<name>.yaml)."""
    order: int
    """Its place among the campaigns (the registry's, dvc.yaml's, CLAIMS.md's), then by name."""
    table: Path
    """Its replication file."""
    profile: str
    """The params.yaml profile its runs train under."""
    seeds: tuple[int, ...] | None
    """Its own seeds in place of the profile's (a registered campaign's fresh seeds);
    None: the profile's."""
    registration: str | None
    """Its registration document (committed before any of its runs); None: not registered."""
    local_model: str | None
    """A local LLM whose replies its runs record as they ask (fill mode); None: replay only."""
    report: bool
    """Whether its collect stage, tables, figures and CLAIMS.md section are in the pipeline
    (dvc.yaml); a registered campaign joins when its last run is in."""
    what: str
    """CLAIMS.md's heading words for it."""
    machine_note: str
    """What is known of its machines beyond provenance ("" for nothing)."""
    rliable_when: str
    """When rliable's views of it were chosen, relative to its data ("" unsaid)."""
    pooled_with: str | None
    """The table whose runs of the same configs its `pooled` analysis pools with."""
    analyses: tuple[tuple[str, Any], ...]
    """(analysis, its argument or None), in CLAIMS.md's order, shown after the claims of a
    registered campaign."""
    families: tuple[Family, ...]
    """Its claims, Bonferroni within each family."""
    words: Registration | None
    """A registered campaign's verdict words, its primary claim the first one declared."""

    @property
    def table_id(self) -> str:
        return PREFIX + self.name

    @property
    def out_dir(self) -> Path:
        """Where `envgen campaign collect` writes its runs.json, metrics and scores."""
        return Path("results") / self.table_id


def read_spec(path: Path) -> CampaignSpec | None:
    """The campaign declared in replication file `path`; None if it declares none."""
    data = read_yaml_mapping(path, "a replication table (table:, rows:)")
    section = data.get("campaign")
    if section is None:
        return None
    try:
        return _spec(path, data.get("table"), section)
    except ConfigError as exc:
        raise exc.in_file(path) from None


def specs(directory: Path = REPLICATION) -> dict[str, CampaignSpec]:
    """{name: spec} of every campaign declared in `directory`, by `order`; a relative
    `directory` is looked for in the working directory and then its parents (a command
    typed in a subdirectory of the repository finds its campaigns)."""
    here = Path.cwd()
    found = next((d / directory for d in (here, *here.parents) if (d / directory).is_dir()), None)
    return dict(_specs(found)) if found else {}


@functools.lru_cache(maxsize=8)
def _specs(directory: Path) -> tuple[tuple[str, CampaignSpec], ...]:
    found = (read_spec(p) for p in sorted(directory.glob(f"{PREFIX}*.yaml")))
    return tuple((s.name, s) for s in sorted((s for s in found if s), key=lambda s: s.order))


def by_table(table_id: str, directory: Path = REPLICATION) -> CampaignSpec | None:
    """The campaign whose table is `table_id`, or None (a paper table, an unknown id)."""
    return (
        specs(directory).get(table_id.removeprefix(PREFIX)) if table_id.startswith(PREFIX) else None
    )


def families(table_id: str) -> tuple[Family, ...]:
    """The claim families of table `table_id` (none for a table no campaign declares)."""
    spec = by_table(table_id)
    return spec.families if spec else ()


def words(table_id: str) -> Registration | None:
    """The registered verdict words of table `table_id`, or None when not registered."""
    spec = by_table(table_id)
    return spec.words if spec else None


def primary(table_id: str) -> CampaignClaim:
    """A campaign's primary claim: the first it declares."""
    return families(table_id)[0].claims[0]


def missing_words(spec: CampaignSpec, registration_text: str) -> str | None:
    """The first declared verdict phrase that the registration's text does not hold
    (whitespace aside; a `{placeholder}` matches anything), or None."""
    if spec.words is None:
        return None
    flat = " ".join(registration_text.split())
    w = spec.words
    for phrase in (w.subject, w.against, w.runs, w.coda, w.runs_otherwise):
        parts = [re.escape(" ".join(p.split())) for p in re.split(r"\{\w+\}", phrase)]
        if not re.search(".*?".join(parts), flat):
            return phrase
    return None


def _spec(path: Path, table: object, section: object) -> CampaignSpec:
    name = path.stem.removeprefix(PREFIX)
    if table != path.stem:
        raise ConfigError("table", f"must be {path.stem!r}, the campaign file's name")
    s = _mapping(section, "campaign", KEYS)
    if "profile" not in s or "families" not in s:
        raise ConfigError("campaign", "sets `profile` and `families`")
    if not isinstance(s.get("order", 0), int):
        raise ConfigError("campaign.order", "must be an integer")
    seeds = s.get("seeds")
    if seeds is not None and not (
        isinstance(seeds, list) and seeds and all(isinstance(k, int) for k in seeds)
    ):
        raise ConfigError("campaign.seeds", "must be a list of integer seeds")
    registration = s.get("registration")
    claim_words = s.get("verdict")
    if (registration is None) != (claim_words is None):
        raise ConfigError(
            "campaign", "a registered campaign sets both `registration` and `verdict`"
        )
    fams = tuple(_family(f, i, registration is not None) for i, f in enumerate(s["families"]))
    if not fams or not fams[0].claims:
        raise ConfigError("campaign.families", "must list at least one claim")
    return CampaignSpec(
        name=name,
        order=s.get("order", 0),
        table=REPLICATION / path.name,
        profile=str(s["profile"]),
        seeds=tuple(seeds) if seeds is not None else None,
        registration=registration,
        local_model=s.get("local_model"),
        report=bool(s.get("report", True)),
        what=str(s.get("what", "")),
        machine_note=str(s.get("machine_note", "")),
        rliable_when=str(s.get("rliable_when", "")),
        pooled_with=s.get("pooled_with"),
        analyses=tuple(_analysis(a) for a in s.get("analyses") or ()),
        families=fams,
        words=None if claim_words is None else _words(claim_words, registration, fams[0].claims[0]),
    )


def _mapping(value: object, where: str, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(where, "must be a mapping")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ConfigError(
            f"{where}.{unknown[0]}", f"unknown key; allowed: {', '.join(sorted(allowed))}"
        )
    return value


def _family(value: object, i: int, registered: bool) -> Family:
    f = _mapping(value, f"campaign.families[{i}]", {"heading", "claims", "post_hoc"})
    claims = tuple(
        _claim(c, f"campaign.families[{i}].claims[{j}]")
        for j, c in enumerate(f.get("claims") or ())
    )
    return Family(str(f.get("heading", "")), claims, registered, str(f.get("post_hoc", "")))


def _claim(value: object, where: str) -> CampaignClaim:
    c = _mapping(value, where, CLAIM_KEYS)
    missing = [k for k in ("name", "a", "b") if k not in c]
    if missing:
        raise ConfigError(f"{where}.{missing[0]}", "missing; a claim names itself and arms a, b")
    paper = c.get("paper")
    if paper is not None and not (isinstance(paper, list) and len(paper) == 2):
        raise ConfigError(f"{where}.paper", "must be the paper's [a, b] row labels")
    extra = {k: str(c[k]) for k in ("better", "metric") if k in c}
    return CampaignClaim(
        str(c["name"]), str(c["a"]), str(c["b"]), tuple(paper) if paper else None, **extra
    )


def _words(value: object, document: str, primary_claim: CampaignClaim) -> Registration:
    v = _mapping(value, "campaign.verdict", VERDICT_KEYS)
    missing = [k for k in ("subject", "against", "runs", "coda") if k not in v]
    if missing:
        raise ConfigError(f"campaign.verdict.{missing[0]}", "missing")
    refs = tuple(tuple(map(str, r)) for r in v.get("paper_references") or ())
    if any(len(r) != 3 for r in refs):
        raise ConfigError("campaign.verdict.paper_references", "each is [words, paper a, paper b]")
    return Registration(
        document, primary_claim, str(v["subject"]), str(v["against"]), str(v["runs"]),
        str(v["coda"]), refs, str(v.get("runs_otherwise", "")),
    )  # fmt: skip


def _analysis(value: object) -> tuple[str, Any]:
    name, arg = (next(iter(value.items())) if isinstance(value, dict) and len(value) == 1
                 else (value, None))  # fmt: skip
    if name not in ANALYSES:
        raise ConfigError(
            "campaign.analyses", f"{name!r} is unknown; choose from {', '.join(ANALYSES)}"
        )
    return str(name), arg
