"""`CrafterEnv`: stock Crafter's game with EnvGen's world settings, deterministic and fast.

The episode logic follows `crafter.Env` (reset, step, `_balance_chunk`) step for step, on
stock's game objects (`world.py`), compiled world generation (`worldgen.py`) and an atlas
renderer (`render.py`). With the default `CrafterConfig` an episode equals a
`crafter.Env(seed)` made deterministic (`determinism`): same world, observations, rewards
and achievements (tests/test_crafter_fidelity.py).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from crafter import constants

from envgen.envs.crafter import render, worldgen
from envgen.envs.crafter.config import CrafterConfig
from envgen.envs.crafter.world import Arrow, Cow, Plant, Player, Skeleton, Vec, World, Zombie

AREA = (64, 64)
CENTER = (AREA[0] // 2, AREA[1] // 2)  # the player's start
CHUNK = (12, 12)
UPDATE_RADIUS = 2 * max(render.VIEW)  # stock: objects closer than this are updated
ACTIONS: tuple[str, ...] = tuple(constants.actions)
_HOSTILE = {worldgen.ZOMBIE: Zombie, worldgen.SKELETON: Skeleton}
# Stock SemanticView's object ids, after the material ids, in this order.
_SEMANTIC_CLASSES = (Player, Cow, Zombie, Skeleton, Arrow, Plant)


def _world_seed(seed: int, episode: int) -> int:
    """Stock `crafter.Env`'s world seed of an episode."""
    return hash((seed, episode)) % (2**31 - 1)


@functools.cache
def _daylight(step: int) -> float:
    """Stock `Env._update_time`, with NumPy's cos as stock calls it."""
    progress = (step / 300) % 1 + 0.3
    return float(1 - np.abs(np.cos(np.pi * progress)) ** 3)


