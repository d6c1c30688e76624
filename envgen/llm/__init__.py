"""The LLM environment designer (paper step 1 and 4): prompts, parsing, client, cache.

Typical use by the EnvGen loop::

    backend = BACKENDS["local"]          # or backend_config("openai", model=...)
    llm = CachedLLM("replay", DEFAULT_CACHE_DIR, backend)
    options = PromptOptions(initial_set=0, structured=backend.structured)
    designer = EnvironmentDesigner(options, llm)
    configs = designer.generate(4).configs            # cycle 1
    configs = designer.adapt(success_stats).configs   # cycles 2..N
    write_accounting(llm.ledger, run_dir / "llm_accounting.json")
"""

from __future__ import annotations

import importlib
from typing import Any

# The names below load on first use (PEP 562), so importing one submodule, e.g.
# `envgen.llm.crafter` from the game registry, runs no other: the registry
# (`envgen.games`) and `PromptOptions` refer to each other.
_EXPORTS = {
    "BACKENDS": "envgen.llm.client",
    "BackendConfig": "envgen.llm.client",
    "CachedLLM": "envgen.llm.cache",
    "ChatRequest": "envgen.llm.request",
    "ChatResponse": "envgen.llm.request",
    "DEFAULT_CACHE_DIR": "envgen.llm.cache",
    "DesignSpec": "envgen.llm.design_spec",
    "EnvironmentDesigner": "envgen.llm.conversation",
    "LLMCallable": "envgen.llm.request",
    "Ledger": "envgen.llm.accounting",
    "MODES": "envgen.llm.cache",
    "Message": "envgen.llm.request",
    "OpenAIChat": "envgen.llm.client",
    "PLANNED_CALLS": "envgen.llm.planned_calls",
    "ParsedEnvironments": "envgen.llm.parse",
    "PlannedCall": "envgen.llm.planned_calls",
    "PromptOptions": "envgen.llm.conversation",
    "ResponseCache": "envgen.llm.cache",
    "Usage": "envgen.llm.request",
    "backend_config": "envgen.llm.client",
    "design_spec": "envgen.llm.design_spec",
    "parse_environments": "envgen.llm.parse",
    "planned_call": "envgen.llm.planned_calls",
    "reply_schema": "envgen.llm.schema",
    "response_format": "envgen.llm.schema",
    "write_accounting": "envgen.llm.accounting",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'envgen.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = sorted(_EXPORTS)
