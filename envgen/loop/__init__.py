"""The EnvGen loop (generate, train, evaluate, adapt) and its baselines, as resumable runs."""
