"""Portable CPU numerics (`envgen.numerics`): a run that retrains bit for bit on any
x86-64 CPU with AVX2, and native runs that do not.

The golden record is a tiny portable run committed with the CPU it trained on
(tests/data/numerics/golden, recorded on an AMD EPYC with AVX-512; docs/measurements.md,
"Portable numerics" lists every CPU class it reproduced on). One machine cannot be
another, so "other CPU classes" are simulated by what the libraries let a process
change about the host they see: MKL's instruction set (`MKL_ENABLE_INSTRUCTIONS`),
oneDNN's (`ONEDNN_MAX_CPU_ISA`), NumPy's AVX-512 dispatch, thread counts and the cores
the process may use. ATen's capability is one of portable mode's own settings, so it
is varied for native runs only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envgen import numerics
from envgen.agents.runlog import read_jsonl
from envgen.errors import ConfigError
from envgen.loop.config import RunConfig
from envgen.store.run_diff import compare_logs
from tests.envgen_cli import REPO
from tests.test_rerun import unseal

DATA = REPO / "tests" / "data" / "numerics"
GOLDEN = DATA / "golden" / "b6762fdd799b" / "seed-3"
NATIVE_CONFIG = REPO / "tests" / "data" / "guard" / "envgen_random_authors.yaml"

# A host the libraries see as lesser or different: MKL limited to SSE4.2, oneDNN to AVX2,
# NumPy without AVX-512, two BLAS/OpenMP threads asked for (portable pins its own).
SIMULATED_HOST = {
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX",
    "OMP_NUM_THREADS": "2",
    "MKL_NUM_THREADS": "2",
}
# What differs between CPU classes for a native run: ATen's vector unit and oneDNN's.
NATIVE_CLASSES = ({"ATEN_CPU_CAPABILITY": "default"}, {"ONEDNN_MAX_CPU_ISA": "SSE41"})


def envgen(*args: str, env: dict[str, str] | None = None, cores: str | None = None):
    command = [sys.executable, "-m", "envgen.cli", *args]
    if cores is not None:
        command = ["taskset", "-c", cores, *command]
    base = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    for name in numerics.PORTABLE_ENVIRONMENT:  # a test process's own mode must not leak in
        if name not in (env or {}):
            base.pop(name, None)
    return subprocess.run(command, capture_output=True, text=True, env=base, timeout=600)


def train(config: Path, root: Path, env: dict[str, str] | None = None) -> Path:
    done = envgen(
        "run", str(config), "--seed", "3", "--runs-root", str(root), "--torch-threads", "1",
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = root.glob("*/seed-3")
    return run_dir


def logs(run_dir: Path, name: str) -> list[dict]:
    return read_jsonl(run_dir / name)


# --- the mode's parts ---------------------------------------------------------------------
def test_a_native_config_keeps_its_hash_and_portable_is_its_own_run():
    native = RunConfig.from_yaml(NATIVE_CONFIG)
    portable = native.replace(cpu_numerics="portable")
    assert "cpu_numerics" not in native.to_dict()
    assert native.config_hash() == RunConfig.from_dict(native.to_dict()).config_hash()
    assert portable.config_hash() != native.config_hash()
    assert portable.config_hash() == GOLDEN.parent.name
    with pytest.raises(ConfigError, match="cpu_numerics.*allowed: native, portable"):
        native.replace(cpu_numerics="fast")


def test_the_environment_sets_every_variable_for_portable_and_clears_them_for_native():
    portable = numerics.environment("portable", {"PATH": "/bin", "MKL_CBWR": "AVX2"})
    assert portable["MKL_CBWR"] == "COMPATIBLE" and portable["PATH"] == "/bin"
    assert numerics.mismatches("portable", portable) == []
    native = numerics.environment("native", portable)
    assert numerics.mismatches("native", native) == []
    assert "ATEN_CPU_CAPABILITY" in native  # harmless alone; the portable markers are gone
    assert numerics.mismatches("portable", native)
    assert numerics.mismatches("native", portable)


def test_a_process_not_started_portable_is_refused_not_half_switched():
    # pytest's own process is native: portable cannot be entered in place
    with pytest.raises(numerics.NumericsError, match="not set up for portable"):
        numerics.verify("portable")
    with pytest.raises(numerics.NumericsError, match="not a command-line entry point"):
        numerics.reexec("portable")
    with pytest.raises(numerics.NumericsError, match="CPU only"):
        numerics.enter("portable", "cuda")


CHILD_CHECK = """
import json, multiprocessing as mp
from envgen import numerics

def child(q):
    numerics.apply_torch("portable")
    q.put(numerics.verify("portable"))

if __name__ == "__main__":
    numerics.apply_torch("portable")
    here = numerics.verify("portable")
    ctx = mp.get_context("forkserver")  # as the vec env's workers start
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    there = q.get(timeout=120)
    p.join()
    print(json.dumps([here, there]))
