"""The Random row: same seed, same episodes (stock Crafter made deterministic)."""

import json

from envgen.pipeline.random_policy import play_random
from envgen.store import read_run_bytes, verify_run


def test_random_policy_is_deterministic(tmp_path):
    logs = []
    for name in ("a", "b"):
        run_dir = play_random(2, 5, tmp_path / name)
        logs.append(read_run_bytes(run_dir / "episodes.jsonl"))  # sealed: the .gz, checked
        metrics = json.loads((run_dir / "final_metrics.json").read_text())
        assert metrics["episodes"] == 2 and metrics["method"] == "random"
        assert verify_run(run_dir) == 3  # episodes, final metrics, provenance
    assert logs[0] == logs[1]
