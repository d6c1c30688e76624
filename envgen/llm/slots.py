"""Protocol slots: where a call sits in an experiment, independent of the machine it ran on.

An adaptation prompt carries the agent's success rates, floats that differ between CPUs
and GPUs, so a recorded reply is also filed under its *slot*: the run's config hash (no
execution settings), the seed and the call's label. Slot replay gives a request the reply
recorded for its slot when the two are equal once the feedback numbers are masked; the
numbers that differ are the *drift*, reported per call, run and table. Any other
difference is a changed experiment: an error naming the first differing line.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envgen.errors import CacheMissError
from envgen.store.run_dir import RunDir

# One feedback line as every game's adaptation prompt writes it (envgen.llm.prompt_parts):
# "- <skill>: <mean>% +/- <std>%".
FEEDBACK_LINE = re.compile(
    r"^(?P<head>- [^:\n]+: )(?P<mean>-?\d+(?:\.\d+)?)% \+/- (?P<std>-?\d+(?:\.\d+)?)%$",
    re.MULTILINE,
)
MASK = "#"


class SlotMismatchError(CacheMissError):
    """The reply recorded for a slot answered a request that differs beyond the feedback."""


def slot_id(run: str, label: str) -> str:
    """The slot of call `label` in run `run` (``<config hash>/seed-<n>``)."""
    return f"{run}/{label}"


def run_id(config_hash: str, seed: int) -> str:
    """A run's experiment identity and seed, as slots and run directories name it."""
    return RunDir.of(Path(), config_hash, seed).run_id


def feedback_numbers(text: str) -> list[float]:
    """Every (mean, std) of the feedback lines in `text`, flattened, in order."""
    return [float(m[k]) for m in FEEDBACK_LINE.finditer(text) for k in ("mean", "std")]


def masked(text: str) -> str:
    """`text` with each feedback number replaced by `MASK`."""
    return FEEDBACK_LINE.sub(lambda m: f"{m['head']}{MASK}% +/- {MASK}%", text)


def carries_feedback(messages: Sequence[Mapping[str, str]]) -> bool:
    """True when any user turn holds feedback numbers (the request is float-dependent)."""
    return any(m["role"] == "user" and FEEDBACK_LINE.search(m["content"]) for m in messages)


@dataclasses.dataclass(frozen=True)
class Drift:
    """How far the newest feedback of a replayed call (earlier turns were reported by
    their own calls) is from the one the recorded reply answered, in success-rate
    percentage points; both means and stds count."""

    numbers: int
    """Feedback numbers compared (2 per skill)."""
    differing: int
    """Of those, how many differ."""
    max_abs: float
    """Largest absolute difference (points)."""
    mean_abs: float
    """Mean absolute difference over all `numbers` (points)."""


NO_DRIFT = Drift(0, 0, 0.0, 0.0)


def compare(recorded: Mapping[str, Any], request: Mapping[str, Any], slot: str) -> Drift:
    """The drift between two request records (`request_record`) of one slot; a
    `SlotMismatchError` naming the first field or line that differs once feedback is masked."""
    for field in sorted(set(recorded) | set(request)):
        if field != "messages" and recorded.get(field) != request.get(field):
            raise _mismatch(slot, f"field {field!r}", recorded.get(field), request.get(field))
    old, new = recorded["messages"], request["messages"]
    if len(old) != len(new):
        raise _mismatch(slot, "the number of messages", len(old), len(new))
    newest = None
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        if a["role"] != b["role"]:
            raise _mismatch(slot, f"message {i + 1}'s role", a["role"], b["role"])
        if a["content"] == b["content"]:
            if FEEDBACK_LINE.search(b["content"]):
                newest = (a["content"], b["content"])
            continue
        lines_a, lines_b = masked(a["content"]).split("\n"), masked(b["content"]).split("\n")
        for j, (la, lb) in enumerate(zip(lines_a, lines_b, strict=False)):
            if la != lb:
                raise _mismatch(slot, f"message {i + 1}, line {j + 1}", la, lb)
        if len(lines_a) != len(lines_b):
            raise _mismatch(slot, f"message {i + 1}'s line count", len(lines_a), len(lines_b))
        newest = (a["content"], b["content"])
    if newest is None:
        return NO_DRIFT
    before, now = feedback_numbers(newest[0]), feedback_numbers(newest[1])
    diffs = [abs(x - y) for x, y in zip(before, now, strict=True)]
    return Drift(
        numbers=len(diffs),
        differing=sum(d > 0 for d in diffs),
        max_abs=round(max(diffs, default=0.0), 3),
        mean_abs=round(sum(diffs) / len(diffs), 3) if diffs else 0.0,
    )


def _mismatch(slot: str, where: str, recorded: Any, now: Any) -> SlotMismatchError:
    return SlotMismatchError(
        f"slot {slot}: the recorded reply answered a request that differs in {where} "
        f"beyond the feedback numbers (recorded: {str(recorded)[:160]!r}; now: "
        f"{str(now)[:160]!r}). That is a changed experiment, not float drift: record the "
        "call again for the current code (see the command below, or docs/llm.md, "
        '"Replay modes")'
    )


def summarize_calls(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A run's replay summary from its LLM call log's entries (see `CallLog`): drift in
    success-rate points over the calls that carried feedback (exact ones count as zero)."""
    served = [c.get("served", "exact" if c.get("cached") else "live") for c in calls]
    drifts = [c["drift"] for c in calls if c.get("drift")]
    numbers = sum(d["numbers"] for d in drifts)
    return {
        "calls": len(calls),
        "exact": served.count("exact"),
        "slot": served.count("slot"),
        "live": served.count("live"),
        "feedback_calls": len(drifts),
        "differing": sum(d["differing"] for d in drifts),
        "max_drift": max((d["max_abs"] for d in drifts), default=0.0),
        "mean_drift": (
            round(sum(d["mean_abs"] * d["numbers"] for d in drifts) / numbers, 3)
            if numbers
            else 0.0
        ),
    }


def combine_summaries(replays: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several `summarize_calls` summaries as one (a row's runs, a table's rows): the
    counts summed, the largest drift, the mean drift weighted by the calls that carried
    feedback (unrounded)."""
    keys = ("calls", "exact", "slot", "live", "feedback_calls")
    total: dict[str, Any] = {k: sum(r[k] for r in replays) for k in keys}
    total["max_drift"] = max(r["max_drift"] for r in replays)
    compared = total["feedback_calls"]
    total["mean_drift"] = (
        sum(r["mean_drift"] * r["feedback_calls"] for r in replays) / compared if compared else 0.0
    )
    return total
