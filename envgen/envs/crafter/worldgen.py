"""Compiled Crafter world generation: stock `crafter.worldgen`, bit for bit, plus EnvGen's knobs.

Stock generation walks the 64x64 area twice in Python (materials, then creatures),
calling OpenSimplex noise up to ten times per tile (~40 ms per reset); here the same
walks run in numba. The worlds stay identical: the noise is opensimplex 0.4.5's own
compiled `_noise3`; the start-area sigmoid uses NumPy's `exp` on an array, as stock does
(NumPy's SIMD `exp` may differ from libm's in the last bit); `world.random` is consumed
in compiled code (`mt19937`) in stock's order, with the same short-circuits.

EnvGen's settings (docs/paper.md, "Crafter parameters the LLM controls"; docs/crafter.md)
are the spawn thresholds of coal, iron, diamond and trees, the biome rescale of the final
water and mountain fields, and the start-area threshold and material. With
`world_rules="authors"` (the authors' fork, aszala/EnvGen crafter/crafter/worldgen.py)
coal and iron need only `mountain > 0.18` and their draw, not stock's noise tests (so
mountains hold several times more of both), and skeletons are placed only beyond distance 10.
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
from crafter import constants
from opensimplex.constants import GRADIENTS3
from opensimplex.internals import _noise3

from envgen.envs.crafter import mt19937
from envgen.envs.crafter.config import CrafterConfig

# Material ids as `crafter.engine.World` assigns them (0 is "no material").
MATERIAL_IDS = {name: index + 1 for index, name in enumerate(constants.materials)}
_WATER, _GRASS, _STONE, _PATH, _SAND, _TREE, _LAVA, _COAL, _IRON, _DIAMOND = (
    MATERIAL_IDS[name] for name in "water grass stone path sand tree lava coal iron diamond".split()
)

# Creature kinds in the spawn list `build` returns.
COW, ZOMBIE, SKELETON = 0, 1, 2

# target_biome -> (code, start-area threshold, start-area material); the authors' values.
_BIOMES = {
    "natural": (0, 0.5, _GRASS),
    "grassland": (1, 0.6, _GRASS),
    "mountain": (2, 0.6, _PATH),
    "beaches": (3, 0.8, _GRASS),
}


@dataclasses.dataclass(frozen=True)
class GeneratedWorld:
    """A generated world, ready to install: it depends on the world seed, the area, the
    centre and the config only, so it can be built ahead of the reset that uses it."""

    materials: np.ndarray  # Material ids (uint8, area-shaped), `world._mat_map`'s content
    spawns: np.ndarray  # Creatures to add, in stock's order, as int64 rows (kind, x, y)
    random_state: tuple[np.ndarray, np.ndarray]  # `world.random`'s MT19937 state after it


def build(
    seed: int, area: tuple[int, int], center: tuple[int, int], config: CrafterConfig
) -> GeneratedWorld:
    """The world stock generates after `world.reset(seed)` with the player at `center`."""
    random = np.random.RandomState(seed)
    perm, grad = _permutation(random.randint(0, 2**31 - 1))
    width, height = area
    px, py = center
    neg_start, water_raw, mountain_raw = _noise_fields(perm, grad, width, height, px, py)
    start = 1 / (1 + np.exp(neg_start))
    biome = _BIOMES[config.target_biome]
    thresholds = tuple(config.threshold(name) for name in ("coal", "iron", "diamond", "tree"))
    authors = config.world_rules == "authors"
    key, pos = mt19937.export_state(random)
    materials, tunnels = _materials(
        perm, grad, start, water_raw, mountain_raw, key, pos, biome, thresholds, authors
    )
    spawns = _creatures(materials, tunnels, key, pos, px, py, authors)
    return GeneratedWorld(materials, spawns, (key, pos))


def install(world, built: GeneratedWorld) -> np.ndarray:
    """Put `built` into `world`, just reset with its seed; returns the creatures to add.
    `world.random` continues from where generation left it, as in stock."""
    mt19937.import_state(world.random, *built.random_state)
    world._mat_map[:] = built.materials
    return built.spawns


_GRADIENT_SLOTS = len(GRADIENTS3) / 3  # a float, as opensimplex computes it


@numba.njit(cache=True)
def _permutation(seed):
    """`opensimplex.OpenSimplex(seed)`'s permutation tables (0.4.5 `_init`), compiled:
    int64 products wrap as `ctypes.c_int64` does; the modulo is split so that, unlike a
    wrapping `seed + 31`, it equals Python's on unbounded integers."""
    perm = np.zeros(256, np.int64)
    grad = np.zeros(256, np.int64)
    source = np.arange(256)
    for _ in range(3):
        seed = seed * 6364136223846793005 + 1442695040888963407
    for i in range(255, -1, -1):
        seed = seed * 6364136223846793005 + 1442695040888963407
        r = (seed % (i + 1) + 31 % (i + 1)) % (i + 1)
        perm[i] = source[r]
        grad[i] = int((perm[i] % _GRADIENT_SLOTS) * 3)
        source[r] = source[i]
    return perm, grad


