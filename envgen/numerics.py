"""CPU numerics modes: which code paths compute a CPU run's floats, and so on which
machines the run retrains bit for bit (docs/agent.md, "Portable numerics", has the table).
`native` lets every library take the host's fastest path: a run repeats only on its own
CPU class. `portable` takes every float from a path the software alone fixes, on any
x86-64 CPU with AVX2 (`PORTABLE_ENVIRONMENT`, `apply_torch`).

The variables act when each library loads, so a process gets its mode from its
environment before it imports numpy or torch; its children inherit it. `environment`
builds that environment, `reexec` restarts a command-line process into it, and `verify`
checks in the computing process that every setting took; its record goes into the run's
provenance. This module imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

from envgen.errors import ConfigError, EnvGenError

NATIVE, PORTABLE = "native", "portable"
MODES = (NATIVE, PORTABLE)
MODE_VARIABLE = "ENVGEN_CPU_NUMERICS"
"""The mode a process was started in (unset: native)."""

# NumPy 1.26's dispatch targets above AVX2 and later ones (naming one the host lacks is allowed)
NUMPY_ABOVE_AVX2 = tuple(
    (
        "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX "
        "AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
    ).split()
)

PORTABLE_ENVIRONMENT: dict[str, str] = {
    MODE_VARIABLE: PORTABLE,
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",  # the one branch Intel pins on every x86 CPU, AMD included
    "MKL_DYNAMIC": "FALSE",
    "MKL_NUM_THREADS": "1",
    "OMP_DYNAMIC": "FALSE",
    "OMP_NUM_THREADS": "1",
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN is off; should anything still reach it
    "NPY_DISABLE_CPU_FEATURES": " ".join(NUMPY_ABOVE_AVX2),
    "NUMBA_CPU_NAME": "haswell",  # LLVM's name for AVX2 + FMA + BMI2, the portable baseline
    "NUMBA_CPU_FEATURES": "",  # with NUMBA_CPU_NAME set, the named CPU's own features
}
"""What a portable process needs in its environment before numpy, numba or torch load."""

# Portable variables a native process must not carry (it would compute portable numbers).
_NATIVE_MUST_NOT_SET = (MODE_VARIABLE, "MKL_CBWR", "NPY_DISABLE_CPU_FEATURES", "NUMBA_CPU_NAME")


class NumericsError(EnvGenError):
    """A process is not in the numerics mode its run needs (a setting did not take)."""


def check_mode(mode: object, field: str = "cpu_numerics") -> str:
    """`mode` if it is one of MODES; a `ConfigError` naming `field` otherwise."""
    if mode not in MODES:
        raise ConfigError(field, f"{mode!r}; allowed: {', '.join(MODES)}")
    return str(mode)


def current() -> str:
    """The mode this process was started in, from its environment."""
    value = os.environ.get(MODE_VARIABLE) or NATIVE
    if value not in MODES:
        raise NumericsError(f"${MODE_VARIABLE}={value!r}: one of {', '.join(MODES)}")
    return value


def environment(mode: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a process of `mode` starts with: `base` (this process's by
    default) with the portable variables set, or removed for native."""
    check_mode(mode)
    env = dict(os.environ if base is None else base)
    if mode == PORTABLE:
        env.update(PORTABLE_ENVIRONMENT)
    else:
        for name in _NATIVE_MUST_NOT_SET:
            env.pop(name, None)
    return env


