"""`envgen gpu` on the CPU with tiny budgets: check, bench, run in chunks until done, pack
within the file limits, import with verification, and the archives import refuses.

check, bench and run load only what the lent GPU machine has (its image's packages and the
wheels `make gpu-wheels` carries; tests/import_blocker.py): any other import fails, as
it would there, with no network to install it."""

import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from envgen.errors import ConfigError, EnvGenError
from envgen.gpu import archive
from envgen.gpu.archive import REFUSED, import_archives, pack_runs
from envgen.gpu.chunk import check_store
from tests.import_blocker import blocker_env, gpu_image_modules

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def image_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a subprocess that can import only what the GPU machine has."""
    return blocker_env(tmp_path_factory.mktemp("image"), allowed=gpu_image_modules())


def test_only_the_gpu_machines_packages_load(image_env):
    def imports(module: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-c", f"import {module}"]
        return subprocess.run(cmd, cwd=REPO, env=image_env, capture_output=True, text=True)

    for module in ("torch", "numba", "crafter", "ruamel.yaml", "envgen.gpu.check"):
        result = imports(module)
        assert result.returncode == 0, result.stderr
    for missing in ("ray", "dvc", "procgen", "openai"):  # installed here, not there
        result = imports(missing)
        assert result.returncode != 0 and f"No module named '{missing}'" in result.stderr


def _envgen(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-W", "ignore", "-m", "envgen.cli", "gpu", *args]
    result = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    if check and result.returncode:
        raise AssertionError(result.stdout[-3000:] + result.stderr[-3000:])
    return result


@pytest.mark.slow
def test_check_runs_tiny_ppo_and_ad_kills_resumes_and_loads_on_cpu(tmp_path, image_env):
    out = tmp_path / "out"
    args = ["--device", "cpu", "--model", "nature", "--no-device-tests", "--out", str(out)]
    _envgen(image_env, "check", *args)
    report = json.loads((out / "check.json").read_text())
    assert report["versions"]["device"] == "cpu"
    assert "auxiliary phase" in report["tiny ad run on cpu"]
    assert report["kill and resume"].startswith("ok") and report["load on cpu"].startswith("ok")
    assert report["resume on cpu"].endswith("1 update")


@pytest.mark.slow
def test_bench_writes_both_agents(tmp_path, image_env):
    out = tmp_path / "out"
    _envgen(
        image_env, "bench", "--device", "cpu", "--model", "nature", "--tiny", "--rollouts", "1",
        "--concurrency", "1", "--out", str(out),
    )  # fmt: skip
    bench = json.loads((out / "bench.json").read_text())
    assert set(bench) == {"ppo", "ad"} and bench["ad"]["levels"][0]["total_sps"] > 0
    assert "reference_sps" not in bench["ppo"]  # --no-reference: no CPU reference timed


@pytest.mark.slow
def test_run_in_chunks_then_pack_and_import(tmp_path, image_env):
    store, runs_root = tmp_path / "store", tmp_path / "results" / "runs"
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    smoke = params["profiles"]["smoke"]  # 4 rollouts of 512 steps
    smoke.update(step_scale=0.002)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    # a wall-clock checkpoint after each rollout (smoke's checkpoint_every, 4,096 steps,
    # lies beyond this 2,048-step run)
    row = ["smoke", "replication/table1.yaml", "--row", "PPO", "--seeds", "0"]
    row += ["--checkpoint-minutes", "0.0001"]
    row += ["--params", str(tmp_path / "params.yaml"), "--store", str(store)]
    archives: list[Path] = []
    for call in range(12):  # each call trains at most ~20 s, then packs what finished
        out = tmp_path / f"out-{call}"
        result = _envgen(image_env, "run", *row, "--out", str(out), "--budget-min", "0.4")
        archives += sorted(out.glob("*.tar.gz"))
        if "training done" in result.stdout:
            break
    assert "training done" in result.stdout and len(archives) == 1
    assert archives[0].stat().st_size <= 16 * 2**20
    names = tarfile.open(archives[0]).getnames()
    assert not any("/checkpoints/" in n for n in names) and any("manifest.json" in n for n in names)
    assert (store / next(store.glob("*/seed-0")).relative_to(store) / "checkpoints").is_dir()

    lines = import_archives(archives, runs_root)
    (run,) = runs_root.glob("*/seed-0")
    assert lines == [f"{run.relative_to(runs_root)}: imported"]
    assert (run / "provenance.json").is_file() and (run / "final_metrics.json").is_file()
    assert import_archives(archives, runs_root)[0].endswith("kept as it is")
    assert pack_runs(store, tmp_path / "again") == ([], [])  # packed once only

    # a damaged run is refused by its manifest; nothing of it lands in the store
    damaged = tmp_path / "damaged.tar.gz"
    with tarfile.open(archives[0]) as src, tarfile.open(damaged, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isfile() else None
            if member.name.endswith("final_metrics.json"):
                data = data.replace(b'"seed"', b'"seed" ')
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    fresh = tmp_path / "fresh"
    (line,) = import_archives([damaged], fresh)
    assert line.startswith(REFUSED) and "final_metrics" in line
    assert not list(fresh.glob("*/seed-*"))


@pytest.mark.parametrize(
    "name", ["../evil", "/abs/seed-0/x", "runs/abc/seed-0/../../../x", "runs/abc/x", "other/a"]
)
def test_import_refuses_paths_outside_the_store(tmp_path, name):
    archive = tmp_path / "bad.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    with pytest.raises(EnvGenError, match="nothing imported"):
        import_archives([archive], tmp_path / "runs")
    assert not (tmp_path / "evil").exists() and not (tmp_path / "x").exists()


def test_import_refuses_links(tmp_path):
    archive = tmp_path / "link.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("runs/abc/seed-0/final_metrics.json")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(EnvGenError, match="link"):
        import_archives([archive], tmp_path / "runs")


def test_the_run_store_must_lie_outside_the_repository(tmp_path):
    with pytest.raises(ConfigError, match="inside the repository"):
        check_store(REPO / "results" / "gpu-runs")
    assert check_store(tmp_path / "store").is_dir()


@pytest.mark.parametrize("minutes", ["nan", "inf", "-inf", "0", "9.5", "soon"])
def test_run_budget_is_checked_when_parsed(capsys, minutes):
    """NaN passes every range check (its comparisons are false) and would turn the
    wall-clock budget off; argparse refuses it, and other bad budgets, in one line."""
    from envgen.cli import build_parser

    args = ["gpu", "run", "smoke", "t.yaml", "--store", "s", "--out", "o"]
    with pytest.raises(SystemExit) as exit_:
        argv = [*args, f"--budget-min={minutes}"]
        build_parser(argv).parse_args(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --budget-min" in err and minutes in err


RUNS = REPO / "results" / "runs"
GOOD, BAD = "random-8ep/seed-0", "random-8ep/seed-1"  # committed runs of a few KB


def _sealed_run(store: Path, rel: str, damaged: bool = False) -> Path:
    """The committed run `rel` in `store` (its final metrics edited after sealing when
    `damaged`)."""
    run = store / rel
    shutil.copytree(RUNS / rel, run)
    if damaged:
        path = run / "final_metrics.json"
        path.write_text(path.read_text().replace('"score": ', '"score": 9', 1))
    return run


def _archive_of(store: Path, path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        tar.add(store, arcname="runs")
    return path


def test_import_takes_each_run_on_its_own(tmp_path):
    """A damaged run beside a good one used to refuse the whole archive: it is refused by
    name, and the good one is imported."""
    store = tmp_path / "store"
    _sealed_run(store, GOOD)
    _sealed_run(store, BAD, damaged=True)
    archive = _archive_of(store, tmp_path / "runs-00.tar.gz")
    runs_root = tmp_path / "runs"
    lines = import_archives([archive], runs_root)
    assert lines[0] == f"{GOOD}: imported"
    assert lines[1].startswith(f"{REFUSED}{BAD} ({archive}): {BAD}/final_metrics.json: differs")
    assert sorted(p.relative_to(runs_root).as_posix() for p in runs_root.glob("*/seed-*")) == [GOOD]
    assert not list(runs_root.glob(".import-*"))


def test_a_swapped_run_in_an_archive_is_refused(tmp_path):
    """A run renamed in the archive to another run's folder (`gpu import` of a renamed
    archive) passes its manifest; its identity refuses it."""
    store = tmp_path / "store"
    shutil.copytree(RUNS / "7b838eba3c35" / "seed-19", store / "ca3d42bc0a83" / "seed-19")
    (line,) = import_archives([_archive_of(store, tmp_path / "a.tar.gz")], tmp_path / "runs")
    assert line.startswith(REFUSED) and "its config hashes to '7b838eba3c35'" in line


def test_only_sealed_runs_and_their_listed_files_are_packed(tmp_path):
    """An unsealed run (final metrics, no manifest) used to be packed, and the import
    refused the whole archive while the store marked every run in it as sent."""
    store = tmp_path / "store"
    sealed = _sealed_run(store, GOOD)
    (sealed / "checkpoints").mkdir()
    (sealed / "checkpoints" / "latest.pt").write_bytes(b"x" * 100)
    (sealed / "final_metrics.json.tmp").write_text("{}")
    unsealed = _sealed_run(store, BAD)
    (unsealed / "manifest.json").unlink()
    written, notes = pack_runs(store, tmp_path / "out")
    (path,) = written
    names = set(tarfile.open(path).getnames())
    assert names == {f"runs/{GOOD}/{rel}" for rel in ("manifest.json", *_listed(sealed))}
    assert json.loads((store / ".gpu_packed.json").read_text()) == [GOOD]
    lines = import_archives(written, tmp_path / "runs")
    assert lines == [f"{GOOD}: imported"]
    assert not (tmp_path / "runs" / GOOD / "checkpoints").exists()


def _listed(run: Path) -> list[str]:
    return sorted(json.loads((run / "manifest.json").read_text())["files"])


def test_import_copies_only_listed_files(tmp_path):
    store = tmp_path / "store"
    run = _sealed_run(store, GOOD)
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "latest.pt").write_bytes(b"x" * 100)
    (run / "episodes.jsonl.gz.tmp").write_bytes(b"half")
    runs_root = tmp_path / "runs"
    assert import_archives([_archive_of(store, tmp_path / "a.tar.gz")], runs_root) == [
        f"{GOOD}: imported"
    ]
    copied = sorted(
        p.relative_to(runs_root / GOOD).as_posix() for p in (runs_root / GOOD).rglob("*")
    )
    assert copied == sorted(["manifest.json", *_listed(run)])


@pytest.mark.parametrize("cap", ["MAX_MEMBER_BYTES", "MAX_ARCHIVE_BYTES"])
def test_import_caps_member_and_archive_sizes(tmp_path, monkeypatch, cap):
    store = tmp_path / "store"
    _sealed_run(store, GOOD)
    archive_path = _archive_of(store, tmp_path / "a.tar.gz")
    monkeypatch.setattr(archive, cap, 1000)  # the committed run's log is over 1000 bytes
    runs_root = tmp_path / "runs"
    with pytest.raises(EnvGenError) as err:
        import_archives([archive_path], runs_root)
    assert "over 0 MiB" in str(err.value) and "nothing imported" in str(err.value)
    assert not list(runs_root.rglob("*"))


def test_control_characters_in_a_member_name_are_escaped(tmp_path):
    store = tmp_path / "store"
    run = _sealed_run(store, GOOD)
    (run / "\x1b[31mred\x07").write_text("x")
    (line,) = import_archives([_archive_of(store, tmp_path / "a.tar.gz")], tmp_path / "runs")
    assert line.startswith(REFUSED) and "\\x1b[31mred\\x07" in line
    assert "\x1b" not in line and "\x07" not in line
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("runs/\x1b]0;title\x07/x")
        info.size = 0
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(EnvGenError) as err:
        import_archives([bad], tmp_path / "runs")
    assert "\x1b" not in str(err.value) and "\\x1b" in str(err.value)


def test_deeply_nested_json_in_an_archive_is_one_line(tmp_path):
    store = tmp_path / "store"
    run = _sealed_run(store, GOOD)
    (run / "manifest.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    (line,) = import_archives([_archive_of(store, tmp_path / "a.tar.gz")], tmp_path / "runs")
    assert line.startswith(REFUSED) and "nest 100000 deep" in line and "\n" not in line


def _bad_import(tmp_path: Path, name: str) -> tuple[list[Path], Path]:
    """(archives, runs root) of one bad import, named by `name`."""
    good = tmp_path / "good"
    _sealed_run(good, GOOD)
    whole = _archive_of(good, tmp_path / "whole.tar.gz").read_bytes()
    path = tmp_path / "runs-00.tar.gz"
    runs_root = tmp_path / "runs"
    if name == "garbage":
        path.write_bytes(b"\x00garbage" * 100)
    elif name == "zip":
        shutil.make_archive(str(tmp_path / "z"), "zip", good)
        (tmp_path / "z.zip").rename(path)
    elif name == "truncated":
        path.write_bytes(whole[: len(whole) // 2])
    elif name == "directory":
        path.mkdir()
    elif name == "store is a file":
        path.write_bytes(whole)
        runs_root.write_text("")
    return [tmp_path / "good.tar.gz", path], runs_root


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("garbage", "not a whole runs-NN.tar.gz"),
        ("zip", "not a whole runs-NN.tar.gz"),
        ("truncated", "not a whole runs-NN.tar.gz"),
        ("missing", "no such file"),
        ("directory", "is a directory"),
        ("store is a file", "is a file"),
    ],
)
def test_import_of_a_bad_archive_is_one_line_and_imports_nothing(tmp_path, name, words):
    archives, runs_root = _bad_import(tmp_path, name)
    _archive_of(tmp_path / "good", archives[0])  # a good archive first: not imported either
    with pytest.raises(EnvGenError) as err:
        import_archives(archives, runs_root)
    message = str(err.value)
    assert len(message.splitlines()) == 1 and words in message and "nothing imported" in message
    assert not list(runs_root.glob("*/seed-*"))


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["nope", "table1.yaml"], "nope"),
        (["smoke", "no-such-table.yaml"], "no-such-table.yaml"),
        (["smoke", "table1.yaml", "--row", "PPPO"], "--row: unknown row"),
        (["smoke", "table1.yaml", "--seeds", "77"], "--seeds: no run"),
    ],
)
def test_run_checks_profile_tables_rows_and_seeds_before_the_child(tmp_path, capsys, extra, words):
    """These failed only in the child (a traceback, then "training failed"); now the
    parent says so in one line before it starts one or makes the store."""
    from envgen.cli import main

    store, out = tmp_path / "store", tmp_path / "out"
    profile, table, *flags = extra
    extra = [profile, str(REPO / "replication" / table), *flags]
    args = ["gpu", "run", *extra, "--store", str(store), "--out", str(out), "--params"]
    assert main([*args, str(REPO / "params.yaml")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err and "Traceback" not in err
    assert not store.exists() and not out.exists()


@pytest.mark.parametrize("seeds", ["a,b", "0,,1", "-1"])
def test_run_seeds_are_checked_when_parsed(capsys, seeds):
    from envgen.cli import build_parser

    args = ["gpu", "run", "smoke", "t.yaml", "--store", "s", "--out", "o"]
    with pytest.raises(SystemExit) as exit_:
        argv = [*args, f"--seeds={seeds}"]
        build_parser(argv).parse_args(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --seeds" in err and seeds in err


def test_a_checkpoint_gap_past_the_training_time_is_refused(tmp_path, capsys):
    """A run would never checkpoint inside the call, and the stop would lose its work."""
    from envgen.cli import main

    args = ["gpu", "run", "smoke", "replication/table1.yaml", "--store", str(tmp_path / "s")]
    args += ["--out", str(tmp_path / "o"), "--budget-min", "1", "--checkpoint-minutes", "0.8"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "--checkpoint-minutes: 0.8 is not below this call's training time (0.75" in err
    assert not (tmp_path / "s").exists()


def test_a_truncated_log_with_a_manifest_to_match_is_refused(tmp_path):
    """The manifest vouches for bytes: a .gz cut short and listed with its new hash and
    size would import, and crash `make verify` later; each log must decompress whole."""
    import hashlib

    store = tmp_path / "store"
    run = _sealed_run(store, GOOD)
    log = run / "episodes.jsonl.gz"
    data = log.read_bytes()[: log.stat().st_size // 2]
    log.write_bytes(data)
    manifest = json.loads((run / "manifest.json").read_text())
    entry = manifest["files"]["episodes.jsonl.gz"]
    entry.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (run / "manifest.json").write_text(json.dumps(manifest))
    (line,) = import_archives([_archive_of(store, tmp_path / "a.tar.gz")], tmp_path / "runs")
    assert line.startswith(f"{REFUSED}{GOOD} ") and "\n" not in line, line
    assert f"{GOOD}/episodes.jsonl.gz: a damaged gzip log" in line, line
    assert not (tmp_path / "runs" / GOOD).exists()
