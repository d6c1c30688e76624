"""Parameter names as the LLM sees them: real, or obfuscated for the ablation.

The paper's obfuscated-prompt ablation shows parameter1..5, optionA..G and item1..12
(docs/paper.md, "Baselines and ablations"). A `NameMap` hides real names in a prompt or
schema and reveals them in the reply, so the rest of the package sees real names only.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from typing import Any


class NameMap:
    """A bijection real name <-> shown name; the identity map when built empty."""

    def __init__(self, shown: Mapping[str, str]):
        self._shown = dict(shown)
        self._real = {_fold(v): k for k, v in shown.items()}
        if len(self._real) != len(self._shown):
            raise ValueError("obfuscated names must be distinct")
        longest_first = sorted(self._shown, key=len, reverse=True)
        self._pattern = (
            re.compile(r"\b(" + "|".join(map(re.escape, longest_first)) + r")\b")
            if longest_first
            else None
        )

    @property
    def is_identity(self) -> bool:
        return not self._shown

    def show(self, name: str) -> str:
        """The name the LLM sees for a real name."""
        return self._shown.get(name, name)

    def hide(self, text: str) -> str:
        """Replace every real name in free text (e.g. an error message) by its shown name."""
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: self._shown[m.group(1)], text)

    def reveal(self, value: Any) -> Any:
        """Map shown names back to real ones in keys and string values, recursively."""
        if self.is_identity:
            return value
        if isinstance(value, Mapping):
            return {self._reveal_name(k): self.reveal(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.reveal(v) for v in value]
        if isinstance(value, str):
            return self._reveal_name(value)
        return value

    def _reveal_name(self, name: Any) -> Any:
        return self._real.get(_fold(name), name) if isinstance(name, str) else name


def obfuscated_names(
    parameters: Iterable[str], options: Iterable[str], items: Iterable[str]
) -> NameMap:
    """parameter1.., optionA.., item1.. in the given orders (options de-duplicated)."""
    unique_options = list(dict.fromkeys(options))
    if len(unique_options) > len(string.ascii_uppercase):
        raise ValueError("at most 26 options can be obfuscated as optionA..optionZ")
    return NameMap(
        {name: f"parameter{i}" for i, name in enumerate(parameters, start=1)}
        | {name: f"option{string.ascii_uppercase[k]}" for k, name in enumerate(unique_options)}
        | {name: f"item{i}" for i, name in enumerate(items, start=1)}
    )


def _fold(name: str) -> str:
    """Case, spaces, dashes and underscores do not distinguish names ("Option A")."""
    return re.sub(r"[\s_-]+", "", name).lower()
