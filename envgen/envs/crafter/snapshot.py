"""A running `CrafterEnv` as plain data, and back: how a checkpoint keeps episodes alive.

The snapshot holds only ints, floats, strings, lists, dicts and NumPy arrays of numbers,
so restoring one runs no code from the file (unlike unpickling the env). Game objects
are stored as their class name (one of `CLASSES`) and attributes, references between
them (the world, its random generator, a zombie's player) as indices into the world's
object list. The world prepared ahead and the texture atlas are rebuilt on demand.
`restore(capture(env))` continues exactly as `env` would (tests/test_crafter_snapshot.py).
"""

from __future__ import annotations

import collections
import copy
import math
from typing import Any

import numpy as np
from crafter import constants

from envgen.envs.crafter import render
from envgen.envs.crafter.config import MAX_LENGTH
from envgen.envs.crafter.determinism import OrderedSet
from envgen.envs.crafter.env import AREA, CHUNK, CrafterEnv
from envgen.envs.crafter.world import Arrow, Cow, Fence, Plant, Player, Skeleton, Vec, World, Zombie
from envgen.envs.plain import config_from_plain, config_to_plain

CLASSES = {cls.__name__: cls for cls in (Player, Cow, Zombie, Skeleton, Arrow, Plant, Fence)}
# CrafterEnv attributes stored as they are (ints, bools, arrays); the others are handled
# one by one below. A new attribute makes `capture` fail until it is listed here.
_ARRAY_DTYPES = {"_textures": np.int64, "_obs": np.uint8}
_PLAIN_ENV = ("length", "_seed", "_semantic", "_episode", "_step", "_last_health", *_ARRAY_DTYPES)
_SPECIAL_ENV = ("config", "_world", "_player", "_unlocked", "_next_world", "_atlas")


def capture(env: CrafterEnv) -> dict[str, Any]:
    """The env's full state as plain data (see the module docstring)."""
    unknown = set(vars(env)) - set(_PLAIN_ENV) - set(_SPECIAL_ENV)
    if unknown:
        raise TypeError(f"CrafterEnv attributes without a snapshot rule: {sorted(unknown)}")
    world = env._world
    index = {id(obj): k for k, obj in enumerate(world._objects) if obj is not None}
    refs = _Refs(world, index)
    return {
        **{name: copy.copy(getattr(env, name)) for name in _PLAIN_ENV},
        "config": config_to_plain(env.config),
        "player": None if env._player is None else refs.encode(env._player),
        "unlocked": sorted(env._unlocked),
        "world": {
            "mat_names": [[k, v] for k, v in world._mat_names.items()],
            "random": _random_state(world.random),
            "daylight": float(world.daylight),
            "mat_map": world._mat_map.copy(),
            "obj_map": world._obj_map.copy(),
            "objects": [None if obj is None else refs.encode_object(obj) for obj in world._objects],
            "chunks": [
                [list(key), [index[id(obj)] for obj in objs]] for key, objs in world._chunks.items()
            ],
        },
    }


