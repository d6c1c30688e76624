"""A profile asking for more runs per row than any plan could train is one line.

200,000 seeds in params.yaml kept the params stage planning the replication files past
120 s; it now refuses them at once, naming the field.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from envgen.pipeline.params_stage import main

REPO = Path(__file__).resolve().parents[1]
CAP = 1_000  # envgen.pipeline.params_stage.MAX_RUNS_PER_ROW
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _params(tmp_path: Path, seeds: list[int], game: str | None = None) -> Path:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    profile = params["profiles"][params["profile"]]
    (profile["games"][game] if game else profile)["seeds"] = seeds
    path = tmp_path / "params.yaml"
    path.write_text(yaml.dump(params, Dumper=DUMPER, default_flow_style=True))
    return path


def test_200k_seeds_are_one_line(tmp_path, capsys):
    path = _params(tmp_path, list(range(200_000)))
    assert main([str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert f"{path}: profiles.smoke.seeds: 200,000 seeds x 1 initial sets" in err
    assert f"more than {CAP:,}" in err


def test_a_game_section_is_capped_too_and_the_committed_params_pass(tmp_path, capsys):
    path = _params(tmp_path, list(range(CAP + 1)), game="heist")
    assert main([str(path)]) == 1
    assert "profiles.smoke.games.heist.seeds: 1,001 seeds" in capsys.readouterr().err
    assert main([str(REPO / "params.yaml")]) == 0
