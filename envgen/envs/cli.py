"""`envgen envs preview CONFIG.json -o out.png`: look at the world a config makes."""

from __future__ import annotations

import argparse
import json
import pathlib

from envgen.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("envs", help="inspect Crafter-EnvGen environments")
    commands = parser.add_subparsers(dest="envs_command", metavar="COMMAND", required=True)
    preview = commands.add_parser(
        "preview",
        help="render a config's whole 64x64 map and the agent's first view to a PNG",
    )
    preview.add_argument("config", type=pathlib.Path, help="CrafterConfig JSON file")
    preview.add_argument("-o", "--output", type=pathlib.Path, required=True, help="PNG path")
    preview.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    preview.set_defaults(func=_preview)


def _preview(args: argparse.Namespace) -> int:
    from PIL import Image

    from envgen.envs.crafter.config import CrafterConfig
    from envgen.envs.crafter.preview import preview_image

    try:
        data = json.loads(args.config.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(str(args.config), f"cannot read a JSON config: {exc}") from exc
    config = CrafterConfig.from_dict(data, path=args.config.name)
    for warning in config.warnings:
        print(f"warning: {warning}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(preview_image(config, args.seed)).save(args.output)
    print(f"wrote {args.output} ({config.target_biome} biome, seed {args.seed})")
    return 0