def restore(data: Any) -> CrafterEnv:
    """The env `capture` gave; ValueError (or TypeError) on anything malformed."""
    _expect(data, dict, "snapshot")
    config = config_from_plain(data["config"])
    env = CrafterEnv(config, seed=0)
    for name in _PLAIN_ENV:
        dtype = _ARRAY_DTYPES.get(name)
        value = _expect(data[name], int, name) if dtype is None else _array(data[name], name, dtype)
        setattr(env, name, value)
    if env._obs.shape != CrafterEnv.observation_shape:
        raise ValueError(f"_obs: shape {env._obs.shape}")
    if env._textures.ndim != 1 or not len(env._textures):
        raise ValueError("_textures: expected a non-empty 1-d array")
    if not 1 <= env.length <= MAX_LENGTH or min(env._step, env._episode) < 0:
        raise ValueError("length, _step or _episode out of range")
    if not abs(env._last_health) < _SMALL or type(env._semantic) is not bool:
        raise ValueError("_last_health or _semantic out of range")
    unlocked = _expect(data["unlocked"], list, "unlocked")
    env._unlocked = {_exact(name, str, "unlocked") for name in unlocked}

    saved = _expect(data["world"], dict, "world")
    world = World(AREA, constants.materials, CHUNK)
    world.reset()
    world._mat_names = {}
    for pair in _expect(saved["mat_names"], list, "world.mat_names"):
        key, name = _expect(pair, list, "world.mat_names")
        name = None if name is None else _exact(name, str, "world.mat_names")
        world._mat_names[_expect(key, int, "world.mat_names")] = name
    if sorted(world._mat_names) != list(range(len(world._mat_names))) or world._mat_names.get(0):
        raise ValueError("world.mat_names: ids must run 0, 1, ... with 0 unnamed")
    world._mat_ids = {name: key for key, name in world._mat_names.items()}
    world.random = _random_from(saved["random"])
    world.daylight = _exact(saved["daylight"], float, "world.daylight")
    world._mat_map = _array(saved["mat_map"], "world.mat_map", np.uint8, AREA)
    world._obj_map = _array(saved["obj_map"], "world.obj_map", np.uint32, AREA)
    objects_data = _expect(saved["objects"], list, "world.objects")
    if not objects_data or objects_data[0] is not None:
        raise ValueError("world.objects: the first entry must be empty")
    objects: list[Any] = [None]
    for item in objects_data[1:]:
        if item is None:
            objects.append(None)
            continue
        _expect(item, dict, "world.objects")
        cls = CLASSES.get(item["class"]) if isinstance(item.get("class"), str) else None
        if cls is None:
            raise ValueError(f"world.objects: unknown class {item.get('class')!r}")
        objects.append(cls.__new__(cls))
    world._objects = objects
    refs = _Refs(world, {}, objects)
    for k, (obj, item) in enumerate(zip(objects[1:], objects_data[1:], strict=True), 1):
        if obj is not None:
            attrs = _expect(item["attrs"], dict, "world.objects.attrs")
            cls = type(obj)
            if set(attrs) != ATTRIBUTES[cls.__name__]:
                raise ValueError(
                    f"world.objects[{k}]: attributes of a {cls.__name__}: {sorted(attrs)}"
                )
            for key, value in attrs.items():
                obj.__dict__[key] = _checked_attr(key, refs.decode(value), world)
            if int(world._obj_map[obj.pos]) != k:
                raise ValueError(f"world.objects[{k}]: not at its position in world.obj_map")
    obj_map, live = world._obj_map, sum(obj is not None for obj in objects)
    if int(obj_map.max(initial=0)) >= len(objects) or np.count_nonzero(obj_map) != live:
        raise ValueError("world.obj_map: does not match the object list")
    if int(world._mat_map.max(initial=0)) >= len(world._mat_names):
        raise ValueError("world.mat_map: a material id without a name")
    chunks = collections.defaultdict(OrderedSet)
    for pair in _expect(saved["chunks"], list, "world.chunks"):
        key, members = _expect(pair, list, "world.chunks")
        _expect(key, list, "world.chunks")
        chunk = chunks[tuple(_exact(v, int, "world.chunks") for v in key)]
        for k in _expect(members, list, "world.chunks"):
            chunk.add(refs.object(k))
    for key, members in chunks.items():
        if any(world.chunk_key(obj.pos) != key for obj in members):
            raise ValueError(f"world.chunks: an object outside chunk {key}")
    if sum(len(m) for m in chunks.values()) != live:
        raise ValueError("world.chunks: does not hold every object once")
    world._chunks = chunks
    env._world = world
    env._player = None if data["player"] is None else refs.decode(data["player"])
    if env._player is not None and not isinstance(env._player, Player):
        raise ValueError("player: not a Player")
    env._atlas = render.atlas()
    env._next_world = None
    return env


_BASE = {"world", "pos", "random", "inventory", "removed"}
ATTRIBUTES = {
    "Player": _BASE
    | {"_fatigue", "_hunger", "_last_health", "_recover", "_thirst", "achievements"}
    | {"action", "facing", "sleeping"},
    "Cow": _BASE,
    "Zombie": _BASE | {"cooldown", "player"},
    "Skeleton": _BASE | {"player", "reload"},
    "Arrow": _BASE | {"facing"},
    "Plant": _BASE | {"grown"},
    "Fence": _BASE,
}
"""Each game object's attributes (stock crafter's `objects.py`): a snapshot holds these,
no more and no fewer, so no stored attribute can shadow a method."""
_SMALL = 2**31
_INTS = {"_fatigue", "_last_health", "cooldown", "reload", "grown"}
_HALVES = {"_hunger", "_recover", "_thirst"}  # asleep, the game moves them by 0.5


def _checked_attr(name: str, value: Any, world: Any) -> Any:
    """`value` if it is what attribute `name` holds in the game; ValueError otherwise."""
    ok = True
    if name == "world":
        ok = value is world
    elif name == "random":
        ok = value is world.random
    elif name == "player":
        ok = isinstance(value, Player)
    elif name == "pos":
        ok = type(value) is Vec and 0 <= value[0] < AREA[0] and 0 <= value[1] < AREA[1]
    elif name == "facing":
        ok = isinstance(value, tuple) and len(value) == 2 and all(v in (-1, 0, 1) for v in value)
    elif name in ("inventory", "achievements"):
        allowed = constants.items if name == "inventory" else constants.achievements
        ok = isinstance(value, dict) and all(
            k in allowed and type(v) is int and abs(v) < _SMALL for k, v in value.items()
        )
    elif name in ("removed", "sleeping"):
        ok = type(value) is bool
    elif name in _INTS:
        ok = type(value) is int and abs(value) < _SMALL
    elif name in _HALVES:
        ok = type(value) in (int, float) and math.isfinite(value) and abs(value) < _SMALL
    elif name == "action":
        ok = value in constants.actions
    if not ok:
        raise ValueError(f"object attribute {name}: {type(value).__name__} out of place")
    return value


