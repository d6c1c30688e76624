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

from envgen.llm.accounting import Ledger, write_accounting
from envgen.llm.cache import DEFAULT_CACHE_DIR, MODES, CachedLLM, ResponseCache
from envgen.llm.client import BACKENDS, BackendConfig, OpenAIChat, backend_config
from envgen.llm.conversation import EnvironmentDesigner, PromptOptions
from envgen.llm.envs import ENVIRONMENTS, EnvSpec
from envgen.llm.parse import ParsedEnvironments, parse_environments
from envgen.llm.planned_calls import PLANNED_CALLS, PlannedCall, planned_call
from envgen.llm.request import ChatRequest, ChatResponse, LLMCallable, Message, Usage
from envgen.llm.schema import reply_schema, response_format

__all__ = [
    "BACKENDS",
    "DEFAULT_CACHE_DIR",
    "ENVIRONMENTS",
    "MODES",
    "PLANNED_CALLS",
    "BackendConfig",
    "CachedLLM",
    "ChatRequest",
    "ChatResponse",
    "EnvSpec",
    "EnvironmentDesigner",
    "LLMCallable",
    "Ledger",
    "Message",
    "OpenAIChat",
    "ParsedEnvironments",
    "PlannedCall",
    "PromptOptions",
    "ResponseCache",
    "Usage",
    "backend_config",
    "parse_environments",
    "planned_call",
    "reply_schema",
    "response_format",
    "write_accounting",
]
