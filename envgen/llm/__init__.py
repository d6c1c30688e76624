"""The LLM environment designer (paper steps 1 and 4): prompts, parsing, client, cache.

Each name is imported from its own module; docs/llm.md, "Using it from the EnvGen loop",
shows the designer, the cache and the accounting working together.
"""
