"""Crafter with EnvGen's world settings, built on the `crafter` package's own engine."""

from envgen.envs.crafter.config import LLM_ENV_LENGTH, STOCK_LENGTH, CrafterConfig
from envgen.envs.crafter.env import CrafterEnv

__all__ = ["CrafterConfig", "CrafterEnv", "LLM_ENV_LENGTH", "STOCK_LENGTH"]
