"""The Random row: same seed, same episodes (stock Crafter made deterministic)."""

import json

from envgen.pipeline.random_policy import play_random


def test_random_policy_is_deterministic(tmp_path):
    logs = []
    for name in ("a", "b"):
        run_dir = play_random(2, 5, tmp_path / name)
        logs.append((run_dir / "episodes.jsonl").read_text())
        metrics = json.loads((run_dir / "final_metrics.json").read_text())
        assert metrics["episodes"] == 2 and metrics["method"] == "random"
    assert logs[0] == logs[1]
