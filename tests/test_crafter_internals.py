"""The pieces that make CrafterEnv exact: RNG stream, noise permutation, PIL arithmetic."""

from __future__ import annotations

import json

import numpy as np
from opensimplex.internals import _init
from PIL import Image, ImageEnhance

from envgen.cli import main
from envgen.envs.crafter import CrafterConfig, mt19937, render
from envgen.envs.crafter.preview import render_world_map
from envgen.envs.crafter.worldgen import _permutation


def test_compiled_uniform_continues_numpy_stream() -> None:
    random = np.random.RandomState(2024)
    random.randint(0, 2**31 - 1)
    key, pos = mt19937.export_state(random)
    ours = [mt19937.uniform(key, pos) for _ in range(1500)]  # crosses two twists
    reference = np.random.RandomState(2024)
    reference.randint(0, 2**31 - 1)
    assert np.array_equal(ours, reference.uniform(size=1500))
    mt19937.import_state(random, key, pos)
    assert random.uniform() == reference.uniform()


def test_compiled_permutation_equals_opensimplex() -> None:
    for seed in [0, 1, 2**31 - 2, *np.random.RandomState(0).randint(0, 2**31 - 1, 50)]:
        perm, grad = _init(int(seed))
        ours = _permutation(int(seed))
        assert np.array_equal(perm, ours[0]) and np.array_equal(grad, ours[1])


def test_pil_color_enhance_formula() -> None:
    """render.py's RGB->L and float32 blend reproduce ImageEnhance.Color(0.4)."""
    image = np.random.RandomState(1).randint(0, 256, (128, 128, 3)).astype(np.uint8)
    expected = np.array(ImageEnhance.Color(Image.fromarray(image)).enhance(0.4))
    rgb = image.astype(np.int64)
    gray = (rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 32768) >> 16
    assert np.array_equal(np.array(Image.fromarray(image).convert("L")), gray)
    fade = np.vectorize(lambda v, g: int(render._fade(np.uint8(v), np.int32(g))))
    assert np.array_equal(fade(image, gray[..., None]), expected)


def test_world_map_and_preview_cli(tmp_path) -> None:
    world_map = render_world_map(CrafterConfig(target_biome="beaches"), seed=3)
    assert world_map.shape == (64 * render.UNIT, 64 * render.UNIT, 3)
    config = tmp_path / "env.json"
    config.write_text(json.dumps({"environment_settings": {"target_biome": "mountain"}}))
    out = tmp_path / "preview.png"
    assert main(["envs", "preview", str(config), "-o", str(out), "--seed", "2"]) == 0
    assert Image.open(out).size[1] == world_map.shape[0]
