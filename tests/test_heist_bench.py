"""`envgen bench heist` at a tiny size: runs both sides and prints the JSON last."""

import json

from envgen.cli import main


def test_bench_heist_cli_prints_json_last(capsys):
    assert main(["bench", "heist", "--num-envs", "4", "--steps", "40", "--chunk", "20"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result) >= {"ours_sps", "stock_sps", "ratio"}
    assert result["ours_sps"] > 0 and result["stock_sps"] > 0
