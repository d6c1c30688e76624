"""`envgen llm ...`: serve the local model, record planned calls, inspect the cache."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
import unicodedata
from pathlib import Path

from envgen.errors import EnvGenError, LLMResponseError
from envgen.input_checks import check_temperature, existing_dir, writable_dir
from envgen.llm.accounting import write_accounting
from envgen.llm.cache import DEFAULT_CACHE_DIR, CachedLLM, ResponseCache, file_run_slots
from envgen.llm.client import (
    BACKENDS,
    COMPATIBLE_KEY_VARIABLE,
    DEFAULT_BACKEND,
    KEYS_HELP,
    LOCAL_MODEL,
    LOCAL_MODELS,
    BackendConfig,
    backend_config,
)
from envgen.llm.conversation import REDRAWS, EnvironmentDesigner, base_label
from envgen.llm.parse import parse_environments
from envgen.llm.planned_calls import PLANNED_CALLS, planned_call
from envgen.llm.schema import DIALECTS
from envgen.llm.server import LocalServer, ServerOptions, running_backend

RECORD_ALL_HELP = f"""
These are a run's first calls only: its adaptation calls exist once the agent has
trained. One command records every reply a run needs, first and adaptation calls,
for the model named by the run config's `llm_model` (docs/llm.md, "Your own model"):
  [{COMPATIBLE_KEY_VARIABLE}=...] envgen run CONFIG.yaml --seed K --llm-mode fill \\
      --backend compatible --base-url URL
and every run of a table:
  python -m envgen.pipeline.train TABLE.yaml --llm-mode fill \\
      --backend compatible --base-url URL --model M
Then `envgen run CONFIG.yaml --seed K` (replay, the default) repeats the run offline."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "llm",
        description=(
            "The pipeline replays LLM replies from data/llm_cache/ and never calls a "
            "server. These commands run the bundled local model, record the planned "
            "calls into the cache, and inspect or verify the cache."
        ),
    )
    sub = parser.add_subparsers(dest="llm_command", metavar="SUBCOMMAND", required=True)

    serve = sub.add_parser(
        "serve",
        help="run a local model's server until Ctrl-C",
        description="Start llama.cpp's OpenAI-compatible server with a local model "
        "(default: the bundled SmolLM2-135M-Instruct) on 127.0.0.1 and print its base URL.",
    )
    serve.add_argument("--model", choices=LOCAL_MODELS, default=LOCAL_MODEL)
    _server_arguments(serve)
    serve.set_defaults(func=_serve)

    record = sub.add_parser(
        "record",
        help="record planned initial calls into the cache (a whole run's replies: "
        "envgen run --llm-mode fill)",
        description=textwrap.fill(
            "Run the planned initial generation calls (all, or those named by --call) "
            "through a backend and store the replies. --backend local starts the bundled "
            f"server for the duration; {KEYS_HELP}."
        ),
        epilog=f"{textwrap.fill('planned calls: ' + ', '.join(PLANNED_CALLS))}.\n{RECORD_ALL_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    record.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default=DEFAULT_BACKEND,
        help=f"who answers (default: {DEFAULT_BACKEND}, the bundled model's server)",
    )
    record.add_argument("--model", help="model name (default: the backend's preset)")
    record.add_argument("--base-url", help="OpenAI-compatible server URL ending in /v1")
    record.add_argument(
        "--structured", choices=DIALECTS, help="structured-output dialect (default: preset)"
    )
    record.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sampling temperature, sent with the initial set as the seed (default 0, the "
        "paper's); the rows that replay these replies set the same `llm_temperature`",
    )
    record.add_argument(
        "--redraw-repeats",
        action="store_true",
        help="draw a reply whose environments repeat one another again, with another seed, up "
        f"to {REDRAWS} times (not the paper's; the rows that replay these replies set "
        "`llm_redraw_repeats: true`)",
    )
    record.add_argument(
        "--call", action="append", choices=list(PLANNED_CALLS), help="repeatable; default all"
    )
    record.add_argument(
        "--mode",
        choices=("record", "fill"),
        default="record",
        help="record: call even if cached (refuses a different reply); fill: only misses",
    )
    record.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    record.add_argument("--accounting", type=Path, help="write calls/tokens/cost JSON here")
    _server_arguments(record)
    record.set_defaults(func=_record)

    show = sub.add_parser(
        "show",
        help="list cache entries, or print one in full",
        description="Without KEY: one line per entry (label, model, tokens, how its reply "
        "parses). With KEY (or a unique prefix): the request messages and the reply.",
    )
    show.add_argument("key", nargs="?")
    show.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    show.set_defaults(func=_show)

    slots = sub.add_parser(
        "slots",
        help="file cache entries under the protocol slots of finished runs (migration)",
        description="Read each finished run's LLM call log under RUNS_ROOT and list, in the "
        "cache file of every call that carries feedback, that call's slot (config hash, "
        "seed, label). Slot replay then finds the reply on machines whose feedback numbers "
        "differ. Caches recorded before slots existed are migrated this way; recording "
        "files slots by itself.",
    )
    slots.add_argument("--runs-root", type=Path, action="append", required=True)
    slots.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    slots.set_defaults(func=_slots)

    verify = sub.add_parser(
        "verify",
        help="check every cache file's request hashes to its name",
        description="Exit 1 if any cache file is unreadable, edited or renamed.",
    )
    verify.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    verify.set_defaults(func=_verify)


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="local server port (0 = free)")
    parser.add_argument("--threads", type=int, default=1, help="local server CPU threads")


