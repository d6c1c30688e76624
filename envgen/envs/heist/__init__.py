"""procgen Heist with EnvGen's level settings, built on procgen's own engine and state."""

from envgen.envs.heist.config import HeistConfig
from envgen.envs.heist.env import HeistEnv, HeistVecEnv

__all__ = ["HeistConfig", "HeistEnv", "HeistVecEnv"]