@numba.njit(cache=True)
def _noise(perm, grad, x, y, z, size):
    return _noise3(x / size, y / size, z, perm, grad)


@numba.njit(cache=True)
def _noise_fields(perm, grad, width, height, px, py):
    """Stock's start-area value before the sigmoid (negated), raw water and mountain noise."""
    neg_start = np.empty((width, height))
    water = np.empty((width, height))
    mountain = np.empty((width, height))
    for x in range(width):
        for y in range(height):
            start = 4 - np.sqrt(float((x - px) ** 2 + (y - py) ** 2))
            neg_start[x, y] = -(start + 2 * _noise(perm, grad, x, y, 8, 3))
            water[x, y] = _noise(perm, grad, x, y, 3, 15) + 0.15 * _noise(perm, grad, x, y, 3, 5)
            value = _noise(perm, grad, x, y, 0, 15) + 0.3 * _noise(perm, grad, x, y, 0, 5)
            mountain[x, y] = value / 1.3
    return neg_start, water, mountain


@numba.njit(cache=True)
def _materials(
    perm, grad, start, water_raw, mountain_raw, key, pos, biome_rule, thresholds, authors
):
    """Stock `_set_material` over the area in stock's order, with EnvGen's settings:
    `biome_rule` is a `_BIOMES` value, `thresholds` are coal's, iron's, diamond's and
    tree's, and `authors` takes coal and iron by `mountain > 0.18` and the draw alone."""
    biome, start_threshold, start_material = biome_rule
    coal_threshold, iron_threshold, diamond_threshold, tree_threshold = thresholds
    width, height = start.shape
    materials = np.zeros((width, height), np.uint8)
    tunnels = np.zeros((width, height), np.bool_)
    for x in range(width):
        for y in range(height):
            water = water_raw[x, y] + 0.1
            water -= 2 * start[x, y]
            mountain = mountain_raw[x, y]
            mountain -= 4 * start[x, y] + 0.3 * water
            if biome == 2:
                mountain = abs(mountain) * 2
                water *= 0.1
            elif biome == 3:
                mountain *= 0.1
            elif biome == 1:
                water *= 0.1
                mountain *= 0.1
            if start[x, y] > start_threshold:
                material = start_material
            elif mountain > 0.15:
                if _noise(perm, grad, x, y, 6, 7) > 0.15 and mountain > 0.3:
                    material = _PATH
                elif _noise3((2 * x) / 3, (y / 5) / 3, 7, perm, grad) > 0.4:
                    material = _PATH
                    tunnels[x, y] = True
                elif _noise3((x / 5) / 3, (2 * y) / 3, 7, perm, grad) > 0.4:
                    material = _PATH
                    tunnels[x, y] = True
                elif (
                    mountain > 0.18 if authors else _noise(perm, grad, x, y, 1, 8) > 0
                ) and mt19937.uniform(key, pos) > coal_threshold:
                    material = _COAL
                elif (
                    mountain > 0.18 if authors else _noise(perm, grad, x, y, 2, 6) > 0.4
                ) and mt19937.uniform(key, pos) > iron_threshold:
                    material = _IRON
                elif mountain > 0.18 and mt19937.uniform(key, pos) > diamond_threshold:
                    material = _DIAMOND
                elif mountain > 0.3 and _noise(perm, grad, x, y, 6, 5) > 0.35:
                    material = _LAVA
                else:
                    material = _STONE
            elif 0.25 < water <= 0.35 and _noise(perm, grad, x, y, 4, 9) > -0.2:
                material = _SAND
            elif 0.3 < water:
                material = _WATER
            elif _noise(perm, grad, x, y, 5, 7) > 0 and mt19937.uniform(key, pos) > tree_threshold:
                material = _TREE
            else:
                material = _GRASS
            materials[x, y] = material
    return materials, tunnels


@numba.njit(cache=True)
def _creatures(materials, tunnels, key, pos, px, py, authors):
    """Stock `_set_object` over the area: the creatures to add, in order. `authors`:
    skeletons only beyond distance 10 (the fork's `max(min_dist, 10)`), tested before the
    draw as the fork's condition chain does."""
    width, height = materials.shape
    spawns = np.empty((width * height, 3), np.int64)
    count = 0
    for x in range(width):
        for y in range(height):
            material = materials[x, y]
            if material != _GRASS and material != _PATH and material != _SAND:
                continue
            dist = np.sqrt(float((x - px) ** 2 + (y - py) ** 2))
            kind = -1
            if dist > 3 and material == _GRASS and mt19937.uniform(key, pos) > 0.985:
                kind = COW
            elif dist > 10 and mt19937.uniform(key, pos) > 0.993:
                kind = ZOMBIE
            elif (
                (dist > 10 or not authors)
                and material == _PATH
                and tunnels[x, y]
                and mt19937.uniform(key, pos) > 0.95
            ):
                kind = SKELETON
            if kind >= 0:
                spawns[count, 0] = kind
                spawns[count, 1] = x
                spawns[count, 2] = y
                count += 1
    return spawns[:count]
