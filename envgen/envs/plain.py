"""Level configs as plain data (dicts of str, int, lists): how checkpoints store them.

A checkpoint holds the mixture a run trains on and every running env's config as plain
values, never pickled objects, so reading one runs no code (envgen.agents.checkpoint).
`config_from_plain` accepts only the config classes named here, with only their own
fields, each of its declared kind.
"""

from __future__ import annotations

import dataclasses
from typing import Any

KINDS = ("crafter", "heist")


def _config_class(kind: str) -> type:
    """The config class of a kind, imported when first asked: the packages
    envgen.envs.crafter and envgen.envs.heist import their env modules, which import this
    one (a circle at the top), and a Crafter run's env workers need not load Heist's."""
    if kind == "crafter":
        from envgen.envs.crafter.config import CrafterConfig  # lazy: see the docstring

        return CrafterConfig
    from envgen.envs.heist.config import HeistConfig  # lazy: see the docstring

    return HeistConfig


def config_to_plain(config: Any) -> dict[str, Any]:
    """{"kind": ..., field: value, ...} of a CrafterConfig or HeistConfig."""
    for kind in KINDS:
        if type(config) is _config_class(kind):
            fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
            fields = {k: _plain_value(v) for k, v in fields.items()}
            return {"kind": kind, **fields}
    raise TypeError(f"not a level config: {type(config).__name__}")


def config_from_plain(data: Any) -> Any:
    """The config `config_to_plain` gave; ValueError on anything else."""
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        kinds = ", ".join(KINDS)
        raise ValueError(f"expected a level config ({kinds}), got {type(data).__name__}")
    cls = _config_class(data["kind"])
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k != "kind"}
    if set(values) != set(fields):
        raise ValueError(f"{data['kind']} config with fields {sorted(values)}")
    kwargs = {}
    for name, value in values.items():
        default = fields[name].default
        if default is dataclasses.MISSING:  # default_factory: a list of strings (warnings)
            default = fields[name].default_factory()
        kwargs[name] = _typed(name, value, default)
    return cls(**kwargs)


def mixture_to_plain(mixture: Any) -> Any:
    """(configs, weights or None) -> plain; None stays None."""
    if mixture is None:
        return None
    configs, weights = mixture
    return {
        "configs": [config_to_plain(c) for c in configs],
        "weights": None if weights is None else [float(w) for w in weights],
    }


def mixture_from_plain(data: Any) -> Any:
    """Inverse of `mixture_to_plain`: the (tuple of configs, tuple of weights or None)."""
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"configs", "weights"}:
        raise ValueError(f"expected a mixture, got {type(data).__name__}")
    weights = data["weights"]
    if weights is not None and not (
        isinstance(weights, list) and all(isinstance(w, float) for w in weights)
    ):
        raise ValueError("mixture weights: expected a list of numbers")
    if not isinstance(data["configs"], list):
        raise ValueError("mixture configs: expected a list")
    configs = tuple(config_from_plain(c) for c in data["configs"])
    return configs, None if weights is None else tuple(weights)


def _plain_value(value: Any) -> Any:
    if isinstance(value, tuple):  # inventory: ((name, count), ...)
        return [list(pair) for pair in value]
    if isinstance(value, list):
        return list(value)
    return value


def _typed(name: str, value: Any, default: Any) -> Any:
    """`value` converted to the kind of the field's default; ValueError if it is not."""
    if isinstance(default, bool) or isinstance(default, str):
        if type(value) is not type(default):
            raise ValueError(f"config field {name}: expected {type(default).__name__}")
        return value
    if isinstance(default, int) or default is None:  # None: an optional int (Heist)
        if value is None and default is None:
            return None
        if type(value) is not int:
            raise ValueError(f"config field {name}: expected an integer")
        return value
    if isinstance(default, tuple):  # inventory pairs
        if not isinstance(value, list) or not all(
            isinstance(p, list) and len(p) == 2 and type(p[0]) is str and type(p[1]) is int
            for p in value
        ):
            raise ValueError(f"config field {name}: expected [name, count] pairs")
        return tuple((p[0], p[1]) for p in value)
    if isinstance(default, list):  # warnings
        if not isinstance(value, list) or not all(type(w) is str for w in value):
            raise ValueError(f"config field {name}: expected a list of strings")
        return list(value)
    raise ValueError(f"config field {name}: unsupported kind {type(default).__name__}")
