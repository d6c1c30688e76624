"""`envgen run CONFIG.yaml --seed K`: one EnvGen / baseline run, resumable.

`--profile NAME` is registered one floor up, by `envgen.pipeline.run_cli`, since profiles
are the pipeline's; it reaches this module only as `args.adjust_config` (a function of
the config read and its file) and `args.adjust_words` (its options, for the commands a
failed run prints).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from pathlib import Path

from envgen import numerics
from envgen.agents.device import add_device_arguments, set_deterministic
from envgen.agents.threads import add_threads_argument, set_torch_threads
from envgen.envs.vector import workers_variable
from envgen.errors import CacheMissError, ConfigError, EnvGenError
from envgen.games import game_spec
from envgen.input_checks import not_a_file, whole_number, writable_dir
from envgen.llm.cache import DEFAULT_CACHE_DIR, MATCHES, MODES, CachedLLM
from envgen.llm.client import (
    BACKENDS,
    COMPATIBLE_KEY_VARIABLE,
    DEFAULT_BACKEND,
    KEY_VARIABLE,
    KEYS_HELP,
    LOCAL_MODEL,
    LOCAL_MODELS,
    BackendConfig,
    backend_config,
    replay_backend,
)
from envgen.llm.schema import DIALECTS
from envgen.llm.server import running_backend
from envgen.loop.config import RunConfig, check_scored_phase
from envgen.loop.runner import RunOptions, execute_run
from envgen.store.provenance import read_provenance
from envgen.store.provenance import summary as provenance_summary
from envgen.store.run_dir import RunDir, read_json

DESCRIPTION = """\
Run one row of a table for one seed: EnvGen (generate -> train in the LLM environments
-> train in Crafter -> evaluate -> adapt, N_cycle times, then the final Crafter steps),
or a baseline, as CONFIG.yaml says (fields: envgen.loop.config.RunConfig).