def mismatches(mode: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables of `environ` (this process's by default) that are not as `mode`
    needs them, as "NAME=value (needs ...)" phrases; empty when the environment fits."""
    check_mode(mode)
    env = os.environ if environ is None else environ
    if mode == PORTABLE:
        return [
            f"{name}={env.get(name)!r} (needs {value!r})"
            for name, value in PORTABLE_ENVIRONMENT.items()
            if env.get(name) != value
        ]
    return [
        f"{name}={env[name]!r} (needs it unset)" for name in _NATIVE_MUST_NOT_SET if env.get(name)
    ]


ENTRY_MODULES = ("envgen.cli", "envgen.pipeline.train")
"""The command-line entry points that may restart themselves (`reexec`)."""


def reexec(mode: str) -> None:
    """Restart this command-line process (`envgen run`) in `mode`'s environment, same
    interpreter and arguments, unless it is in it already: the variables act only as the
    libraries load. Anywhere else (a test calling `main`) a mismatch is a `NumericsError`."""
    bad = mismatches(mode)
    if not bad:
        return
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    entry = getattr(main, "name", None) in ENTRY_MODULES
    if not entry and os.path.basename(sys.argv[0]) != "envgen":
        raise NumericsError(
            f"this process is not set up for {mode} CPU numerics ({bad[0]}) and is not a "
            "command-line entry point that could restart itself"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    argv = list(getattr(sys, "orig_argv", [])) or [sys.executable, *sys.argv]
    os.execve(sys.executable, [sys.executable, *argv[1:]], environment(mode))


@contextlib.contextmanager
def spawning(mode: str) -> Iterator[dict[str, str]]:
    """This process's environment set to `mode`'s while children are started in it (a
    spawned pool, Ray), restored after; yields the environment children get."""
    saved = dict(os.environ)
    env = environment(mode)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield env
    finally:
        os.environ.clear()
        os.environ.update(saved)


def apply_torch(mode: str) -> None:
    """Torch's run-time switches for `mode`, in the process that computes: oneDNN and
    NNPACK off and one thread for portable; native leaves torch as it loads."""
    import torch  # lazy: torch, only in the process that trains

    if check_mode(mode) == PORTABLE:
        torch.backends.mkldnn.enabled = False
        torch.backends.nnpack.set_flags(False)
        torch.set_num_threads(1)
        torch.set_flush_denormal(False)


def _mkl_branch() -> str | None:
    """MKL's reproducibility branch as MKL itself reports it ("CNR:..." in its verbose
    line for one GEMM), or None where MKL prints nothing (a torch without MKL)."""
    import torch  # lazy: torch, only in the process that trains

    if not torch.backends.mkl.is_available():
        return None
    a = torch.ones(64, 64)
    with tempfile.TemporaryFile() as capture:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(capture.fileno(), 1)
        try:
            with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON):
                torch.mm(a, a)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    return next((word[4:] for word in text.split() if word.startswith("CNR:")), None)


def state() -> dict[str, Any]:
    """What decides this process's float paths, read from the libraries themselves."""
    # the mode is decided before these load (its variables act at their import)
    import numba  # lazy: numba, loaded where a run trains
    import numpy.core._multiarray_umath as umath  # lazy: numpy, as numba
    import torch  # lazy: torch, as numba

    return {
        "mode": current(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "onednn": bool(torch.backends.mkldnn.enabled),
        "nnpack": bool(torch.backends.nnpack.is_available() and torch._C._get_nnpack_enabled()),
        "mkl_branch": _mkl_branch(),
        "numpy_above_avx2": sorted(f for f in NUMPY_ABOVE_AVX2 if umath.__cpu_features__.get(f)),
        "numba_cpu": numba.config.CPU_NAME or "host",
        "numba_features": "host"
        if numba.config.CPU_FEATURES is None
        else numba.config.CPU_FEATURES,
    }


def verify(mode: str) -> dict[str, Any]:
    """This process's `state()` (recorded in provenance), checked to compute in `mode`:
    for portable every setting must have taken, for native none may be set; else a
    `NumericsError` naming the first that did not and the fix."""
    bad = mismatches(mode)
    if bad:
        raise NumericsError(
            f"this process is not set up for {mode} CPU numerics: {bad[0]}; start the process "
            "through `envgen run`, a pipeline stage or a campaign, or with "
            "envgen.numerics.environment(mode)"
        )
    found = state()
    if mode == NATIVE:
        return found
    expected = {
        "torch_cpu_capability": "AVX2",
        "torch_threads": 1,
        "onednn": False,
        "nnpack": False,
        "mkl_branch": PORTABLE_ENVIRONMENT["MKL_CBWR"],
        "numpy_above_avx2": [],
        "numba_cpu": PORTABLE_ENVIRONMENT["NUMBA_CPU_NAME"],
        "numba_features": "",
    }
    for key, want in expected.items():
        if found[key] != want:
            raise NumericsError(
                f"portable CPU numerics did not take effect: {key} is {found[key]!r}, needs "
                f"{want!r} (torch, numpy or numba was loaded before the environment was "
                "set, --torch-threads is not 1, or this torch has no MKL)"
            )
    return found


def enter(mode: str, device: str) -> dict[str, Any]:
    """Make this training process compute in `mode` on `device` and verify it (`verify`);
    portable is a CPU mode: a run on a GPU is refused."""
    if check_mode(mode) == PORTABLE and device != "cpu":
        raise NumericsError(f"cpu_numerics portable trains on the CPU only, not on {device}")
    apply_torch(mode)
    return verify(mode)
