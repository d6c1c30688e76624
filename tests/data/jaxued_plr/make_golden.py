"""Write golden.json: jaxued's own PLR level weights, insertions and positive value loss on
fixed arrays, for tests/test_loop_plr.py to compare envgen.loop.level_buffer against.

jax and jaxued are not dependencies of this project; this was run once, in a throwaway
environment: `python -m venv /tmp/jaxvenv && /tmp/jaxvenv/bin/pip install jax jaxued six`
(jax 0.10.2), then jaxued itself replaced by DramaCow/jaxued at commit 0f8f128 (`pip
install --no-deps` of that tree: PyPI's jaxued 0.0.1 calls `jax.tree_map`, which jax 0.10
removed), from the repository root:

    /tmp/jaxvenv/bin/python tests/data/jaxued_plr/make_golden.py
"""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import jaxued
from jaxued.level_sampler import LevelSampler
from jaxued.utils import positive_value_loss

CAPACITY = 8
# Six filled slots (two tied scores), two empty; stamps give each a different staleness.
SCORES = [0.3, 1.2, -0.5, 1.2, 0.05, 0.8, 0.0, 0.0]
TIMESTAMPS = [3, 17, 9, 1, 20, 12, 0, 0]
SIZE, EPISODE_COUNT = 6, 21
# (temperature beta, staleness coefficient rho): the reference configs and the limits.
SETTINGS = [(1.0, 0.5), (0.3, 0.3), (0.1, 0.3), (0.3, 0.5), (0.01, 0.0), (0.3, 1.0)]
# Levels are their own ids here; these scores are offered one after another to a
# buffer of 4, which fills, then replaces its least-weighted slot when the newcomer
# scores higher.
INSERTS = [0.4, 0.1, 0.9, 0.2, 0.3, 0.05, 1.5, 0.25, 0.6, -jnp.inf]


def sampler_with(scores, timestamps, size, count):
    sampler = LevelSampler(CAPACITY).initialize(jnp.int32(0))
    filled = jnp.arange(CAPACITY) < size
    return {
        **sampler,
        "scores": jnp.where(filled, jnp.array(scores, jnp.float32), -jnp.inf),
        "timestamps": jnp.array(timestamps, jnp.int32),
        "size": size,
        "episode_count": count,
    }


# A filled slot without a score (-inf: written as null), as a replayed world that
# finished no episode leaves it, and ties among many slots.
UNSCORED = [0.3, -jnp.inf, 0.8, 0.8, 0.8, 0.1, 0.8, 0.0]


def weights_cases():
    cases = []
    for scores, size, stamps in (
        (SCORES, SIZE, TIMESTAMPS),
        (SCORES, SIZE, [EPISODE_COUNT] * CAPACITY),
        (SCORES, CAPACITY, TIMESTAMPS),
        (UNSCORED, CAPACITY, TIMESTAMPS),
    ):
        for beta, rho in SETTINGS:
            ls = LevelSampler(
                CAPACITY, staleness_coeff=rho, prioritization_params={"temperature": beta}
            )
            weights = ls.level_weights(sampler_with(scores, stamps, size, EPISODE_COUNT))
            cases.append(
                {
                    "scores": [None if s == -jnp.inf else s for s in scores],
                    "timestamps": stamps,
                    "size": size,
                    "episode_count": EPISODE_COUNT,
                    "temperature": beta,
                    "staleness": rho,
                    "weights": [float(w) for w in weights],
                }
            )
    return cases


def insert_case():
    ls = LevelSampler(4, staleness_coeff=0.3, prioritization_params={"temperature": 0.3})
    sampler = ls.initialize(jnp.int32(0))
    slots = []
    for i, score in enumerate(INSERTS):
        sampler, slot = ls.insert(sampler, jnp.int32(i), jnp.float32(score))
        slots.append(int(slot))
    return {
        "capacity": 4,
        "temperature": 0.3,
        "staleness": 0.3,
        "scores": [None if s == -jnp.inf else s for s in INSERTS],
        "slots": slots,
        "levels": [int(x) for x in sampler["levels"]],
        "final_scores": [float(s) for s in sampler["scores"]],
        "timestamps": [int(t) for t in sampler["timestamps"]],
        "episode_count": int(sampler["episode_count"]),
    }


def pvl_case():
    key = jax.random.PRNGKey(0)
    advantages = jax.random.normal(key, (12, 3))
    dones = jnp.zeros((12, 3), bool).at[jnp.array([2, 7, 11]), 0].set(True).at[5, 1].set(True)
    return {
        "advantages": advantages.tolist(),
        "dones": dones.tolist(),
        "scores": [
            None if jnp.isinf(s) else float(s) for s in positive_value_loss(dones, advantages)
        ],
    }


golden = {
    "made_by": f"jax {jax.__version__}, jaxued 0f8f128 "
    "(LevelSampler.level_weights, insert; utils.positive_value_loss)",
    "jaxued_module": jaxued.__name__,
    "weights": weights_cases(),
    "insert": insert_case(),
    "positive_value_loss": pvl_case(),
}
out = Path(__file__).with_name("golden.json")
out.write_text(json.dumps(golden, indent=1) + "\n")
print(f"wrote {out}")
