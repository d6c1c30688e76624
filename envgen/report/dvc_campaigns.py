"""dvc.yaml's campaign lists, written from the campaigns' declarations.

DVC reads no replication file, so what it needs of each campaign in the pipeline
(`CampaignSpec.report`) is written into dvc.yaml between `# campaigns (generated ...)`
and `# end campaigns`: the `campaigns` var ({name: profile}, the collect stage's
`foreach`) with `campaign_runs`, each report stage's runs.json deps, and each campaign's
figures (`FIGURES`) as image plots. `python -m envgen.report.dvc_campaigns` rewrites
them; tests/test_dvc_conveniences.py checks dvc.yaml is what it would write.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from envgen.stats.campaign_spec import CampaignSpec, specs

BLOCK = re.compile(r"^( *)# campaigns \(generated.*?\n(.*?)^ *# end campaigns\n", re.M | re.S)
FIGURES = ("per_achievement", "rliable", "scores", "score_vs_step")
"""The figures `envgen.report.figures.write_figures` draws of each campaign table."""


def _lines(indent: str, old: str, campaigns: list[CampaignSpec]) -> list[str]:
    """A block's new lines, by what its old lines held (the var, deps or plots)."""
    runs = [f"results/{c.table_id}/runs.json" for c in campaigns]
    if old.lstrip().startswith("campaigns:"):
        pairs = ", ".join(f"{c.name}: {c.profile}" for c in campaigns)
        wrapped = re.findall(r"\S.{0,80}(?= |$)", " ".join(runs))  # lines under 90 characters
        return [f"campaigns: {{{pairs}}}", "campaign_runs: >-", *(f"  {w}" for w in wrapped)]
    if "paper_figures/" in old:
        return [f"- paper_figures/{f}_{c.table_id}.png" for c in campaigns for f in FIGURES]
    return [f"- {r}" for r in runs]


def regenerate(text: str, directory: Path = Path("replication")) -> str:
    """`text` (dvc.yaml) with each campaign block rewritten from the declarations in
    `directory`."""
    campaigns = [c for c in specs(directory).values() if c.report]

    def block(match: re.Match) -> str:
        indent, head = match.group(1), match.group(0).splitlines()[0]
        body = "".join(f"{indent}{line}\n" for line in _lines(indent, match.group(2), campaigns))
        return f"{head}\n{body}{indent}# end campaigns\n"

    return BLOCK.sub(block, text)


if __name__ == "__main__":  # rewrite dvc.yaml (or the file given) in place
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "dvc.yaml")
    text = path.read_text(encoding="utf-8")
    path.write_text(regenerate(text), encoding="utf-8")
    print(f"{path}: {'rewritten' if regenerate(text) != text else 'already up to date'}")
