"""Which campaigns exist, and what one session of a campaign is asked to do.

A campaign is one replication file with a `campaign:` section (`envgen.stats.
campaign_spec`), collected into its own `results/campaign_<name>/`; its log, pid file
and lock on this machine live under the git-ignored `STATE_DIR`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from envgen.errors import ConfigError
from envgen.llm.server import SERVER_VARIABLE
from envgen.stats.campaign_spec import CampaignSpec, specs

STATE_DIR = Path(".envgen/campaigns")
PROCESS_MARK = "envgen.campaign.cli"  # in the command line of a campaign process


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """What one foreground campaign session does."""

    campaign: str
    """The campaign's name (`campaigns`)."""
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
class Campaign(CampaignSpec):
    """A declared campaign (`CampaignSpec`, its replication file's `campaign:` section)
    and the files of its process on this machine."""

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


def campaigns() -> dict[str, Campaign]:
    """{name: campaign} of every campaign declared in ./replication (`specs`), in order."""
    fields = [f.name for f in dataclasses.fields(CampaignSpec)]
    return {n: Campaign(**{f: getattr(s, f) for f in fields}) for n, s in specs().items()}


def campaign(name: str) -> Campaign:
    """The declared campaign called `name`; a `ConfigError` listing them otherwise."""
    declared = campaigns()
    if name not in declared:
        raise ConfigError("campaign", f"{name!r} is unknown; choose one of {', '.join(declared)}")
    return declared[name]