class CrafterEnv:
    """One Crafter world per episode under `config`; gymnasium-style API. Episode k (from
    1) after `reset(seed=s)` or construction with `seed=s` uses world seed `hash((s, k)) %
    (2**31 - 1)`, as `crafter.Env(seed=s)`. `length=None` takes `config.length`.
    `semantic=True` adds stock's semantic map as `info["semantic"]`."""

    num_actions = len(ACTIONS)
    observation_shape = (render.SIZE, render.SIZE, 3)

    def __init__(
        self,
        config: CrafterConfig | None = None,
        seed: int = 0,
        length: int | None = None,
        semantic: bool = False,
    ):
        self.config = config if config is not None else CrafterConfig()
        self.length = self.config.length if length is None else int(length)
        if self.length < 1:
            raise ValueError(f"length: must be a positive number of steps, got {length}")
        self._seed = int(seed)
        self._semantic = semantic
        self._episode = 0
        self._step = 0
        self._world = World(AREA, constants.materials, CHUNK)
        self._player: Player | None = None
        self._last_health = 0
        self._unlocked: set[str] = set()
        self._next_world: tuple[tuple, worldgen.GeneratedWorld] | None = None
        self._atlas = render.atlas()
        self._textures = np.zeros(1024, np.int64)
        self._obs = np.zeros(self.observation_shape, np.uint8)

    def set_config(self, config: CrafterConfig, length: int | None = None) -> None:
        """Use `config` from the next `reset()` on; the episode count (and seeds) go on."""
        self.config = config
        self.length = config.length if length is None else int(length)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Start the next episode; `seed` re-seeds and restarts the episode count."""
        if seed is not None:
            self._seed = int(seed)
            self._episode = 0
        self.prepare_next_world()  # unless a vector env prepared it ahead
        (world_seed, _), built = self._next_world
        self._next_world = None
        self._episode += 1
        self._step = 0
        world = self._world
        world.reset(seed=world_seed)
        world.daylight = _daylight(0)
        self._player = player = Player(world, CENTER)
        self._last_health = player.health
        world.add(player)
        self._unlocked = set()
        for kind, x, y in worldgen.install(world, built).tolist():
            if kind == worldgen.COW:
                world.add(Cow(world, (x, y)))
            else:
                world.add(_HOSTILE[kind](world, (x, y), player))
        for name, count in self.config.inventory:
            player.inventory[name] = count
        return self._render(), self._info(dead=False)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Advance one step: (obs, reward, terminated = dead, truncated = length reached, info)."""
        player, world = self._player, self._world
        if player is None:
            raise RuntimeError("step() before reset(): call reset() first")
        if not 0 <= action < len(ACTIONS):
            raise ValueError(
                f"action: expected an integer in [0, {len(ACTIONS) - 1}], got {action}"
            )
        self._step += 1
        world.daylight = _daylight(self._step)
        player.action = ACTIONS[action]
        # Stock updates, in world order, the objects present before the step that are
        # closer than UPDATE_RADIUS to the player at the time; the player is always
        # first, and only its own update moves it.
        objs = [obj for obj in world._objects if obj]
        player.update()
        px, py = player.pos
        for obj in objs[1:]:
            x, y = obj.pos
            if abs(x - px) + abs(y - py) < UPDATE_RADIUS:
                obj.update()
        if self._step % 10 == 0:
            self._balance()
        obs = self._render()
        reward = (player.health - self._last_health) / 10
        self._last_health = player.health
        unlocked = {name for name, count in player.achievements.items() if count > 0}
        unlocked -= self._unlocked
        if unlocked:
            self._unlocked |= unlocked
            reward += 1.0
        dead = player.health <= 0
        truncated = not dead and self._step >= self.length
        return obs, reward, dead, truncated, self._info(dead)

    def prepare_next_world(self) -> bool:
        """Generate the next episode's world now, for the next `reset()` to install; False
        if it was ready already. A world depends only on seed, episode and config, so this
        changes only when the work is done: a vector env does it in time it would wait."""
        if self.next_world_ready:
            return False
        world_seed = _world_seed(self._seed, self._episode + 1)
        built = worldgen.build(world_seed, AREA, CENTER, self.config)
        self._next_world = ((world_seed, self.config), built)
        return True

    @property
    def next_world_ready(self) -> bool:
        key = (_world_seed(self._seed, self._episode + 1), self.config)
        return self._next_world is not None and self._next_world[0] == key

    def _info(self, dead: bool) -> dict[str, Any]:
        player = self._player
        info = {
            "inventory": player.inventory.copy(),
            "achievements": player.achievements.copy(),
            "discount": 1 - float(dead),
            "player_pos": player.pos,
        }
        if self._semantic:
            info["semantic"] = self.semantic()
        return info

    def semantic(self) -> np.ndarray:
        """Stock's semantic map: material ids, objects as ids after the materials."""
        world = self._world
        canvas = world._mat_map.copy()
        ids = {cls: len(world._mat_ids) + i for i, cls in enumerate(_SEMANTIC_CLASSES)}
        for obj in world.objects:
            if type(obj) in ids:
                canvas[obj.pos] = ids[type(obj)]
        return canvas

    def _render(self) -> np.ndarray:
        world, player = self._world, self._player
        px, py = player.pos
        half_w, half_h = render.LOCAL_GRID[0] // 2, render.LOCAL_GRID[1] // 2
        window = world._obj_map[
            max(px - half_w, 0) : px + half_w + 1, max(py - half_h, 0) : py + half_h + 1
        ]
        if len(world._objects) > len(self._textures):
            self._textures = np.zeros(2 * len(world._objects), np.int64)
        for index in window[window > 0].tolist():
            self._textures[index] = render.TEXTURE_INDEX[world._objects[index].texture]
        noise = _NO_NOISE
        if world.daylight < 0.5:
            noise = world.random.uniform(32, 127, render.NOISE_SHAPE)
        inventory = np.fromiter(player.inventory.values(), np.int64, len(player.inventory))
        atlas = self._atlas
        tiles = (atlas["materials"], atlas["objects"], atlas["items"], atlas["vignette"])
        render.render(
            self._obs,
            world._mat_map,
            world._obj_map,
            self._textures,
            px,
            py,
            world.daylight,
            player.sleeping,
            noise,
            inventory,
            tiles,
        )
        return self._obs.copy()

    def _balance(self) -> None:
        """Stock `Env._balance_chunk` over every chunk that ever held an object, in order: per
        chunk, stock's `_balance_object` for zombies, skeletons and cows (the authors' fork: cows
        first), same conditions and draws. Tile counts come from one compiled pass per material,
        creature counts from one pass per chunk (a rule only changes its own kind)."""
        world, player = self._world, self._player
        random = world.random
        light = world.daylight
        spaces = {
            name: _chunk_counts(world._mat_map, worldgen.MATERIAL_IDS[name], *CHUNK).tolist()
            for name in ("grass", "path")
        }
        for chunk, objs in world.chunks.items():
            cx, cy = chunk[0] // CHUNK[0], chunk[2] // CHUNK[1]
            counts = dict.fromkeys(_BALANCED, 0)
            for obj in objs:
                if type(obj) in counts:
                    counts[type(obj)] += 1
            for rule in _BALANCE_ORDER[self.config.world_rules]:
                count = counts[rule.cls]
                target_min, target_max = rule.targets(spaces[rule.material][cx][cy], light)
                if count < int(target_min) and random.uniform() < rule.spawn_prob:
                    self._spawn(chunk, rule)
                elif count > int(target_max) and random.uniform() < rule.despawn_prob:
                    creatures = [obj for obj in objs if type(obj) is rule.cls]
                    obj = creatures[random.randint(0, len(creatures))]
                    if player.distance(obj.pos) >= rule.despawn_dist:
                        world.remove(obj)

    def _spawn(self, chunk: tuple[int, int, int, int], rule: _Balance) -> None:
        """Stock's spawn branch: a random tile of the rule's material in the chunk."""
        world, player = self._world, self._player
        xmin, xmax, ymin, ymax = chunk
        mask = world._mat_map[xmin:xmax, ymin:ymax] == worldgen.MATERIAL_IDS[rule.material]
        xs, ys = np.nonzero(mask)
        i = world.random.randint(0, len(xs))
        pos = Vec((xmin + xs[i], ymin + ys[i]))
        if world[pos][1] is None and player.distance(pos) >= rule.spawn_dist:
            if rule.cls is Cow:
                world.add(Cow(world, pos))
            else:
                world.add(rule.cls(world, pos, player))