def _server_options(args: argparse.Namespace, model: str) -> ServerOptions:
    return ServerOptions.for_model(model, port=args.port, threads=args.threads)


def _serve(args: argparse.Namespace) -> int:
    with LocalServer(_server_options(args, args.model)) as server:
        print(f"serving model {args.model!r} at {server.base_url} (Ctrl-C stops)")
        try:
            return server.wait()
        except KeyboardInterrupt:
            return 0


def _record(args: argparse.Namespace) -> int:
    try:  # a missing key, an unreachable server, a cache conflict: one line each
        check_temperature(args.temperature, "--temperature")
        writable_dir(args.cache_dir, "--cache-dir")  # before a server starts, not after
        config = backend_config(
            args.backend, model=args.model, base_url=args.base_url, structured=args.structured
        )
        return _record_calls(args, config)
    except EnvGenError as exc:
        print(f"envgen llm record: {exc}", file=sys.stderr)
        return 2


def _record_calls(args: argparse.Namespace, config: BackendConfig) -> int:
    failed = 0
    # only the bundled local model needs its package (`make setup-llm`)
    local = config.name == "local" and not config.base_url
    with running_backend(config, _server_options(args, config.model) if local else None) as backend:
        llm = CachedLLM(args.mode, args.cache_dir, backend)
        for label in args.call or list(PLANNED_CALLS):
            call = planned_call(label)
            options = call.options(backend, args.temperature, args.redraw_repeats)
            designer = EnvironmentDesigner(options, llm)
            started = time.monotonic()
            try:
                parsed = designer.generate(call.n)
                outcome = f"{len(parsed.configs)} environments, {len(parsed.warnings)} warnings"
            except LLMResponseError as exc:
                failed += 1
                outcome = f"UNUSABLE: {exc}"
            print(f"{label}: {time.monotonic() - started:.1f} s, {outcome}", flush=True)
        summary = llm.ledger.summary()
    if args.accounting:
        write_accounting(llm.ledger, args.accounting)
    print(json.dumps(summary, indent=2))
    return 1 if failed else 0


CACHE_WHAT = "the LLM response cache (e.g. data/llm_cache)"


def _show(args: argparse.Namespace) -> int:
    cache = ResponseCache(existing_dir(args.cache_dir, CACHE_WHAT))
    if args.key:
        matches = [(k, e) for k, e in cache.entries() if k.startswith(args.key)]
        if len(matches) != 1:
            print(f"{len(matches)} entries match {args.key!r}", file=sys.stderr)
            return 1
        _, entry = matches[0]
        for message in entry["request"]["messages"]:
            print(f"--- {message['role']}\n{printable(message['content'], lines=True)}")
        reply = entry["response"]
        print(f"--- reply ({printable(reply['model'])})\n{printable(reply['text'], lines=True)}")
        return 0
    for key, entry in cache.entries():
        usage = entry["response"].get("usage", {})
        label, model = printable(entry.get("label", "")), printable(entry["request"]["model"])
        print(
            f"{key[:12]}  {label:34s} {model:22s} "
            f"in {usage.get('prompt_tokens', 0):5d} out {usage.get('completion_tokens', 0):5d}"
            f"  {entry.get('elapsed_s', 0):6.1f} s  {_parse_outcome(entry)}"
        )
    return 0


def printable(text: str, lines: bool = False) -> str:
    """`text` with control characters (ANSI escapes, carriage returns; newlines too unless
    `lines`) shown as escapes: a cache file must not drive the terminal."""
    keep = "\n\t" if lines else ""
    return "".join(
        c if c in keep or unicodedata.category(c) not in ("Cc", "Cf") else ascii(c)[1:-1]
        for c in text
    )


def _parse_outcome(entry: dict) -> str:
    """How the stored reply parses, for entries of planned calls."""
    label = entry.get("label", "")
    if base_label(label) not in PLANNED_CALLS:
        return ""
    call = planned_call(label)
    try:
        parsed = parse_environments(
            entry["response"]["text"], call.n, call.game, obfuscated=call.obfuscate
        )
    except LLMResponseError as exc:
        return f"unusable ({printable(str(exc).splitlines()[0])})"
    clamped = sum(1 for c in parsed.configs if c.warnings)
    return f"ok: {len(parsed.warnings)} warnings, {clamped}/{call.n} envs adjusted" + (
        ", JSON repaired" if parsed.repaired else ""
    )


def _slots(args: argparse.Namespace) -> int:
    try:
        roots = [existing_dir(root, "finished runs (--runs-root)") for root in args.runs_root]
        filed = file_run_slots(ResponseCache(existing_dir(args.cache_dir, CACHE_WHAT)), roots)
    except EnvGenError as exc:
        print(f"envgen llm slots: {exc}", file=sys.stderr)
        return 1
    print(f"{filed} slot(s) filed in {args.cache_dir}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    cache = ResponseCache(existing_dir(args.cache_dir, CACHE_WHAT))
    count = 0
    try:
        for _ in cache.entries():
            count += 1
    except EnvGenError as exc:
        print(f"FAILED after {count} good files: {exc}", file=sys.stderr)
        return 1
    print(f"{count} cache files verified in {cache.directory}")
    return 0
