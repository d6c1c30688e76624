"""`envgen bench env` at a tiny budget: runs both envs and ends with its JSON line."""

from __future__ import annotations

import json

from envgen.cli import main


def test_bench_env_prints_json_last(capsys) -> None:
    assert main(["bench", "env", "--seconds", "0.2", "--workers", "2", "--starts", "1"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    result = json.loads(out[-1])
    for key in ("ours_sps", "stock_sps", "ratio", "vec_sps", "vec_sps_1_worker"):
        assert result[key] > 0, key
    assert result["start_first_s_cold"] > 0 and result["start_first_s_preloaded"] > 0
    assert "vector env start, cold: first" in "\n".join(out)
