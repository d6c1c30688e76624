"""Where a paper-network PPO update spends its GPU time, and which lever moves it.

Run by call2.sh on the lent GPU (issue 39, after call 1 found the vmap cohort slower
per sample than one run). Synthetic rollouts (random observations); each variant prints
one JSON line: the PPO update's samples/s (3 epochs x 8 minibatches of 512 per seed) or
the policy step's observations/s, and the top kernels by GPU time for one eager update.

Variants: one run eager (bf16, and bf16 + cudnn.benchmark); one run with each
minibatch step captured in a CUDA graph (capturable Adam), W models replayed in turn;
the vmap cohort of 8 with cudnn.benchmark on. `python probe.py cpu` runs the eager
parts tiny on the CPU (a syntax and shape check).
"""

import contextlib
import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from envgen.agents import ppo
from envgen.agents.cohort import CohortPPO
from envgen.agents.config import PPOConfig, model_preset
from envgen.agents.networks import ActorCritic

DEVICE = torch.device(sys.argv[1] if len(sys.argv) > 1 else "cuda")
CUDA = DEVICE.type == "cuda"
MODEL = model_preset("paper" if CUDA else "impala-small")
CFG = PPOConfig() if CUDA else PPOConfig(num_envs=2, num_steps=32, minibatches=2)
W = 8 if CUDA else 2


def sync():
    if CUDA:
        torch.cuda.synchronize()


def emit(**kv):
    print(json.dumps(kv), flush=True)


def fill(buf, gen):
    buf.obs.copy_(torch.randint(0, 256, buf.obs.shape, generator=gen, dtype=torch.uint8))
    buf.actions.copy_(torch.randint(0, 17, buf.actions.shape, generator=gen))
    buf.logprobs.fill_(-2.8)
    buf.values.copy_(torch.randn(buf.values.shape, generator=gen))
    buf.rewards.copy_((torch.rand(buf.rewards.shape, generator=gen) < 0.05).float())
    buf.dones.copy_((torch.rand(buf.dones.shape, generator=gen) < 0.01).float())


def eager_update(bf16: bool, benchmark: bool, profile: bool = False):
    torch.backends.cudnn.benchmark = benchmark
    model = MODEL.__class__(**{**MODEL.__dict__, "bf16_autocast": bf16})
    agent = ppo.PPOAgent(model, CFG, DEVICE)
    gen = torch.Generator().manual_seed(0)
    fill(agent.buf, gen) if not CUDA else None
    if CUDA:
        host = ppo.Rollout.empty(CFG, torch.device("cpu"))
        fill(host, gen)
        for k, v in vars(host).items():
            getattr(agent.buf, k).copy_(v)
    rng = np.random.default_rng(0)
    agent.update(rng)  # warm-up (and cudnn's search when benchmark is on)
    sync()
    t = time.perf_counter()
    agent.update(rng)
    sync()
    dt = time.perf_counter() - t
    samples = CFG.rollout_size * CFG.epochs
    emit(variant="eager", bf16=bf16, benchmark=benchmark, update_samples_s=round(samples / dt, 1))
    if profile and CUDA:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as prof

        with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            agent.update(rng)
            sync()
        rows = sorted(p.key_averages(), key=lambda e: -e.device_time_total)[:18]
        total = sum(e.self_device_time_total for e in p.key_averages())
        emit(
            variant="profile",
            gpu_ms_total=round(total / 1e3, 1),
            wall_ms=round(dt * 1e3, 1),
            top=[[e.key[:60], round(e.self_device_time_total / 1e3, 1), e.count] for e in rows],
        )
    # policy step: 8 observations
    obs = agent.buf.obs[0]
    g = torch.Generator(device=DEVICE).manual_seed(1)
    for _ in range(3):
        ppo.policy_step(agent.model, obs, g)
    sync()
    t = time.perf_counter()
    for _ in range(50):
        a, _, _ = ppo.policy_step(agent.model, obs, g)
        a.cpu()
    emit(
        variant="policy_eager",
        bf16=bf16,
        ms_per_step=round((time.perf_counter() - t) / 50 * 1e3, 2),
    )


