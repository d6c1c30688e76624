"""The paper's PPO agent: networks, PPO, a resumable trainer, evaluation and `envgen train`."""
