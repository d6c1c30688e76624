"""docs/llm.md, "Your own model", followed step by step (issue 66, item 2): a run pointed
at a model behind an OpenAI-compatible server records every reply it needs (first and
adaptation calls) in one command, and the same run then replays offline from that cache
with no server and no URL, writing the same logs.

The server is a real one: the bundled SmolLM2-135M on llama.cpp's OpenAI-compatible
server (`envgen.llm.server.LocalServer`, 127.0.0.1) under a name of the researcher's
choosing, reached through the `compatible` backend as any other server would be, asked
for structured replies (`--structured json_schema`, OpenAI's dialect, which llama.cpp's
server turns into a sampling grammar): the 135M model's free text does not parse under
llama.cpp's sampler (docs/measurements.md, "Local LLM server").
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import socket
from pathlib import Path

import pytest
import yaml

from envgen.cli import main
from envgen.llm.cache import ResponseCache
from envgen.llm.client import LOCAL_MODEL
from envgen.llm.local_models import model_path
from envgen.llm.server import LocalServer, ServerOptions

pytestmark = [
    pytest.mark.slow,
    pytest.mark.llm,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None,
        reason="xllamacpp is not importable: install the local-llm extra (make setup-llm)",
    ),
]

REPO = Path(__file__).resolve().parents[1]
OWN_MODEL = "my-lab-model"
CALLS = ["crafter/initial/n1/set0", "crafter/adapt2/n1/set0"]  # first call, adaptation
STRUCTURED = ["--structured", "json_schema"]


def _run_files(run: Path) -> dict[str, bytes]:
    """Every log of a finished run, by path inside it, logs unzipped."""
    files = {}
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        data = path.read_bytes()
        name = str(path.relative_to(run))
        if name.endswith(".gz"):
            data, name = gzip.decompress(data), name.removesuffix(".gz")
        files[name] = data
    return files


def _without_timing(metrics_jsonl: bytes) -> list[dict]:
    """metrics.jsonl's lines less the wall-clock rates (`time/sps`)."""
    lines = [json.loads(line) for line in metrics_jsonl.splitlines()]
    return [{k: v for k, v in line.items() if not k.startswith("time/")} for line in lines]


def test_your_own_model_from_recording_to_offline_replay(tmp_path, monkeypatch):
    # Step 1: a run config naming the model (2 cycles, 2,048 steps, 1 world per call).
    config = yaml.safe_load((REPO / "tests/data/guard/envgen_llm.yaml").read_text())
    config.update(llm_model=OWN_MODEL, envs_per_call=1)
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump(config))
    cache = tmp_path / "llm_cache"
    common = ["--seed", "0", "--cache-dir", str(cache)]

    # Step 2: one command records every reply the run needs, through the server.
    options = ServerOptions(model_path(LOCAL_MODEL), alias=OWN_MODEL, server="llama.cpp")
    with LocalServer(options) as server:
        base_url = server.base_url
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        record = ["--llm-mode", "fill", "--backend", "compatible", "--base-url", base_url]
        recorded_root = tmp_path / "recorded"
        run = ["run", str(mine), *common, *STRUCTURED]
        assert main([*run, *record, "--runs-root", str(recorded_root)]) == 0
        keys = sorted(path.name for path in cache.glob("*.json"))
        # `envgen llm record` keys the first call as the run did: fill finds it recorded
        first = ["--call", CALLS[0], "--mode", "fill", "--cache-dir", str(cache)]
        assert main(["llm", "record", *record[2:], "--model", OWN_MODEL, *STRUCTURED, *first]) == 0
        assert sorted(path.name for path in cache.glob("*.json")) == keys
    assert server.pid is None  # stopped: nothing answers from here on

    # Step 3: the cache verifies and holds the two calls, the model's own replies, asked
    # for under the reply's schema.
    assert main(["llm", "verify", "--cache-dir", str(cache)]) == 0
    entries = [entry for _, entry in ResponseCache(cache).entries()]
    assert sorted(e["label"] for e in entries) == sorted(CALLS)
    for entry in entries:
        assert entry["backend"] == "compatible"
        assert entry["request"]["model"] == entry["response"]["model"] == OWN_MODEL
        assert entry["request"]["response_format"]["type"] == "json_schema"
    for path in cache.glob("*.json"):  # requests and replies only: no URL
        assert "127.0.0.1" not in path.read_text()

    # Step 4: replay offline (replay mode, no --backend, no --base-url); any network
    # connection attempt fails the test (the vector env's local pipes stay allowed).
    attempts: list[object] = []
    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: object) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise AssertionError(f"network access attempted: {address}")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    replayed_root = tmp_path / "replayed"
    assert main([*run, "--runs-root", str(replayed_root)]) == 0
    assert attempts == []

    (recorded_run,) = recorded_root.glob("*/seed-0")
    (replayed_run,) = replayed_root.glob("*/seed-0")
    assert recorded_run.relative_to(recorded_root) == replayed_run.relative_to(replayed_root)
    recorded, replayed = _run_files(recorded_run), _run_files(replayed_run)
    assert sorted(recorded) == sorted(replayed)

    # The logs are the same bytes: episodes, each cycle's worlds, evaluation and feedback.
    same = ["run.yaml", "episodes.jsonl"] + [n for n in recorded if n.startswith("cycles/")]
    assert {"cycles/cycle-02/feedback.txt", "cycles/cycle-02/environments.json"} <= set(same)
    for name in same:
        assert recorded[name] == replayed[name], name
    # metrics: the same but for wall-clock rates; final metrics: but for the wall time
    # and how the replies were served (recorded live, replayed from the cache).
    assert _without_timing(recorded["metrics.jsonl"]) == _without_timing(replayed["metrics.jsonl"])
    final = {name: json.loads(files["final_metrics.json"]) for name, files in
             (("recorded", recorded), ("replayed", replayed))}  # fmt: skip
    assert final["recorded"]["llm_replay"]["live"] == final["replayed"]["llm_replay"]["exact"] == 2
    for metrics in final.values():
        del metrics["wall_s"], metrics["llm_replay"]
    assert final["recorded"] == final["replayed"]
    calls = {name: json.loads(files["llm_calls.json"]) for name, files in
             (("recorded", recorded), ("replayed", replayed))}  # fmt: skip
    assert [c["served"] for c in calls["recorded"]] == ["live", "live"]
    assert [c["served"] for c in calls["replayed"]] == ["exact", "exact"]
    for name in ("recorded", "replayed"):
        assert [(c["label"], c["key"]) for c in calls[name]] == [
            (c["label"], c["key"]) for c in calls["recorded"]
        ]
    assert [c["label"] for c in calls["replayed"]] == CALLS
