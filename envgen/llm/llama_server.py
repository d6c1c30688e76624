"""The local server process: llama.cpp's own OpenAI-compatible server, from a prebuilt wheel.

`python -m envgen.llm.llama_server --model GGUF --model_alias NAME --port P ...` serves
one model on /v1 (chat completions, `response_format` with a JSON schema) until SIGTERM
or SIGINT. The server is llama.cpp's C++ one, embedded in the `xllamacpp` wheel (the
`local-llm` extra), prebuilt for portable x86-64, so `make setup-llm` compiles nothing
(docs/llm.md, "Local backend"). `envgen.llm.server.LocalServer` starts and stops it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m envgen.llm.llama_server",
        description="Serve a GGUF model with llama.cpp's OpenAI-compatible server until "
        "SIGTERM or Ctrl-C.",
    )
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--model_alias", required=True, help="the model name requests carry")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n_ctx", type=int, required=True, help="context window in tokens")
    parser.add_argument("--n_threads", type=int, default=1, help="threads that generate")
    parser.add_argument("--n_threads_batch", type=int, default=1, help="threads that read")
    parser.add_argument("--seed", type=int, default=0, help="seed of a request that has none")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.model):
        print(f"error: no model file {args.model}", file=sys.stderr)
        return 2
    try:
        import xllamacpp  # lazy: the local-llm extra; --help and the error need none
    except ImportError:
        print("error: xllamacpp is not installed; run `make setup-llm`", file=sys.stderr)
        return 2

    # Blocked before the server's threads start, so that they inherit the mask and the
    # signal reaches `sigwait` below, not a native thread.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.model_alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = 1  # one slot: requests are served one at a time, in order
    params.cpuparams.n_threads = args.n_threads
    params.cpuparams_batch.n_threads = args.n_threads_batch
    params.sampling.seed = args.seed
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # the wheel raises its own types; one line, not a traceback
        print(f"error: llama.cpp could not serve {args.model}: {exc}", file=sys.stderr)
        return 1
    print(f"serving {args.model_alias} at {server.listening_address}/v1", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    # The native server's threads are not joined: nothing of theirs needs saving.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
