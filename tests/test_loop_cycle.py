"""The EnvGen cycle's order of events, through `execute_run` with the trainer stubbed.

The schedule (docs/paper.md, "The method in four steps"): the designer writes N worlds,
the agent trains in them (phase llmK), then in the original game (origK), is evaluated
there and the feedback goes back to the designer, which adapts the worlds; after the
last cycle, the final phase in the original game. Fixed generates once and never
evaluates or adapts. The real heuristic designer writes the worlds (no LLM); the
trainer, the evaluation and the store's session records are stubs that log each call,
so the test checks the order, the step targets and which worlds each phase trains in,
not any training.
"""

from __future__ import annotations

from typing import Any

import pytest

from envgen.games import game_spec
from envgen.loop import runner
from envgen.loop.config import RunConfig
from envgen.loop.run_state import with_world_rules
from envgen.loop.world_designers import make_designer

LLM, ORIG, FINAL = 1024, 2048, 4096  # distinct, so each step target names its phase
ORIGINAL = with_world_rules(game_spec("crafter").original, RunConfig().original_world)


class Recorder:
    """The run's events, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []


class StubTrainer:
    """`Trainer`'s surface as the runner uses it; `train_until` logs and jumps there."""

    def __init__(self, log: Recorder) -> None:
        self.log = log
        self.global_step = 0
        self.model = None
        self.counters = type("Counters", (), {"episodes_cut": 0})()

    def resume(self) -> bool:
        return False

    def train_until(self, step: int, configs: list[Any], phase: str) -> None:
        self.log.events.append(("train", phase, step, tuple(configs)))
        self.global_step = step

    def close_env(self) -> None:
        self.log.events.append(("close_env",))

    def close(self) -> None:
        self.log.events.append(("close",))


class RecordingDesigner:
    """The real designer, with each `generate` and `adapt` logged."""

    def __init__(self, inner: Any, log: Recorder) -> None:
        self.inner, self.log = inner, log

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def generate(self, n: int):
        self.log.events.append(("generate",))
        return self.inner.generate(n)

    def adapt(self, stats):
        self.log.events.append(("adapt", dict(stats)))
        return self.inner.adapt(stats)


def run_logged(
    method: str, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> tuple[list[tuple[Any, ...]], RecordingDesigner]:
    log = Recorder()
    designers: list[RecordingDesigner] = []

    def designer(*args: Any, **kwargs: Any) -> RecordingDesigner:
        designers.append(RecordingDesigner(make_designer(*args, **kwargs), log))
        return designers[-1]

    def evaluation(run: Any, cycle: int) -> dict[str, tuple[int, int]]:
        log.events.append(("evaluate", cycle, run.trainer.global_step))
        # Distinct per cycle, so each adapt call shows which evaluation it was given.
        return {s: (cycle, i) for i, s in enumerate(game_spec("crafter").design.skills())}

    def final_metrics(run: Any, wall_s: float) -> dict[str, Any]:
        log.events.append(("final_metrics", run.trainer.global_step))
        return {"global_steps": run.trainer.global_step}

    monkeypatch.setattr(runner, "Trainer", lambda *a, **k: StubTrainer(log))
    monkeypatch.setattr(runner, "make_designer", designer)
    monkeypatch.setattr(runner, "cycle_evaluation", evaluation)
    monkeypatch.setitem(runner.FINAL_METRICS, "crafter", final_metrics)
    monkeypatch.setattr(
        runner, "start_session", lambda *a, **k: log.events.append(("start_session",))
    )
    monkeypatch.setattr(
        runner, "finish_run", lambda root, step: log.events.append(("finish_run", step))
    )
    config = RunConfig(
        method=method,
        designer="heuristic",
        n_cycles=3,
        llm_env_steps=LLM,
        orig_env_steps=ORIG,
        final_steps=FINAL,
    )
    runner.execute_run(config, 0, tmp_path)
    (recorded,) = designers
    return log.events, recorded


def shape(events: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Events without the arguments that only some checks need (configs, stats)."""
    out = []
    for event in events:
        if event[0] == "train":
            out.append(event[:3])
        elif event[0] == "adapt":
            out.append(("adapt",))
        else:
            out.append(event)
    return out


def run_end(final_step: int) -> list[tuple[Any, ...]]:
    """The events after the last cycle: the final phase to `final_step`, then the close."""
    return [
        ("train", "final", final_step),
        ("close_env",),
        ("final_metrics", final_step),
        ("finish_run", final_step),
        ("close",),
    ]


def test_envgen_cycle_order(monkeypatch, tmp_path):
    events, designer = run_logged("envgen", monkeypatch, tmp_path)
    cycle = LLM + ORIG
    expected: list[tuple[Any, ...]] = [("generate",), ("start_session",)]
    for k in range(1, 4):
        base = (k - 1) * cycle
        expected += [
            ("train", f"llm{k}", base + LLM),
            ("train", f"orig{k}", base + cycle),
            ("evaluate", k, base + cycle),
        ]
        if k < 3:
            expected.append(("adapt",))
    expected += run_end(3 * cycle + FINAL)
    assert shape(events) == expected

    # Each adaptation reads the evaluation just before it (its cycle's numbers) ...
    adapts = [e[1] for e in events if e[0] == "adapt"]
    assert [{v[0] for v in stats.values()} for stats in adapts] == [{1}, {2}]
    # ... and cycle k trains in the designer's k-th reply (under the designed worlds'
    # rules); every orig phase in the original game, as the final phase.
    assert len(designer.results) == 3
    trains = {e[1]: e[3] for e in events if e[0] == "train"}
    for k in range(1, 4):
        assert trains[f"llm{k}"] == designed(designer.results[k - 1].configs)
        assert trains[f"orig{k}"] == trains["final"]
    assert trains["final"] == (ORIGINAL,)


def test_fixed_generates_once_and_never_evaluates(monkeypatch, tmp_path):
    events, designer = run_logged("fixed", monkeypatch, tmp_path)
    cycle = LLM + ORIG
    expected: list[tuple[Any, ...]] = [("generate",), ("start_session",)]
    for k in range(1, 4):
        base = (k - 1) * cycle
        expected += [("train", f"llm{k}", base + LLM), ("train", f"orig{k}", base + cycle)]
    expected += run_end(3 * cycle + FINAL)
    assert shape(events) == expected
    assert len(designer.results) == 1
    trains = {e[1]: e[3] for e in events if e[0] == "train"}
    first = designed(designer.results[0].configs)
    assert trains["llm1"] == trains["llm2"] == trains["llm3"] == first
    assert trains["orig1"] == trains["orig2"] == trains["orig3"] == trains["final"] == (ORIGINAL,)


def designed(configs: Any) -> tuple[Any, ...]:
    """The designer's configs as the run plays them (`Run.designed`)."""
    return tuple(with_world_rules(c, RunConfig().llm_world_rules) for c in configs)
