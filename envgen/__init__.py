"""EnvGen replication: LLM-designed training environments for Crafter and Heist."""

__version__ = "0.1.0"