@dataclasses.dataclass(frozen=True)
class _Balance:
    """One creature's spawn/despawn rule in stock `Env._balance_chunk`."""

    cls: type  # Creature class
    material: str  # Material it spawns on; its count in the chunk is the rule's `space`
    spawn_dist: int  # Minimum distance from the player to spawn
    despawn_dist: int  # Minimum distance from the player to despawn
    spawn_prob: float  # Chance per balance to spawn when below the minimum
    despawn_prob: float  # Chance per balance to despawn when above the maximum
    # (space, daylight) -> (target minimum, target maximum) creatures in the chunk
    targets: Callable[[int, float], tuple[float, float]]


# Stock's three rules, in stock's order (zombies, skeletons, cows).
_BALANCE_RULES = (
    _Balance(
        Zombie,
        "grass",
        6,
        0,
        0.3,
        0.4,
        lambda space, light: (0 if space < 50 else 3.5 - 3 * light, 3.5 - 3 * light),
    ),
    _Balance(Skeleton, "path", 7, 7, 0.1, 0.1, lambda space, light: (0 if space < 6 else 1, 2)),
    _Balance(
        Cow, "grass", 5, 5, 0.01, 0.1, lambda space, light: (0 if space < 30 else 1, 1.5 + light)
    ),
)
_BALANCED = tuple(rule.cls for rule in _BALANCE_RULES)
# The authors' fork balances cows first, then zombies and skeletons (its env.py), which
# changes the order of the world's random draws.
_BALANCE_ORDER = {"stock": _BALANCE_RULES, "authors": (_BALANCE_RULES[2], *_BALANCE_RULES[:2])}


@numba.njit(cache=True)
def _chunk_counts(mat_map, material, size_x, size_y):
    """Tiles of `material` per chunk, indexed by chunk (x, y): stock's `mask().sum()`."""
    width, height = mat_map.shape
    counts = np.zeros(((width + size_x - 1) // size_x, (height + size_y - 1) // size_y), np.int64)
    for x in range(width):
        for y in range(height):
            if mat_map[x, y] == material:
                counts[x // size_x, y // size_y] += 1
    return counts


_NO_NOISE = np.zeros(render.NOISE_SHAPE)
