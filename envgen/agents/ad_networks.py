"""Achievement Distillation's network: the PPO backbone plus a memory of achievements.

Moon et al. 2023, code snu-mllab/Achievement-Distillation, `model/ppo_ad.py`:
- Backbone: `networks.ActorCritic`'s encoder and final layer, observation -> latent.
- *Memory*: the unit representation of the episode's latest achievement,
  normalize(latent(after the unlock) - latent(before)), zero at episode start. Policy
  and value heads read [latent, memory], initialised as PPO's.
- *Next-achievement predictor*: the latent modulated by the action through FiLM ((1 +
  gamma) * latent + beta, from an MLP of the one-hot action), joined with the memory,
  then an MLP -> unit vector (`ad.prediction_loss`). Each MLP is the reference's with one
  hidden layer: LayerNorm -> Linear (no bias, fan-in 1.4) -> ReLU -> Linear (fan-in 1.0).

The reference's LayerNorm sits before the 256 -> hidden layer; here it is after it, as in
our PPO, so that the AD and PPO rows differ only by AD: 1,536 parameters more than the
reference's 9,234,228 on the paper preset (docs/agent.md, "Achievement Distillation").
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from envgen.agents.config import ModelConfig
from envgen.agents.networks import ActorCritic, _fan_in_init, autocast


def _mlp(insize: int, hidden: int, outsize: int) -> nn.Sequential:
    """The reference's one-hidden-layer `MLP` with `layer_norm: True`."""
    return nn.Sequential(
        nn.LayerNorm(insize),
        _fan_in_init(nn.Linear(insize, hidden, bias=False), 1.4),
        nn.ReLU(),
        _fan_in_init(nn.Linear(hidden, outsize), 1.0),
    )


class ADActorCritic(ActorCritic):
    """Backbone -> latent; heads on [latent, memory]; FiLM + MLP next-achievement predictor.

    `forward(obs, memory)` is `ActorCritic`'s with the memory (N, hidden_size) as one more
    input, zeros when missing (an episode's start). The layers draw their initial weights
    in the order backbone, heads, predictor: another order changes every AD run's numbers.
    """

    head_inputs = 2

    def __init__(self, cfg: ModelConfig, value_norm_decay: float = 0.99):
        super().__init__(cfg, value_norm_decay)
        h = cfg.hidden_size
        self.action_film = _mlp(cfg.num_actions, h, 2 * h)  # reference: action_mlp
        self.next_achievement = _mlp(2 * h, h, h)  # reference: next_goal_pred_mlp

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """uint8 (N, 64, 64, 3) -> latent (N, hidden_size), float32 even under
        `bf16_autocast`, so that memories, normalisations and losses stay float32."""
        x = obs.permute(0, 3, 1, 2).float().div_(255.0)
        x = x.contiguous(
            memory_format=torch.channels_last if self.cfg.channels_last else torch.contiguous_format
        )
        with autocast(x.device, self.cfg.bf16_autocast):
            return self.final(self.encoder(x)).float()

    def heads(
        self, latent: torch.Tensor, memory: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities and normalised value from a latent and the memory."""
        h = torch.cat([latent, memory], dim=-1)
        with autocast(h.device, self.cfg.bf16_autocast):
            logits, value = self.policy_head(h), self.value_head(h)
        return F.log_softmax(logits.float(), dim=-1), value.float().squeeze(-1)

    def forward(
        self, obs: torch.Tensor, memory: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        latent = self.encode(obs)
        if memory is None:
            memory = torch.zeros_like(latent)
        return self.heads(latent, memory)

    def achievement(self, before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
        """Unit representation of the achievements unlocked between two uint8 observations;
        an all-zero image is "no observation", a zero latent (the reference's `get_states`:
        the episode's end when no achievement follows)."""
        n = before.shape[0]
        latents = self.encode(torch.cat([before, after]))
        blank = (torch.cat([before, after]).reshape(2 * n, -1) == 0).all(dim=1, keepdim=True)
        latents = latents.masked_fill(blank, 0.0)
        return F.normalize(latents[n:] - latents[:n], dim=-1)

    def predict_next(
        self, latent: torch.Tensor, actions: torch.Tensor, memory: torch.Tensor
    ) -> torch.Tensor:
        """Unit prediction of the next achievement's representation (N, hidden_size)."""
        onehot = F.one_hot(actions, self.cfg.num_actions).to(latent.dtype)
        with autocast(latent.device, self.cfg.bf16_autocast):
            gamma, beta = self.action_film(onehot).float().chunk(2, dim=-1)
            x = torch.cat([(1 + gamma) * latent + beta, memory], dim=-1)
            pred = self.next_achievement(x).float()
        return F.normalize(pred, dim=-1)
