"""Training environments: Crafter (configurable, deterministic, fast) and procgen Heist."""
