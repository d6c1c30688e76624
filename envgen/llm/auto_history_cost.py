"""What `llm_history_cycles: auto` would change in the committed cache, and what recording
it again would cost: measured from data/llm_cache, calling no model.

    python -m envgen.llm.auto_history_cost [--cache data/llm_cache]

Each run's Crafter adaptation chain is rebuilt from its cached requests (their slots name
the run): cycle j's exchange is adapt j's last message and the reply adapt j+1 carries
after it. For every adaptation of today's layout, the request "auto" would send (the
recorded exchanges, `fitting_exchanges` at the model's context) is hashed like any
request (`record_key`) and looked up. A chain changes from its first changed call on:
the replies after it are not recorded, so every later call of the chain is a miss too.
The cost: seconds per prompt and per reply token from a median regression (no intercept)
of the recorded `elapsed_s` of the 1.5B model's calls (one thread, machine shared with
training), applied to each call's estimated tokens (its characters over the 1.5B
model's median characters per token in the cache) and its recorded reply's tokens;
every prompt is counted whole (llama.cpp's reuse of a shared prefix would cut that).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from envgen.llm.cache import DEFAULT_CACHE_DIR, ResponseCache
from envgen.llm.chains import Call, adaptations, ancestry, auto_messages
from envgen.llm.conversation import context_window
from envgen.llm.request import Message, record_key

RECORDING_MODEL = "qwen2.5-coder-1.5b-instruct"
SHORT_ROWS = 10
"""Rows of at most this many cycles are costed apart (issue 54: record those first)."""


def rates(entries: Sequence[dict[str, Any]]) -> tuple[float, float, float]:
    """(s per prompt token, s per reply token, characters per token) of the 1.5B model's
    recorded calls: a median regression without intercept, and the median ratio."""
    import statsmodels.api as sm  # lazy: optional dependency (statsmodels)

    calls = [e for e in entries if e["request"]["model"] == RECORDING_MODEL]
    tokens = np.array([[e["response"]["usage"][k] for k in ("prompt_tokens", "completion_tokens")]
                       for e in calls], dtype=float)  # fmt: skip
    elapsed = np.array([e["elapsed_s"] for e in calls])
    prompt_s, reply_s = sm.QuantReg(elapsed, tokens).fit(q=0.5).params
    chars = [sum(len(m["content"]) for m in e["request"]["messages"]) for e in calls]
    return float(prompt_s), float(reply_s), float(np.median(np.array(chars) / tokens[:, 0]))


def report(cache_dir: Path) -> list[str]:
    entries = [entry for _, entry in ResponseCache(cache_dir).entries()]
    prompt_s, reply_s, chars_per_token = rates(entries)
    calls = adaptations(entries)
    recorded = sum(e["request"]["model"] == RECORDING_MODEL for e in entries)
    lines = [
        f"1.5B model, one thread (median regression over its {recorded} cached calls): "
        f"{prompt_s:.4f} s per prompt token, {reply_s:.4f} s per reply token; "
        f"{chars_per_token:.2f} characters per token",
    ]
    changed: dict[str, bool] = {}
    rows = collections.Counter()
    hours: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()
    planned: dict[str, tuple[list[Call], list[Message], str]] = {}
    for call in calls:  # what "auto" sends in place of each call, from its ancestry
        path = ancestry(call, calls)
        if path is not None:
            context = context_window(call.model)
            assert context is not None
            messages = auto_messages(path, context)
            request = {
                **call.entry["request"],
                "messages": [dataclasses.asdict(m) for m in messages],
            }
            planned[call.entry["key"]] = (path, messages, record_key(request))
    # auto's own recorded requests: the replacement of a trimmed request, and every later
    # call of its chain (whose history holds the new replies), paired with the trimmed
    # requests they replace cycle by cycle
    auto_chain = {new for key, (_, _, new) in planned.items() if new != key}
    recorded_at: collections.Counter = collections.Counter()
    for call in sorted(calls, key=lambda c: c.cycle):
        path = planned.get(call.entry["key"], ([],))[0]
        if call.entry["key"] in auto_chain or (
            len(path) > 1 and path[-2].entry["key"] in auto_chain
        ):
            auto_chain.add(call.entry["key"])
            group = (call.model, call.entry["label"].split("/", 2)[2])
            recorded_at[(*group, call.cycle)] += 1
    for call in sorted(calls, key=lambda c: c.cycle):
        group = (call.model, call.entry["label"].split("/", 2)[2])
        if call.entry["key"] in auto_chain:
            rows[(*group, "auto's request, recorded")] += 1
            continue
        if call.entry["key"] not in planned:
            rows[(*group, "not today's layout or no cached ancestry")] += 1
            continue
        path, messages, new = planned[call.entry["key"]]
        parent = changed.get(path[-2].entry["key"], False) if len(path) > 1 else False
        changed[call.entry["key"]] = parent or new != call.entry["key"]
        if not changed[call.entry["key"]]:
            rows[(*group, "unchanged")] += 1
            continue
        if recorded_at[(*group, call.cycle)] > 0:
            recorded_at[(*group, call.cycle)] -= 1
            rows[(*group, "changes, auto's request recorded")] += 1
            continue
        trimmed = len(messages) < 2 * call.cycle - 3
        rows[(*group, f"changes, {'trimmed' if trimmed else 'whole history'}")] += 1
        chars = sum(len(m.content) for m in messages)
        reply = call.entry["response"]["usage"]["completion_tokens"]
        cycles = "cycles 3-10" if call.cycle <= SHORT_ROWS else f"cycles {SHORT_ROWS + 1}+"
        hours[(call.model, cycles)] += (prompt_s * chars / chars_per_token + reply_s * reply) / 3600
        counts[(call.model, cycles)] += 1
    lines += [f"{model} | {call} | {what}: {n}" for (model, call, what), n in sorted(rows.items())]
    lines += [f"{model}, {cycles}: {counts[model, cycles]} changed calls, {h:.1f} h to record "
              "again with the 1.5B model on one thread"
              for (model, cycles), h in sorted(hours.items())]  # fmt: skip
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envgen.llm.auto_history_cost")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE_DIR)
    args = parser.parse_args(argv)
    print("\n".join(report(args.cache)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
