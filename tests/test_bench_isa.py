"""`envgen bench isa` runs both CPU paths in their own processes and prints the ratio."""

import json
import subprocess
import sys


def test_bench_isa_prints_both_sides_and_the_ratio():
    done = subprocess.run(
        [sys.executable, "-m", "envgen.cli", "bench", "isa", "--seconds", "0.3", "--rounds", "1"]
        + ["--batch", "16"],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ours_sps"] > 0 and result["pinned_sps"] > 0 and result["ratio"] > 0
    assert isinstance(result["outputs_equal"], bool)
