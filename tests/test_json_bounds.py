"""Every JSON file the package reads is bounded in size and nesting: one line, no traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envgen import json_input, yaml_input
from envgen.errors import EnvGenError
from envgen.json_input import MAX_DEPTH, JSONInputError, loads, nesting_depth

REPO = Path(__file__).resolve().parents[1]
HEIST_RUN = REPO / "results" / "runs" / "0811a37889ce" / "seed-0"
DEEP = b"[" * 100_000 + b"]" * 100_000  # 200 KB: json.loads raises RecursionError


def _one_line(exc: BaseException, *words: str) -> None:
    text = str(exc)
    assert "\n" not in text, text
    for word in words:
        assert word in text, (word, text)


def test_depth_skips_brackets_inside_strings():
    assert nesting_depth(b'{"a": [1, {"b": "[[[[{{{\\"]]"}]}') == 3
    assert loads(b'{"x": "' + b"[" * 1000 + b'"}', "f") == {"x": "[" * 1000}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (DEEP, "nest 100000 deep"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"more than {MAX_DEPTH}"),
        (b"\xff{", "not JSON"),
        (b"1" * 100, "more than the 10 a JSON file"),
    ],
)
def test_loads_refuses_in_one_line(data, words):
    with pytest.raises(JSONInputError) as err:
        loads(data, "some/file.json", max_bytes=10 if len(data) == 100 else 2**26)
    _one_line(err.value, "some/file.json", words)


@pytest.mark.parametrize(
    ("reader", "error"),
    [(json_input.read, JSONInputError), (yaml_input.read, yaml_input.YAMLInputError)],
)
def test_a_file_reader_refuses_before_reading(tmp_path, monkeypatch, reader, error):
    """Both readers share `files.read_bounded`: an oversized file is never read, and a
    directory is one line, not an `IsADirectoryError` traceback."""
    big = tmp_path / "big"
    big.write_text("1" * 100)
    with monkeypatch.context() as patch:
        patch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"read {self}"))
        with pytest.raises(error) as err:
            reader(big, max_bytes=10)
    _one_line(err.value, str(big), "100 bytes, more than the 10")
    with pytest.raises(error) as err:
        reader(tmp_path)
    _one_line(err.value, str(tmp_path), "cannot be read")
    assert reader(big) == int("1" * 100)


@pytest.mark.parametrize("name", ["manifest.json", "provenance.json", "final_metrics.json"])
def test_deep_json_in_a_run_file_is_one_line(tmp_path, name):
    """Each file as its readers take it: a manifest unsealed, the others resealed over."""
    from envgen.store import read_provenance, seal_run, verify_run
    from envgen.store.run_dir import read_json

    run_dir = tmp_path / "0811a37889ce" / "seed-0"
    shutil.copytree(HEIST_RUN, run_dir)
    (run_dir / name).write_bytes(DEEP)
    if name != "manifest.json":
        seal_run(run_dir)
    readers = {
        "manifest.json": verify_run,
        "provenance.json": read_provenance,
        "final_metrics.json": lambda d: read_json(d / "final_metrics.json"),
    }
    with pytest.raises(EnvGenError) as err:
        readers[name](run_dir)
    _one_line(err.value, str(run_dir / name), "deep")


def test_deep_runs_json_and_cache_entry_are_one_line(tmp_path):
    from envgen.llm.cache import ResponseCache
    from envgen.report.inputs import load_table

    runs = tmp_path / "runs.json"
    runs.write_bytes(DEEP)
    with pytest.raises(EnvGenError) as err:
        load_table(runs)
    _one_line(err.value, str(runs), "deep")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / ("0" * 64 + ".json")).write_bytes(DEEP)
    with pytest.raises(EnvGenError) as err:
        list(ResponseCache(cache).entries())
    _one_line(err.value, "deep")
    assert json.loads(b"[]") == []
