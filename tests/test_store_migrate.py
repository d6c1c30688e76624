"""`python -m envgen.store.migrate`: real provenance kept, bad runs one line, bad roots refused."""

from __future__ import annotations

import json
from pathlib import Path

from envgen.store.migrate import VERSION_1_FINGERPRINTS, main
from envgen.store.provenance import PROVENANCE


def old_run(root: Path, name: str, run_yaml: str | None = "game: crafter\n") -> Path:
    """A run of the time before results versions: fingerprint file, plain logs."""
    run = root / name / "seed-0"
    run.mkdir(parents=True)
    if run_yaml is not None:
        (run / "run.yaml").write_text(run_yaml)
    (run / "final_metrics.json").write_text(json.dumps({"score": 1.0, "global_steps": 64}))
    (run / "code_fingerprint.txt").write_text(VERSION_1_FINGERPRINTS["crafter"] + "\n")
    return run


def test_a_real_provenance_is_never_overwritten(tmp_path, capsys):
    run = old_run(tmp_path, "aaa")
    real = {"game": "crafter", "results_version": 1, "sessions": [{"event": "start"}]}
    (run / PROVENANCE).write_text(json.dumps(real))
    assert main([str(tmp_path)]) == 0
    assert json.loads((run / PROVENANCE).read_text()) == real
    out, err = capsys.readouterr()
    assert out.strip() == "1 has-provenance" and "has a provenance.json already" in err


def test_an_unknown_game_or_a_list_is_one_line_and_the_others_migrate(tmp_path, capsys):
    old_run(tmp_path, "aaa")
    doom = old_run(tmp_path, "bbb", "game: doom\n")
    listed = old_run(tmp_path, "ccc", "- 1\n- 2\n")
    assert main([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out.strip() == "2 damaged, 1 migrated"
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err
    assert f"{doom}/run.yaml: holds game 'doom'" in lines[0]
    assert f"{listed}/run.yaml: holds a list" in lines[1]
    assert not (doom / PROVENANCE).exists()


def test_a_missing_root_is_one_line_and_exit_1(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "no such directory" in err


def test_a_deep_run_yaml_or_a_binary_fingerprint_is_one_line_and_the_others_migrate(
    tmp_path, capsys
):
    """A 100k-deep run.yaml gave RecursionError and a binary code_fingerprint.txt a
    UnicodeDecodeError: either stopped the migration of every run after it."""
    deep = old_run(tmp_path, "aaa", "x: " + "[" * 100_000 + "]" * 100_000 + "\n")
    binary = old_run(tmp_path, "bbb")
    (binary / "code_fingerprint.txt").write_bytes(b"\xff\xfe\x00garbage")
    good = old_run(tmp_path, "ccc")
    assert main([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out.strip() == "2 damaged, 1 migrated" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{deep}/run.yaml: ")
    assert lines[1].startswith(f"{binary}/code_fingerprint.txt: unreadable (not ASCII text)")
    assert (good / PROVENANCE).exists() and not (deep / PROVENANCE).exists()