Outputs go to RUNS_ROOT/<config-hash>/seed-K/ (docs/pipeline.md, "Run store"). A
finished run is sealed (logs gzipped, a manifest of every file's sha256 written last)
and never redone; a killed one continues with --resume.

LLM replies come from the response cache (docs/llm.md), by --llm-mode:
  replay (default)  serve recorded replies; a miss stops the run before training with
                    the command that records it
  fill              record what is missing through --backend (local: a server of
                    the config's llm_model is started), replay the rest
  record            call --backend for every request and store the reply (a different
                    reply already stored under the same key is an error)
  live              call --backend, store nothing
"""


ConfigAdjust = Callable[[RunConfig, Path], RunConfig]
"""Changes a run's config before it is checked and run (`envgen run --profile`)."""


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds `envgen run` and returns its parser, for the options of higher floors."""
    parser = subparsers.add_parser(
        "run",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("config", type=Path, help="run configuration YAML")
    parser.add_argument("--seed", type=whole_number(0), required=True, help="run seed")
    parser.add_argument("--resume", action="store_true", help="continue a partial run")
    parser.add_argument(
        "--runs-root", type=Path, default=Path("results/runs"), help="where runs are kept"
    )
    parser.add_argument("--llm-mode", choices=MODES, default="replay", help="cache mode (below)")
    parser.add_argument(
        "--replay",
        choices=MATCHES,
        default="slot",
        help="how replay matches a request: slot (default; the reply recorded for the "
        "call's place in the run, feedback drift reported) or strict (exact request only)",
    )
    parser.add_argument(
        "--backend",
        choices=list(BACKENDS),
        help=f"LLM backend for fill/record/live (default: {DEFAULT_BACKEND}, the bundled model's "
        "server); replay calls none: without it a model's replies replay as recorded (local "
        f"models: local, others: openai or compatible, keyed alike); {KEYS_HELP}",
    )
    parser.add_argument("--base-url", help="OpenAI-compatible server URL ending in /v1")
    parser.add_argument(
        "--structured",
        choices=DIALECTS,
        help="ask for replies under the reply's JSON schema in this dialect (json_schema: "
        "OpenAI's, which llama.cpp's server, vLLM and Ollama also take; default: the "
        "backend's, json_object for local, off for the others). The prompt and request "
        "change with it, so do the cache keys: give it to every command of the run, "
        "replay included",
    )
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    add_device_arguments(parser, gpu_options=False)  # bf16, NHWC: the config's own fields
    parser.add_argument(
        "--workers",
        type=whole_number(1),
        help="vec-env worker processes (Crafter; default $ENVGEN_ENV_WORKERS, else min(envs, "
        "CPU cores)) or procgen threads (Heist; default 4); never changes results",
    )
    parser.add_argument("--progress", action="store_true", help="show progress bars")
    add_threads_argument(parser)
    parser.set_defaults(func=main, adjust_config=None, adjust_words="")
    return parser


def _backend(args: argparse.Namespace, model: str) -> BackendConfig:
    """The backend the cache keys by: `--backend`, else in replay the one `model`'s
    replies were recorded through (`replay_backend`), else `DEFAULT_BACKEND`, so a call
    to another model than the local ones goes out only through a backend named on purpose."""
    calls = args.llm_mode != "replay"  # replay never connects: no --base-url needed
    name = args.backend or (DEFAULT_BACKEND if calls else replay_backend(model))
    structured = getattr(args, "structured", None)
    return backend_config(
        name, model=model, base_url=args.base_url, structured=structured, calls=calls
    )


def _fill_advice(args: argparse.Namespace) -> str:
    """The command that records this run's missing replies with a backend serving its model."""
    adjust, words = getattr(args, "adjust_config", None), getattr(args, "adjust_words", "")
    try:
        model = checked_config(args.config, adjust).llm_model
    except (OSError, EnvGenError, ValueError):
        model = LOCAL_MODEL
    command = (
        f"envgen run {args.config}{words} --seed {args.seed} --resume "
        f"--runs-root {args.runs_root} --llm-mode fill"
    )
    if getattr(args, "structured", None):
        command += f" --structured {args.structured}"
    advice = "To record every missing reply of this run, first and adaptation calls, in one "
    if model in LOCAL_MODELS:
        return advice + f"command through the local model:\n  {command} --backend local"
    return advice + (
        f"command, of {model!r} (needs the model's server; the local "
        f"backend serves only {', '.join(map(repr, LOCAL_MODELS))}):\n  "
        f"[{COMPATIBLE_KEY_VARIABLE}=...] {command} --backend compatible --base-url URL\n"
        f"  or, for OpenAI's models: {KEY_VARIABLE}=... {command} --backend openai"
    )


def checked_config(path: Path, adjust: ConfigAdjust | None = None) -> RunConfig:
    """The run config at `path`, changed by `adjust` where given (a profile), validated
    completely (its PPO overrides and network included) before any work; a mistake is a
    `ConfigError` naming file and field."""
    config = RunConfig.from_yaml(path)
    if adjust is not None:
        config = adjust(config, path)
    game = game_spec(config.game)
    try:
        ppo = game.ppo_config(config.ppo)
        game.model_config(config.model, **config.gpu_options)
        if game.rules.scored_in_training:
            check_scored_phase(config.final_steps, ppo.num_envs)
    except ConfigError as exc:
        raise exc.in_file(path) from None
    return config


def main(args: argparse.Namespace) -> int:
    set_torch_threads(args.torch_threads)
    set_deterministic(args.deterministic)
    try:
        config = checked_config(args.config, args.adjust_config)
        not_a_file(args.cache_dir, "LLM replies (--cache-dir)")
        # a file where the run's folder goes: one line now, not a traceback at mkdir
        writable_dir(
            RunDir.of(args.runs_root, config.config_hash(), args.seed).root,
            "the run under --runs-root",
        )
        numerics.reexec(config.cpu_numerics)  # the variables act as numpy and torch load
        if args.workers is None and game_spec(config.game).rules.env_workers:
            workers_variable()  # a bad $ENVGEN_ENV_WORKERS is one line, before any work
        options = RunOptions(args.device, args.workers, args.progress, args.resume)
        backend = _backend(args, config.llm_model)
        calls = args.llm_mode != "replay"  # a server starts only when calls may go out
        with running_backend(backend) if calls else contextlib.nullcontext(backend) as backend:
            llm = None
            if config.uses_llm:
                llm = CachedLLM(args.llm_mode, args.cache_dir, backend, match=args.replay)
            root = execute_run(config, args.seed, args.runs_root, llm, options)
        metrics = read_json(RunDir(root).final_metrics)
    except CacheMissError as exc:
        print(f"envgen run: {exc}\n{_fill_advice(args)}")
        return 1
    except EnvGenError as exc:
        print(f"envgen run: {exc}")
        return 1
    print(f"{root}: score {metrics['score']:.2f}%, reward {metrics['reward']:.2f}")
    print(f"provenance: {provenance_summary(read_provenance(root), RunDir(root).provenance)}")
    return 0
