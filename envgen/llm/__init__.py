"""The LLM environment designer (paper step 1 and 4): prompts, parsing, client, cache.

Typical use by the EnvGen loop, each name imported from its own module::

    backend = BACKENDS["local"]          # client; or backend_config("openai", model=...)
    llm = CachedLLM("replay", DEFAULT_CACHE_DIR, backend)                   # cache
    options = PromptOptions(initial_set=0, structured=backend.structured)   # conversation
    designer = EnvironmentDesigner(options, llm)                            # conversation
    configs = designer.generate(4).configs            # cycle 1
    configs = designer.adapt(success_stats).configs   # cycles 2..N
    write_accounting(llm.ledger, RunDir(run_dir).llm_accounting)            # accounting
"""