"""


def test_every_setting_is_verified_in_a_portable_process_and_its_children(tmp_path):
    script = tmp_path / "check.py"
    script.write_text(CHILD_CHECK)
    env = numerics.environment("portable", {**os.environ, "PYTHONPATH": str(REPO)})

    def check(env):
        return subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
        )

    done = check(env)
    assert done.returncode == 0, done.stderr
    for state in json.loads(done.stdout.splitlines()[-1]):
        assert state["torch_cpu_capability"] == "AVX2" and state["mkl_branch"] == "COMPATIBLE"
        assert not state["onednn"] and not state["nnpack"] and state["torch_threads"] == 1
        assert state["numpy_above_avx2"] == [] and state["numba_cpu"] == "haswell"
    # one variable missing (numpy loads without its cap): named, not ignored
    env.pop("NPY_DISABLE_CPU_FEATURES")
    done = check(env)
    assert done.returncode != 0 and "NPY_DISABLE_CPU_FEATURES" in done.stderr


def test_the_gemm_convolution_is_the_same_function_as_torchs():
    import torch

    from envgen.agents.networks import conv_as_gemm

    torch.manual_seed(0)
    for k, s, c in ((8, 4, 3), (4, 2, 32), (3, 1, 64)):
        conv = torch.nn.Conv2d(c, 16, k, stride=s)
        x = torch.rand(2, c, 15, 15)
        want = conv(x).permute(0, 2, 3, 1)
        got = conv_as_gemm(x.permute(0, 2, 3, 1), conv)
        assert torch.allclose(got, want, atol=1e-5), (k, s)


# --- the golden record and simulated CPU classes -------------------------------------------
@pytest.fixture(scope="module")
def native_run(tmp_path_factory) -> Path:
    """The golden record's config in native mode, trained here."""
    return train(NATIVE_CONFIG, tmp_path_factory.mktemp("native"))


@pytest.mark.slow
def test_the_golden_record_retrains_bit_for_bit_here():
    done = envgen("rerun", str(GOLDEN), "--seconds", "600")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "numerics: portable" in done.stdout
    assert "identical over every record compared" in done.stdout
    assert f"episodes.jsonl: {len(logs(GOLDEN, 'episodes.jsonl'))} record(s) identical" in (
        done.stdout
    )


@pytest.mark.slow
def test_the_golden_record_tells_portable_from_native(native_run):
    """Switched off (native numbers), the same config does not give the golden bytes."""
    comparison = compare_logs(
        "metrics.jsonl", logs(GOLDEN, "metrics.jsonl"), logs(native_run, "metrics.jsonl")
    )
    assert not comparison.identical and comparison.index == 0


@pytest.mark.slow
def test_a_simulated_other_cpu_changes_native_bytes_but_not_portable_ones(native_run, tmp_path):
    portable = envgen("rerun", str(GOLDEN), "--seconds", "600", env=SIMULATED_HOST, cores="0")
    assert portable.returncode == 0, portable.stdout + portable.stderr
    assert "identical over every record compared" in portable.stdout
    for host in NATIVE_CLASSES:
        other = train(NATIVE_CONFIG, tmp_path / "-".join(host.values()), env=host)
        comparison = compare_logs(
            "metrics.jsonl", logs(native_run, "metrics.jsonl"), logs(other, "metrics.jsonl")
        )
        assert not comparison.identical, host


# --- a forged portable run is caught, whatever the machine -----------------------------------
def forge(run_dir: Path) -> int:
    """One more achievement in the last episode of the sealed run `run_dir`, its metrics
    re-derived and the run resealed, as a forger with this code would (the files then
    agree with each other); returns the forged episode's number."""
    from envgen.evidence.derive import rederived
    from envgen.store.manifest import seal_run

    unseal(run_dir)
    episodes = run_dir / "episodes.jsonl"
    records = [json.loads(line) for line in episodes.read_text().splitlines()]
    records[-1]["achievement_collect_diamond"] = 1
    episodes.write_text("".join(json.dumps(r) + "\n" for r in records))
    final = json.loads((run_dir / "final_metrics.json").read_text())
    final.update(rederived(run_dir, final))
    (run_dir / "final_metrics.json").write_text(json.dumps(final, indent=2))
    seal_run(run_dir)
    return len(records)


def forged_copy(dest: Path) -> tuple[Path, int]:
    """The golden run copied under `dest` and forged (`forge`)."""
    copy = dest / GOLDEN.parent.name / GOLDEN.name
    shutil.copytree(GOLDEN, copy)
    return copy, forge(copy)


@pytest.mark.slow
def test_a_consistently_forged_portable_run_does_not_reproduce(tmp_path):
    copy, forged = forged_copy(tmp_path / "runs")
    done = envgen("rerun", "--check", "--full", str(copy), "--seconds", "600")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"episode {forged}" in done.stdout and "portable" in done.stdout
    done = envgen("rerun", str(copy), "--seconds", "600")
    assert done.returncode == 1
    assert "DIFFERS: this run does not reproduce: episodes.jsonl: first difference at record " + (
        f"{forged}"
    ) in done.stdout.replace("\n", " ")


def test_check_asks_for_updates_or_full():
    done = envgen("rerun", "--check", str(GOLDEN))
    assert done.returncode != 0 and "--full" in done.stdout + done.stderr


def test_the_golden_run_records_its_mode_and_cpu():
    provenance = json.loads((GOLDEN / "provenance.json").read_text())
    session = provenance["sessions"][0]
    assert session["numerics"]["mode"] == "portable"
    assert session["machine"]["torch_cpu_capability"] == "AVX2"
    assert yaml.safe_load((GOLDEN / "run.yaml").read_text())["cpu_numerics"] == "portable"