class _Refs:
    """Attribute values <-> plain data; world, generator and objects by reference."""

    def __init__(self, world: Any, index: dict[int, int], objects: list[Any] | None = None):
        self.world, self.index, self.objects = world, index, objects

    def encode(self, value: Any) -> Any:
        if value is None or type(value) in (bool, int, float, str):
            return value
        if type(value) is Vec:
            return {"vec": [value[0], value[1]]}
        if type(value) in (tuple, list):
            return {type(value).__name__: [self.encode(v) for v in value]}
        if type(value) is dict:
            return {"dict": [[k, self.encode(v)] for k, v in value.items()]}
        if value is self.world:
            return {"ref": "world"}
        if value is self.world.random:
            return {"ref": "random"}
        if id(value) in self.index:
            return {"ref": self.index[id(value)]}
        raise TypeError(f"no snapshot rule for a {type(value).__name__} attribute")

    def encode_object(self, obj: Any) -> dict[str, Any]:
        return {
            "class": type(obj).__name__,
            "attrs": {k: self.encode(v) for k, v in vars(obj).items()},
        }

    def decode(self, value: Any) -> Any:
        if value is None or type(value) in (bool, int, float, str):
            return value
        _expect(value, dict, "attribute")
        if len(value) != 1:
            raise ValueError("attribute: malformed value")
        ((tag, inner),) = value.items()
        if tag == "vec":
            x, y = _expect(inner, list, "vec")
            return Vec((_exact(x, int, "vec"), _exact(y, int, "vec")))
        if tag in ("tuple", "list"):
            items = [self.decode(v) for v in _expect(inner, list, tag)]
            return tuple(items) if tag == "tuple" else items
        if tag == "dict":
            out = {}
            for pair in _expect(inner, list, "dict"):
                key, item = _expect(pair, list, "dict")
                if type(key) not in (str, int):
                    raise ValueError("dict: keys must be strings or integers")
                out[key] = self.decode(item)
            return out
        if tag == "ref":
            if inner == "world":
                return self.world
            if inner == "random":
                return self.world.random
            return self.object(inner)
        raise ValueError(f"attribute: unknown tag {tag!r}")

    def object(self, k: Any) -> Any:
        _exact(k, int, "object reference")
        assert self.objects is not None
        if not 0 < k < len(self.objects) or self.objects[k] is None:
            raise ValueError(f"object reference {k} points at no object")
        return self.objects[k]


def _random_state(random: np.random.RandomState) -> dict[str, Any]:
    name, key, pos, has_gauss, gauss = random.get_state(legacy=True)
    assert name == "MT19937"
    return {"key": key.copy(), "pos": int(pos), "has_gauss": int(has_gauss), "gauss": float(gauss)}


def _random_from(data: Any) -> np.random.RandomState:
    _expect(data, dict, "world.random")
    key = _array(data["key"], "world.random.key", np.uint32, (624,))
    pos = _exact(data["pos"], int, "world.random.pos")
    has_gauss = _exact(data["has_gauss"], int, "world.random.has_gauss")
    gauss = _exact(data["gauss"], float, "world.random.gauss")
    random = np.random.RandomState()
    random.set_state(("MT19937", key, pos, has_gauss, gauss))
    return random


def _array(value: Any, name: str, dtype: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.dtype != np.dtype(dtype):
        raise ValueError(f"{name}: expected a {np.dtype(dtype).name} array")
    if shape is not None and value.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {value.shape}")
    return value.copy()


def _expect(value: Any, kind: type, name: str) -> Any:
    """`value` if it is a `kind` (subclasses too); ValueError otherwise."""
    if not isinstance(value, kind):
        raise ValueError(f"{name}: expected {kind.__name__}, got {type(value).__name__}")
    return value


_KIND_WORDS = {int: "an integer", float: "a number", str: "a string"}


def _exact(value: Any, kind: type, name: str) -> Any:
    """`value` if its type is exactly `kind` (so no bool passes as an int); ValueError otherwise."""
    if type(value) is not kind:
        raise ValueError(f"{name}: expected {_KIND_WORDS[kind]}, got {type(value).__name__}")
    return value
