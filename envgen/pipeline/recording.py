"""Where the train stage's LLM replies come from: the cache, or a recording session.

Replay (the default) needs nothing but the cache. `--llm-mode fill` records the missing
replies: of the bundled local model through a server started here (docs/pipeline.md,
"Recording the local model's adaptation calls"), or with `--backend openai|compatible
--model M` of model M, after printing the calls and their estimated cost and under a
spending cap (docs/llm.md, "Recording the paper's model"). Apart from the stage so that a
campaign starts the same server the same way (`llm_spec`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from envgen.errors import ConfigError
from envgen.llm.accounting import PRICES_PER_M_TOKENS
from envgen.llm.budget import estimate_usd, run_calls
from envgen.llm.client import LOCAL_MODEL, LOCAL_MODELS, backend_config
from envgen.llm.server import LocalServer, ServerOptions
from envgen.loop.config import RunConfig
from envgen.pipeline.jobs import LLMSpec
from envgen.pipeline.plan import TablePlan, distinct_jobs


@contextlib.contextmanager
def llm_spec(
    mode: str,
    cache_dir: Path,
    match: str = "slot",
    record: LLMSpec | None = None,
    local_model: str = LOCAL_MODEL,
) -> Iterator[LLMSpec]:
    """Replay needs nothing; fill starts `local_model`'s server for the jobs, or records
    another model through `record`'s backend (no server here)."""
    if mode == "replay":
        yield LLMSpec("replay", str(cache_dir), match=match)
        return
    if record is not None:
        yield dataclasses.replace(record, mode=mode, cache_dir=str(cache_dir), match=match)
        return
    with LocalServer(ServerOptions.for_model(local_model)) as server:
        yield LLMSpec(
            mode,
            str(cache_dir),
            server.base_url,
            local_model,
            server.options.server,
            match=match,
        )


def recording_spec(args: argparse.Namespace) -> LLMSpec | None:
    """The spec for recording a non-local model (`--backend openai|compatible`), or None."""
    if args.backend == "local":
        if args.model not in (None, *LOCAL_MODELS):
            raise ConfigError(
                "model",
                f"the local backend serves only {', '.join(map(repr, LOCAL_MODELS))}; record "
                f"{args.model!r} with --backend compatible --base-url URL or --backend openai",
            )
        return None
    if args.llm_mode != "fill" or not args.model:
        raise ConfigError("backend", f"--backend {args.backend} needs --llm-mode fill and --model")
    backend_config(args.backend, model=args.model, base_url=args.base_url)  # checks the pair
    if args.max_usd is None and args.model in PRICES_PER_M_TOKENS:
        raise ConfigError(
            "max_usd", f"{args.model!r} is priced: give --max-usd (the most you will spend)"
        )
    return LLMSpec(
        record_backend=args.backend,
        record_model=args.model,
        record_base_url=args.base_url,
        max_usd=args.max_usd,
        since=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


def _llm_configs(plans: Sequence[TablePlan]) -> Iterator[RunConfig]:
    """The config of every distinct job that asks an LLM (random-policy jobs have none)."""
    for job in distinct_jobs(plans):
        config = getattr(job, "config", None)
        if config is not None and config.uses_llm:
            yield config


def local_model_to_serve(plans: Sequence[TablePlan], given: str | None) -> str:
    """The local model fill mode serves: `given` (`--model`), else the one local model
    the plans' LLM rows ask for (the smoke profile's designer), else the bundled one. A
    server answers for one model, so rows asking for two need `--model`, one at a time."""
    if given:
        return given
    models = sorted({c.llm_model for c in _llm_configs(plans) if c.llm_model in LOCAL_MODELS})
    if len(models) > 1:
        raise ConfigError(
            "model",
            f"these rows ask for {len(models)} local models ({', '.join(models)}) and a "
            "server serves one: record them one at a time with --model M",
        )
    return models[0] if models else LOCAL_MODEL


def recording_estimate(plans: Sequence[TablePlan], model: str) -> str:
    """What recording `model` asks for: runs, LLM calls and estimated cost, printed first."""
    calls: list[tuple[int, int]] = []
    runs = 0
    for config in _llm_configs(plans):
        if config.llm_model != model:
            continue
        runs += 1
        calls += run_calls(
            config.method, config.n_cycles, config.envs_per_call, config.curriculum_pool
        )
    usd = estimate_usd(model, calls)
    cost = "no price known" if usd is None else f"about ${usd:.2f}"
    return (
        f"[record] {model}: {runs} runs, at most {len(calls)} calls (re-asks excepted; "
        f"replies already in the cache are not asked again), {cost}"
    )
