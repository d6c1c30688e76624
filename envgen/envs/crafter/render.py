"""Crafter's 64x64 observation from a precomputed tile atlas, pixel-identical to stock.

Stock `crafter.Env.render` draws 63 tiles and every object through NumPy slices and PIL every step
(~1 ms). Here the pixels that can occur are computed once by stock's own code (material tiles by
`Textures.get`; each object texture alpha-blended onto each material tile by `engine._draw_alpha`,
as an object sits alone on its tile; inventory cells by `ItemView` per slot and amount), then
composed in numba. Lighting redoes stock's `LocalView._light`/`_sleep` per pixel in the same float64
order, with PIL's RGB->L conversion and float32 `Image.blend` for `ImageEnhance.Color`; the caller
draws the night noise from `world.random` with stock's exact call.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from crafter import constants, engine

OBJECT_TEXTURES = tuple(
    "player-left player-right player-up player-down player-sleep cow zombie skeleton "
    "arrow-left arrow-right arrow-up arrow-down plant plant-ripe fence".split()
)
TEXTURE_INDEX = {name: index for index, name in enumerate(OBJECT_TEXTURES)}
VIEW = (9, 9)  # stock crafter.Env's view, in tiles
SIZE = 64  # stock observation size, in pixels
UNIT = SIZE // VIEW[0]  # 7 pixels per tile
ITEM_ROWS = int(np.ceil(len(constants.items) / VIEW[0]))
LOCAL_GRID = (VIEW[0], VIEW[1] - ITEM_ROWS)  # the 9x7 tiles around the player
MAX_AMOUNT = 10  # amounts above 9 show stock's 'unknown' texture


@functools.cache
def atlas() -> dict[str, np.ndarray]:
    """The tile atlas at the default unit size, built once per process by stock code."""
    textures = engine.Textures(constants.root / "assets")
    unit = (UNIT, UNIT)
    names = [None, *constants.materials]
    materials = np.stack([textures.get(name, unit)[..., :3] for name in names])
    objects = np.empty((len(OBJECT_TEXTURES), len(names), UNIT, UNIT, 3), np.uint8)
    for t, texture_name in enumerate(OBJECT_TEXTURES):
        texture = textures.get(texture_name, unit)
        for m in range(len(names)):
            tile = materials[m].copy()
            engine._draw_alpha(tile, (0, 0), texture)
            objects[t, m] = tile
    item_view = engine.ItemView(textures, [VIEW[0], ITEM_ROWS])
    items = np.zeros((len(constants.items), MAX_AMOUNT + 1, UNIT, UNIT, 3), np.uint8)
    for slot, name in enumerate(constants.items):
        for amount in range(1, MAX_AMOUNT + 1):
            inventory = {other: 0 for other in constants.items}
            inventory[name] = amount
            panel = item_view(inventory, np.array((UNIT, UNIT)))
            x, y = (slot % VIEW[0]) * UNIT, (slot // VIEW[0]) * UNIT
            items[slot, amount] = panel[x : x + UNIT, y : y + UNIT]
    shape = (LOCAL_GRID[0] * UNIT, LOCAL_GRID[1] * UNIT)
    # Stock LocalView._vignette(shape, stddev=0.5), same NumPy expression.
    xs, ys = np.meshgrid(np.linspace(-1, 1, shape[0]), np.linspace(-1, 1, shape[1]))
    vignette = 1 - np.exp(-0.5 * (xs**2 + ys**2) / (0.5**2)).T
    return {"materials": materials, "objects": objects, "items": items, "vignette": vignette}


NOISE_SHAPE = (LOCAL_GRID[0] * UNIT, LOCAL_GRID[1] * UNIT)


@numba.njit(cache=True)
def render(out, mat_map, obj_map, obj_texture, px, py, daylight, sleeping, noise, inventory, tiles):
    """Write the observation (SIZE, SIZE, 3) uint8 into `out`, as stock `Env.render`.
    `obj_texture[i]` is the texture index of object i in `obj_map`'s numbering (read only
    for objects in view); `noise` (NOISE_SHAPE) is read only when daylight < 0.5; `tiles`
    is the atlas's (materials, objects, items, vignette)."""
    materials, objects, items, vignette = tiles
    grid_w, grid_h = 9, 7
    unit = materials.shape[1]
    n_mat = materials.shape[0]
    width, height = mat_map.shape
    local = np.empty((grid_w * unit, grid_h * unit, 3), np.uint8)
    local[:] = 127
    keys = np.zeros((grid_w, grid_h), np.int64)  # which tile: 0 = outside the area
    for gx in range(grid_w):
        for gy in range(grid_h):
            x, y = px + gx - grid_w // 2, py + gy - grid_h // 2
            if x < 0 or x >= width or y < 0 or y >= height:
                continue
            material = mat_map[x, y]
            index = obj_map[x, y]
            if index > 0:
                tile = objects[obj_texture[index], material]
                keys[gx, gy] = 1 + n_mat + obj_texture[index] * n_mat + material
            else:
                tile = materials[material]
                keys[gx, gy] = 1 + material
            local[gx * unit : (gx + 1) * unit, gy * unit : (gy + 1) * unit] = tile
    out[:] = 0
    if daylight < 0.5:  # night noise: every pixel differs
        amount = 2 * (0.5 - daylight)
        for i in range(local.shape[0]):
            for j in range(local.shape[1]):
                r, g, b = local[i, j, 0], local[i, j, 1], local[i, j, 2]
                mask = amount * vignette[i, j]
                nr = np.uint8((1 - mask) * r + mask * noise[i, j])
                ng = np.uint8((1 - mask) * g + mask * noise[i, j])
                nb = np.uint8((1 - mask) * b + mask * noise[i, j])
                out[j, i, 0], out[j, i, 1], out[j, i, 2] = _light(
                    r, g, b, nr, ng, nb, daylight, sleeping
                )
    else:  # lighting is a function of the tile: light each distinct tile once
        lit = np.empty((1 + n_mat + objects.shape[0] * n_mat, unit, unit, 3), np.uint8)
        done = np.zeros(lit.shape[0], np.bool_)
        for gx in range(grid_w):
            for gy in range(grid_h):
                key = keys[gx, gy]
                if not done[key]:
                    done[key] = True
                    for i in range(unit):
                        for j in range(unit):
                            r = local[gx * unit + i, gy * unit + j, 0]
                            g = local[gx * unit + i, gy * unit + j, 1]
                            b = local[gx * unit + i, gy * unit + j, 2]
                            lit[key, i, j, 0], lit[key, i, j, 1], lit[key, i, j, 2] = _light(
                                r, g, b, r, g, b, daylight, sleeping
                            )
                for i in range(unit):
                    for j in range(unit):
                        for k in range(3):
                            out[gy * unit + j, gx * unit + i, k] = lit[key, i, j, k]
    top = grid_h * unit
    for slot in range(inventory.shape[0]):
        count = min(inventory[slot], items.shape[1] - 1)
        if count < 1:
            continue
        x0, y0 = (slot % grid_w) * unit, top + (slot // grid_w) * unit
        for i in range(unit):
            for j in range(unit):
                for k in range(3):
                    out[y0 + j, x0 + i, k] = items[slot, count, i, j, k]


@numba.njit(cache=True, inline="always")
def _light(r, g, b, nr, ng, nb, daylight, sleeping):
    """Stock `LocalView._light` (and `_sleep`) for one pixel (r, g, b) whose noisy
    version is (nr, ng, nb); the same float64 operations in the same order."""
    gray = _gray(nr, ng, nb)
    lr = daylight * r + (1 - daylight) * (0.5 * _fade(nr, gray) + 0.5 * 0.0)
    lg = daylight * g + (1 - daylight) * (0.5 * _fade(ng, gray) + 0.5 * 16.0)
    lb = daylight * b + (1 - daylight) * (0.5 * _fade(nb, gray) + 0.5 * 64.0)
    if sleeping:
        gray = _gray(np.uint8(lr), np.uint8(lg), np.uint8(lb))
        lr = 0.5 * gray + 0.5 * 0.0
        lg = 0.5 * gray + 0.5 * 0.0
        lb = 0.5 * gray + 0.5 * 16.0
    return np.uint8(lr), np.uint8(lg), np.uint8(lb)


@numba.njit(cache=True, inline="always")
def _gray(r, g, b):
    """PIL's RGB -> L conversion."""
    return (np.int32(r) * 19595 + np.int32(g) * 38470 + np.int32(b) * 7471 + 32768) >> 16


@numba.njit(cache=True, inline="always")
def _fade(value, gray):
    """PIL's `ImageEnhance.Color(...).enhance(0.4)` on one channel: a float32 blend."""
    return np.uint8(np.float32(gray) + np.float32(0.4) * np.float32(np.int32(value) - gray))