class GraphedStep:
    """One PPO minibatch step (forward, losses, backward, clip, Adam) as a CUDA graph."""

    def __init__(self, seed: int, bf16: bool):
        torch.manual_seed(seed)
        self.model = ActorCritic(MODEL, CFG.value_norm_decay).to(DEVICE)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=CFG.lr, capturable=CUDA)
        mb = CFG.rollout_size // CFG.minibatches
        self.obs = torch.randint(0, 256, (mb, 64, 64, 3), dtype=torch.uint8, device=DEVICE)
        self.act = torch.randint(0, 17, (mb,), device=DEVICE)
        self.old = torch.full((mb,), -2.8, device=DEVICE)
        self.adv = torch.randn(mb, device=DEVICE)
        self.ret = torch.randn(mb, device=DEVICE)
        self.bf16 = bf16
        self.graph = None

    def _step(self):
        ctx = (
            torch.autocast("cuda", torch.bfloat16, cache_enabled=False)
            if self.bf16
            else contextlib.nullcontext()
        )
        x = self.obs.permute(0, 3, 1, 2).float().div_(255.0)
        with ctx:
            h = self.model.final(self.model.encoder(x))
            logits, value = self.model.policy_head(h), self.model.value_head(h)
        lp_all = F.log_softmax(logits.float(), -1)
        value = value.float().squeeze(-1)
        lp = lp_all.gather(1, self.act[:, None])[:, 0]
        ratio = (lp - self.old).exp()
        pl = -torch.min(self.adv * ratio, self.adv * ratio.clamp(0.8, 1.2)).mean()
        self.model.value_norm.update(self.ret)
        vl = F.mse_loss(value, self.model.value_norm.normalize(self.ret))
        ent = -(lp_all.exp() * lp_all).sum(-1).mean()
        loss = pl + 0.5 * vl - 0.01 * ent
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), CFG.max_grad_norm, foreach=True)
        self.opt.step()
        return loss

    def capture(self):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.opt.zero_grad(set_to_none=True)
                self._step()
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.loss = self._step()


def graphed(bf16: bool, models: int):
    torch.backends.cudnn.benchmark = False
    steps = [GraphedStep(k, bf16) for k in range(models)]
    for st in steps:
        st.capture()
    sync()
    n = CFG.epochs * CFG.minibatches
    t = time.perf_counter()
    for _ in range(n):
        for st in steps:
            st.graph.replay()
    sync()
    dt = time.perf_counter() - t
    mb = CFG.rollout_size // CFG.minibatches
    emit(
        variant="graphed", bf16=bf16, models=models, update_samples_s=round(n * mb * models / dt, 1)
    )


def vmap_cohort(bf16: bool, benchmark: bool):
    torch.backends.cudnn.benchmark = benchmark
    model = MODEL.__class__(**{**MODEL.__dict__, "bf16_autocast": bf16})
    agent = CohortPPO(model, CFG, list(range(W)), DEVICE)
    agent.buf.obs.copy_(torch.randint(0, 256, agent.buf.obs.shape, dtype=torch.uint8))
    agent.buf.values.normal_()
    agent.buf.rewards[:] = np.random.default_rng(0).random(agent.buf.rewards.shape) < 0.05
    rngs = [np.random.default_rng(k) for k in range(W)]
    agent.update(rngs)
    sync()
    t = time.perf_counter()
    agent.update(rngs)
    sync()
    dt = time.perf_counter() - t
    samples = CFG.rollout_size * CFG.epochs * W
    emit(
        variant="vmap",
        bf16=bf16,
        benchmark=benchmark,
        cohort=W,
        update_samples_s=round(samples / dt, 1),
    )


def main():
    plan = [
        lambda: eager_update(True, False, profile=True),
        lambda: eager_update(True, True),
        lambda: eager_update(False, False),
    ]
    if CUDA:
        plan += [lambda: graphed(True, 1), lambda: graphed(True, 8), lambda: graphed(False, 1)]
    plan += [lambda: vmap_cohort(True, True)]
    for step in plan:
        try:
            step()
        except Exception as exc:  # one variant failing must not cost the others
            emit(error=f"{type(exc).__name__}: {str(exc)[:300]}")
        if CUDA:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    main()
