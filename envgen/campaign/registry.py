"""Which campaigns exist, and what one session of a campaign is asked to do.

A campaign is one replication file under one profile, collected into its own
`results/campaign_<name>/`. Its state on this machine (log, pid file, lock) lives under
`STATE_DIR`, which is git-ignored.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from envgen.errors import ConfigError
from envgen.llm.server import SERVER_VARIABLE

STATE_DIR = Path(".envgen/campaigns")
PROCESS_MARK = "envgen.campaign.cli"  # in the command line of a campaign process


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """What one foreground campaign session does."""

    campaign: str
    """The campaign's name (`CAMPAIGNS`)."""
    table: Path
    """Its replication file."""
    profile: str
    """The profile it runs under."""
    params: Path
    """params.yaml."""
    runs_root: Path
    """The run store."""
    workers: int | None
    """Runs at once; None = params.yaml's `execution.workers`."""
    commit: bool
    """Commit each finished run."""
    seeds: tuple[int, ...] | None = None
    """The campaign's own seeds in place of the profile's (`Campaign.seeds`)."""
    local_model: str | None = None
    """Fill missing LLM replies from this local model's server (`Campaign.local_model`);
    None: replay the committed cache only."""


@dataclasses.dataclass(frozen=True)
class Campaign:
    """One campaign: which table, under which profile, collected where."""

    name: str
    """Its name on the command line."""
    table: Path
    """The replication file whose rows it trains."""
    profile: str
    """The params.yaml profile it runs under."""
    out_dir: Path
    """Where `collect` writes runs.json, metrics.json and scores.json."""
    seeds: tuple[int, ...] | None = None
    """The campaign's own seeds, replacing the profile's (a registered campaign fixes its
    fresh seeds here, so its rows keep the profile's run configs, hence their run
    directories); None: the profile's seeds."""
    registration: str | None = None
    """The document that registered the campaign before its runs (its verdict is withheld
    until every planned run is in); None for a campaign not registered."""
    local_model: str | None = None
    """A local LLM (`envgen.llm.local_models`) whose replies the campaign records as its
    runs ask (fill mode): each reply is recorded once, in data/llm_cache, and replays
    from there; None: its runs replay the committed cache only."""
    local_server: str | None = None
    """The local server (`envgen.llm.server.SERVERS`) its registration recorded with,
    fixed for every session (`environment`), so that its arm never mixes samplers; None:
    the default server, or `ENVGEN_LOCAL_SERVER` as set."""

    def environment(self) -> dict[str, str]:
        """The variables every session of the campaign runs with: the local server's
        choice (`envgen.llm.server.SERVER_VARIABLE`), when its registration fixed one.
        An environment variable, not a run-config field: no run's hash changes."""
        return {SERVER_VARIABLE: self.local_server} if self.local_server else {}

    def request(
        self, params: Path, runs_root: Path, workers: int | None = None, commit: bool = True
    ) -> RunRequest:
        """The `RunRequest` of one session of this campaign (its table, profile, seeds)."""
        return RunRequest(
            self.name,
            self.table,
            self.profile,
            params,
            runs_root,
            workers,
            commit,
            self.seeds,
            self.local_model,
        )

    @property
    def log(self) -> Path:
        return STATE_DIR / f"{self.name}.log"

    @property
    def pid_file(self) -> Path:
        """Line 1: the campaign process's pid (its session and group id); line 2: workers."""
        return STATE_DIR / f"{self.name}.pid"

    @property
    def lock_file(self) -> Path:
        """Held (flock, exclusive) by the campaign process for as long as it lives."""
        return STATE_DIR / f"{self.name}.lock"


# Seeds of the confirmatory campaign registered in docs/campaign_confirm.md: 15 fresh
# seeds per arm, after campaign_cpu's 0-4. Fixed by the registration: never edit.
CONFIRM_SEEDS = tuple(range(5, 20))
# Seeds of the campaign registered in docs/campaign_llm15.md: 16 fresh seeds per arm,
# after the confirm campaign's. Fixed by the registration: never edit.
LLM15_SEEDS = tuple(range(20, 36))
# Seeds of the campaign registered in docs/campaign_sfl.md: 20 fresh seeds per arm, after
# llm15's. Fixed by the registration: never edit.
SFL_SEEDS = tuple(range(36, 56))
# Seeds of the campaign registered in docs/campaign_headline.md: 16 fresh seeds per arm,
# after sfl's. Fixed by the registration: never edit.
HEADLINE_SEEDS = tuple(range(56, 72))

CAMPAIGNS: dict[str, Campaign] = {
    "cpu": Campaign(
        "cpu", Path("replication/campaign_cpu.yaml"), "cpu", Path("results/campaign_cpu")
    ),
    "confirm": Campaign(
        "confirm",
        Path("replication/campaign_confirm.yaml"),
        "cpu",
        Path("results/campaign_confirm"),
        CONFIRM_SEEDS,
        "docs/campaign_confirm.md",
    ),
    "llm15": Campaign(
        "llm15",
        Path("replication/campaign_llm15.yaml"),
        "cpu",
        Path("results/campaign_llm15"),
        LLM15_SEEDS,
        "docs/campaign_llm15.md",
        local_model="qwen2.5-coder-1.5b-instruct",
    ),
    "sfl": Campaign(
        "sfl",
        Path("replication/campaign_sfl.yaml"),
        "cpu",
        Path("results/campaign_sfl"),
        SFL_SEEDS,
        "docs/campaign_sfl.md",
    ),
    "headline": Campaign(
        "headline",
        Path("replication/campaign_headline.yaml"),
        "cpu",
        Path("results/campaign_headline"),
        HEADLINE_SEEDS,
        "docs/campaign_headline.md",
        local_model="qwen2.5-coder-1.5b-instruct",
        # registered and recording before the default server changed (its Deviations)
        local_server="llama-cpp-python",
    ),
}


def campaign(name: str) -> Campaign:
    """The registered campaign called `name`; a `ConfigError` listing them otherwise."""
    if name not in CAMPAIGNS:
        raise ConfigError("campaign", f"{name!r} is unknown; choose one of {', '.join(CAMPAIGNS)}")
    return CAMPAIGNS[name]
