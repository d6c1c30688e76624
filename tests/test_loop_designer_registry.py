"""A designer is one class and one entry of `envgen.loop.world_designers.DESIGNERS`: a
toy designer defined here, registered by one line, runs the loop at the smallest scale
with no other module touched."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from envgen.errors import ConfigError
from envgen.llm.conversation import PromptOptions
from envgen.llm.parse import parse_environments
from envgen.loop.config import RunConfig
from envgen.loop.runner import execute_run
from envgen.loop.world_designers import DESIGNERS, DesignerKind
from tests.test_loop import TINY, TINY_PPO


class ToyDesigner:
    """Writes n grassland worlds with as much wood in hand as calls so far."""

    def __init__(self, options: PromptOptions, seed: int) -> None:
        self.options, self.messages, self.results, self.n = options, [], [], 0

    def _write(self) -> Any:
        world = {
            "purpose": "toy",
            "environment_settings": {"target_biome": "grassland"},
            "inventory_settings": {"wood": len(self.results) + 1},
        }
        reply = json.dumps({"environments": [world] * self.n})
        self.results.append(parse_environments(reply, self.n))
        return self.results[-1]

    def generate(self, n: int) -> Any:
        self.n = n
        return self._write()

    def adapt(self, success_stats: Mapping[str, tuple[float, float]]) -> Any:
        return self._write()

    def cycle_record(self) -> dict[str, Any]:
        return {"toy": {"calls": len(self.results)}}


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(DESIGNERS, "toy", DesignerKind(ToyDesigner))  # the one line


def test_an_unregistered_designer_is_refused_naming_the_registered_ones():
    with pytest.raises(ConfigError, match="'toy'; allowed: llm, random, heuristic, sfl, plr"):
        RunConfig(designer="toy")


@pytest.mark.slow
def test_a_designer_defined_in_a_test_runs_the_loop(toy: None, tmp_path):
    config = TINY.replace(
        designer="toy",
        method="fixed",
        n_cycles=1,
        final_steps=TINY_PPO["num_envs"] * 128,
        ppo={**TINY_PPO, "epochs": 1},
    )
    assert not config.uses_llm and config.curation_steps == 0
    root = execute_run(config, 0, tmp_path / "runs", llm=None)
    written = json.loads((root / "cycles/cycle-01/environments.json").read_text())
    assert written["toy"] == {"calls": 1}
    assert written["configs"] == [
        c.to_dict() for c in ToyDesigner(PromptOptions(), 0).generate(config.envs_per_call).configs
    ]
    metrics = json.loads((root / "final_metrics.json").read_text())
    assert metrics["method"] == "fixed" and metrics["llm_calls"] == 0
