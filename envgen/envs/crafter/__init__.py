"""Crafter with EnvGen's world settings, built on the `crafter` package's own engine."""

from envgen.envs.crafter.config import LLM_ENV_LENGTH, STOCK_LENGTH, CrafterConfig

__all__ = ["CrafterConfig", "LLM_ENV_LENGTH", "STOCK_LENGTH"]
