"""Protocol slots: replies recorded on one machine replay on another (drift reported),
a changed experiment is refused, and no reply is stored under another model's name."""

import contextlib
import dataclasses
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from envgen.cli import main
from envgen.errors import CacheIntegrityError, CacheMissError, ConfigError
from envgen.llm.cache import CachedLLM, ResponseCache, file_run_slots, slots_verdict
from envgen.llm.client import OpenAIChat, backend_config
from envgen.llm.request import ChatRequest, Message, record_key, request_record
from envgen.llm.slots import (
    SlotMismatchError,
    compare,
    feedback_numbers,
    masked,
    run_id,
    summarize_calls,
)
from envgen.store import seal_run
from envgen.store.manifest import MANIFEST

REPO = Path(__file__).resolve().parents[1]
RUN = run_id("abc123def456", 0)


def feedback(wood: float, stone: float, intro: str = "The agent trained.") -> str:
    return (
        f"{intro}\n\nSuccess rate of each skill in the original game (mean% +/- std%):\n"
        f"- collect_wood: {wood:.1f}% +/- 10.0%\n- collect_stone: {stone:.1f}% +/- 0.0%\n\n"
        "Create 2 new environments."
    )


def adapt_request(text: str, run: str = RUN) -> ChatRequest:
    messages = (
        Message("user", "Create 2 environments."),
        Message("assistant", "env 1, env 2"),
        Message("user", text),
    )
    return ChatRequest(messages, 0.0, 0, 64, label="crafter/adapt2/n2/set0", run=run)


