"""Pictures of a config's world: the whole map and the agent's first view, for figures."""

from __future__ import annotations

import numpy as np

from envgen.envs.crafter import render
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.crafter.env import CrafterEnv


def render_world_map(config: CrafterConfig, seed: int) -> np.ndarray:
    """The first episode's whole map under `config` and `seed`, in daylight, in observation
    tiles: (64 * 7, 64 * 7, 3) uint8, rows = y, columns = x (like observations)."""
    env = CrafterEnv(config, seed=seed)
    env.reset()
    world = env._world
    atlas = render.atlas()
    unit = render.UNIT
    width, height = world.area
    image = np.zeros((height * unit, width * unit, 3), np.uint8)
    for x in range(width):
        for y in range(height):
            material = world._mat_map[x, y]
            obj = world._objects[world._obj_map[x, y]]
            if obj is None:
                tile = atlas["materials"][material]
            else:
                tile = atlas["objects"][render.TEXTURE_INDEX[obj.texture], material]
            image[y * unit : (y + 1) * unit, x * unit : (x + 1) * unit] = tile.transpose(1, 0, 2)
    return image


def preview_image(config: CrafterConfig, seed: int) -> np.ndarray:
    """The world map and, scaled up to the same height, the agent's first observation."""
    world_map = render_world_map(config, seed)
    first_obs, _ = CrafterEnv(config, seed=seed).reset()
    scale = world_map.shape[0] // first_obs.shape[0]
    view = np.repeat(np.repeat(first_obs, scale, axis=0), scale, axis=1)
    pad = np.full((world_map.shape[0], world_map.shape[1] // 32, 3), 255, np.uint8)
    view = np.pad(view, ((0, world_map.shape[0] - view.shape[0]), (0, 0), (0, 0)))
    return np.concatenate([world_map, pad, view], axis=1)
