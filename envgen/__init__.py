"""EnvGen replication: LLM-designed training environments for Crafter and Heist."""

from envgen.gym_notice import import_gym_quietly

__version__ = "0.1.0"

# crafter and procgen import gym, which prints a deprecation notice in every process
# (envgen/gym_notice.py); importing it here first, quietly, keeps runs' output clean.
import_gym_quietly()