def stub(monkeypatch, texts, model="gpt-4-1106-preview"):
    """An OpenAIChat factory whose transport answers `texts` in turn as `model`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    replies = list(texts)

    def answer(request):
        return httpx.Response(
            200,
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 1700000000,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": replies.pop(0)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            },
        )

    transport = httpx.MockTransport(answer)
    return lambda backend: OpenAIChat(backend, http_client=httpx.Client(transport=transport))


def _no_client(backend):
    raise AssertionError("replay must not build a client")


def record(tmp_path, monkeypatch, request, reply="recorded reply"):
    llm = CachedLLM(
        "record", tmp_path, backend_config("openai"), client_factory=stub(monkeypatch, [reply])
    )
    return llm(request)


def replayer(tmp_path, match="slot"):
    return CachedLLM(
        "replay", tmp_path, backend_config("openai"), client_factory=_no_client, match=match
    )


# --- masking and drift --------------------------------------------------------------------
def test_feedback_numbers_are_masked_and_nothing_else():
    text = feedback(33.3, 0.0, intro="Environment 1 has 4 trees.")
    assert feedback_numbers(text) == [33.3, 10.0, 0.0, 0.0]
    assert "- collect_wood: #% +/- #%" in masked(text)
    assert "4 trees" in masked(text) and "Create 2 new" in masked(text)


def test_compare_measures_drift_of_the_newest_feedback():
    old = request_record(adapt_request(feedback(50.0, 0.0)), "m")
    new = request_record(adapt_request(feedback(25.0, 8.3)), "m")
    assert dataclasses.asdict(compare(old, old, "s")) == {
        "numbers": 4,
        "differing": 0,
        "max_abs": 0.0,
        "mean_abs": 0.0,
    }
    drift = compare(old, new, "s")
    assert (drift.numbers, drift.differing, drift.max_abs) == (4, 2, 25.0)
    assert drift.mean_abs == pytest.approx((25.0 + 8.3) / 4, abs=1e-3)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda r: {**r, "model": "other"}, "field 'model'"),
        (lambda r: {**r, "seed": 3}, "field 'seed'"),
        (lambda r: {**r, "messages": r["messages"][:2]}, "number of messages"),
        (
            lambda r: {
                **r,
                "messages": [*r["messages"][:2], {"role": "user", "content": feedback(50, 0, "X")}],
            },
            "message 3, line 1",
        ),
        (
            lambda r: {
                **r,
                "messages": [
                    r["messages"][0],
                    {"role": "assistant", "content": "env 1, env 3"},
                    r["messages"][2],
                ],
            },
            "message 2, line 1",
        ),
    ],
)
def test_any_difference_beyond_the_feedback_is_a_changed_experiment(change, where):
    old = request_record(adapt_request(feedback(50.0, 0.0)), "m")
    with pytest.raises(SlotMismatchError, match=where) as err:
        compare(old, change(old), "abc/seed-0/crafter/adapt2/n2/set0")
    assert "changed experiment" in str(err.value)


def test_run_summary_weights_drift_by_feedback_numbers():
    calls = [
        {"served": "exact", "drift": None},
        {"served": "exact", "drift": {"numbers": 44, "differing": 0, "max_abs": 0, "mean_abs": 0}},
        {"served": "slot", "drift": {"numbers": 44, "differing": 3, "max_abs": 50, "mean_abs": 2}},
    ]
    summary = summarize_calls(calls)
    assert summary == {
        "calls": 3,
        "exact": 2,
        "slot": 1,
        "live": 0,
        "feedback_calls": 2,
        "differing": 3,
        "max_drift": 50,
        "mean_drift": 1.0,
    }


# --- the cache ----------------------------------------------------------------------------
def test_slot_replay_serves_the_recorded_reply_despite_drift(tmp_path, monkeypatch):
    record(tmp_path, monkeypatch, adapt_request(feedback(50.0, 0.0)))
    (path,) = tmp_path.iterdir()
    assert json.loads(path.read_text())["slots"] == [f"{RUN}/crafter/adapt2/n2/set0"]

    reply = replayer(tmp_path)(adapt_request(feedback(41.7, 0.0)))
    assert (reply.text, reply.served) == ("recorded reply", "slot")
    assert reply.drift == {"numbers": 4, "differing": 1, "max_abs": 8.3, "mean_abs": 2.075}
    exact = replayer(tmp_path)(adapt_request(feedback(50.0, 0.0)))
    assert (exact.served, exact.drift["differing"]) == ("exact", 0)


def test_strict_replay_misses_the_drifted_request_and_says_how_to_record(tmp_path, monkeypatch):
    record(tmp_path, monkeypatch, adapt_request(feedback(50.0, 0.0)))
    with pytest.raises(CacheMissError) as err:
        replayer(tmp_path, "strict")(adapt_request(feedback(41.7, 0.0)))
    message = str(err.value)
    assert "strict replay" in message and "crafter/adapt2/n2/set0" in message
    assert "fill" in message and "--backend openai --model gpt-4-1106-preview" in message


def test_slot_replay_refuses_another_run_and_a_changed_template(tmp_path, monkeypatch):
    record(tmp_path, monkeypatch, adapt_request(feedback(50.0, 0.0)))
    with pytest.raises(CacheMissError, match=r"slot abc123def456/seed-1/"):
        replayer(tmp_path)(adapt_request(feedback(41.7, 0.0), run=run_id("abc123def456", 1)))
    with pytest.raises(SlotMismatchError, match="message 3, line 1.*changed experiment"):
        replayer(tmp_path)(adapt_request(feedback(41.7, 0.0, intro="A new template.")))


def test_fill_uses_the_slot_and_records_a_changed_experiment_anew(tmp_path, monkeypatch):
    record(tmp_path, monkeypatch, adapt_request(feedback(50.0, 0.0)))
    factory = stub(monkeypatch, ["new reply"])
    filler = CachedLLM("fill", tmp_path, backend_config("openai"), client_factory=factory)
    assert filler(adapt_request(feedback(41.7, 0.0))).served == "slot"  # no call made
    changed = filler(adapt_request(feedback(41.7, 0.0, intro="A new template.")))
    assert (changed.text, changed.served) == ("new reply", "live")
    slots = {p.name: json.loads(p.read_text()).get("slots") for p in tmp_path.iterdir()}
    assert sorted(slots.values(), key=len) == [[], [f"{RUN}/crafter/adapt2/n2/set0"]]
    assert replayer(tmp_path)(adapt_request(feedback(0.0, 0.0, "A new template."))).text == (
        "new reply"
    )


def test_requests_without_feedback_get_no_slot(tmp_path, monkeypatch):
    initial = ChatRequest((Message("user", "Create 2 environments."),), 0.0, 0, 64, run=RUN)
    reply = record(tmp_path, monkeypatch, initial)
    assert reply.drift is None
    (path,) = tmp_path.iterdir()
    assert "slots" not in json.loads(path.read_text())


# --- replies stored under their own model's name only ---------------------------------------
def test_a_reply_from_another_model_is_not_stored(tmp_path, monkeypatch):
    factory = stub(monkeypatch, ["small model text"], model="smollm2-135m-instruct")
    llm = CachedLLM("fill", tmp_path, backend_config("openai"), client_factory=factory)
    with pytest.raises(CacheIntegrityError, match="answered with model 'smollm2-135m-instruct'"):
        llm(adapt_request(feedback(50.0, 0.0)))
    assert list(tmp_path.iterdir()) == []


def test_a_dated_version_of_the_requested_model_is_accepted(tmp_path, monkeypatch):
    factory = stub(monkeypatch, ["ok"], model="gpt-4-1106-preview-2023")
    llm = CachedLLM("fill", tmp_path, backend_config("openai"), client_factory=factory)
    assert llm(adapt_request(feedback(50.0, 0.0))).text == "ok"


def test_verify_catches_a_mislabelled_file(tmp_path, monkeypatch):
    record(tmp_path, monkeypatch, adapt_request(feedback(50.0, 0.0)))
    (path,) = tmp_path.iterdir()
    entry = json.loads(path.read_text())
    entry["response"]["model"] = "smollm2-135m-instruct"
    path.write_text(json.dumps(entry))
    with pytest.raises(CacheIntegrityError, match="written by model 'smollm2-135m-instruct'"):
        list(ResponseCache(tmp_path).entries())


def test_the_local_backend_serves_only_the_bundled_model():
    with pytest.raises(ConfigError, match="serves only .*--backend openai"):
        backend_config("local", model="gpt-4-1106-preview")


def test_run_advice_for_a_paper_model_names_a_backend_that_serves_it(tmp_path):
    config = tmp_path / "gpt4.yaml"
    config.write_text("method: fixed\nn_cycles: 1\nllm_model: gpt-4-1106-preview\n")
    done = subprocess.run(
        [sys.executable, "-m", "envgen.cli", "run", str(config), "--seed", "0"]
        + ["--runs-root", str(tmp_path / "runs"), "--cache-dir", str(tmp_path / "empty")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 1
    assert "--backend openai" in done.stdout and "--backend local" not in done.stdout


# --- migration: slots from finished runs ---------------------------------------------------
def run_with_one_recorded_call(tmp_path, monkeypatch):
    """A cache holding one recorded adaptation reply, and an unfinished run whose
    llm_calls.json names it: (cache dir, run dir)."""
    cache_dir = tmp_path / "cache"
    request = adapt_request(feedback(50.0, 0.0), run="")
    record(cache_dir, monkeypatch, request)
    key = record_key(request_record(request, "gpt-4-1106-preview"))
    run_dir = tmp_path / "runs" / "abc123def456" / "seed-0"
    run_dir.mkdir(parents=True)
    (run_dir / "llm_calls.json").write_text(
        json.dumps([{"label": "crafter/adapt2/n2/set0", "key": key}])
    )
    return cache_dir, run_dir


def test_slots_are_filed_from_finished_runs(tmp_path, monkeypatch):
    cache_dir, run_dir = run_with_one_recorded_call(tmp_path, monkeypatch)
    assert file_run_slots(ResponseCache(cache_dir), [tmp_path / "runs"]) == 0  # unfinished
    (run_dir / "final_metrics.json").write_text("{}")
    assert file_run_slots(ResponseCache(cache_dir), [tmp_path / "runs"]) == 0  # not sealed
    seal_run(run_dir)  # finished: its manifest written
    assert file_run_slots(ResponseCache(cache_dir), [tmp_path / "runs"]) == 1
    assert replayer(cache_dir)(adapt_request(feedback(8.3, 0.0))).served == "slot"


def test_slots_skips_calls_served_by_slot(tmp_path, monkeypatch):
    """A call served by slot has no file of its own: `llm slots` files its run's others
    and neither fails on it nor writes a file for it."""
    cache_dir, run_dir = run_with_one_recorded_call(tmp_path, monkeypatch)
    (run_dir / "final_metrics.json").write_text("{}")
    seal_run(run_dir)
    assert file_run_slots(ResponseCache(cache_dir), [tmp_path / "runs"]) == 1
    # The same run trained again elsewhere: other feedback numbers, served by its slot.
    drifted = record_key(request_record(adapt_request(feedback(8.3, 0.0), run=""), "m"))
    assert not (cache_dir / f"{drifted}.json").exists()
    (run_dir / MANIFEST).unlink()
    served = {"label": "crafter/adapt2/n2/set0", "key": drifted, "served": "slot"}
    (run_dir / "llm_calls.json").write_text(json.dumps([{**served, "model": "gpt-4-1106-preview"}]))
    seal_run(run_dir)
    before = sorted(p.name for p in cache_dir.iterdir())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["llm", "slots", "--runs-root", str(tmp_path / "runs"), "--cache-dir", str(cache_dir)]
        )
    assert code == 0, out.getvalue()
    assert "slot(s) filed" in out.getvalue()
    assert sorted(p.name for p in cache_dir.iterdir()) == before
    # Served by the slot of another model: nothing holds its reply, and the error names it.
    (run_dir / MANIFEST).unlink()
    (run_dir / "llm_calls.json").write_text(json.dumps([{**served, "model": "other-model"}]))
    seal_run(run_dir)
    with pytest.raises(CacheIntegrityError, match=f"no file {drifted}.json"):
        file_run_slots(ResponseCache(cache_dir), [tmp_path / "runs"])


# --- verify: every committed feedback call has its slot --------------------------------------
def test_every_committed_feedback_call_has_its_slot_filed():
    """Replay on a machine whose floats differ needs them (Table 1 at torch_threads 2)."""
    ok, detail = slots_verdict(REPO / "data/llm_cache", [REPO / "results/runs"])
    assert ok, detail


def test_verify_names_the_run_and_call_whose_slot_is_missing(tmp_path):
    """A committed run and its cache files copied; one slot removed is named, with the fix."""
    run_dir = REPO / "results/runs/bb353574e93b/seed-1"  # Table 1's "AD + EnvGen"
    runs, cache_dir = tmp_path / "runs", tmp_path / "cache"
    shutil.copytree(run_dir, runs / "bb353574e93b/seed-1")
    cache_dir.mkdir()
    calls = json.loads((run_dir / "llm_calls.json").read_text())
    for call in calls:
        shutil.copy(REPO / "data/llm_cache" / f"{call['key']}.json", cache_dir)
    assert slots_verdict(cache_dir, [runs])[0]
    adapt = next(c for c in calls if c["label"] == "crafter/adapt2/n4/set0")
    path = cache_dir / f"{adapt['key']}.json"
    entry = json.loads(path.read_text())
    slot = "bb353574e93b/seed-1/crafter/adapt2/n4/set0"
    entry["slots"] = [s for s in entry["slots"] if s != slot]
    path.write_text(json.dumps(entry))
    ok, detail = slots_verdict(cache_dir, [runs])
    assert not ok
    assert f"{runs}/bb353574e93b/seed-1: call crafter/adapt2/n4/set0 (slot {slot})" in detail
    assert f"envgen llm slots --runs-root {runs} --cache-dir {cache_dir}" in detail
    assert file_run_slots(ResponseCache(cache_dir), [runs]) > 0
    assert slots_verdict(cache_dir, [runs])[0]
