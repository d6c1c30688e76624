"""Run a command as on a machine that lacks some packages: a `sitecustomize` makes their
imports fail, and every subprocess and worker inherits it through PYTHONPATH.

`blocked`: these top-level packages fail (a Crafter run without procgen or openai).
`allowed`: everything outside it and the standard library fails (the lent GPU image,
`gpu_image_modules`, plus the wheels `make gpu-wheels` carries there).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from collections.abc import Iterable
from pathlib import Path

from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]

# The Python distributions of the GPU machine image this project is lent (NVIDIA H100 /
# H200, image "cuda", as listed on 2026-11-17): its own torch and the scientific stack.
# Names as pip writes them; those not installed here change nothing.
GPU_IMAGE = (
    "absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio "
    "attrs botorch build certifi charset-normalizer chex click cloudpickle cmake colorama "
    "contourpy coverage cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x "
    "cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax "
    "fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx "
    "huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax "
    "jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver "
    "lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml "
    "markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath "
    "msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja "
    "numba numba-cuda numpy numpyro nvidia-ml-py onnx onnx-ir onnxruntime onnxscript "
    "opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint "
    "packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client "
    "propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing "
    "pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock "
    "pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests "
    "rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn "
    "sentencepiece sentence-transformers setuptools shellingham simplejson six "
    "sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server "
    "tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio "
    "torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope "
    "triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug "
    "wheel wrapt xarray xxhash yarl zipp"
).split()

SITECUSTOMIZE = """\
import importlib.machinery
import sys

BLOCKED = {blocked!r}
ALLOWED = {allowed!r}  # None: every package but BLOCKED loads
STDLIB = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)


class NotHere(importlib.machinery.PathFinder):
    \"\"\"The path finder, blind to the packages the machine lacks: they are not found, as
    on that machine (`importlib.util.find_spec` returns None; `import` raises
    ModuleNotFoundError).\"\"\"

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        top = name.split(".")[0]
        if top in BLOCKED or (ALLOWED is not None and top not in ALLOWED and top not in STDLIB):
            return None
        return super().find_spec(name, path, target)


sys.meta_path[:] = [
    NotHere if f is importlib.machinery.PathFinder else f for f in sys.meta_path
]
"""


def gpu_wheels() -> tuple[str, ...]:
    """The Makefile's GPU_WHEELS: what `make gpu-wheels` carries to the GPU machine."""
    match = re.search(r"^GPU_WHEELS := (.+)$", (REPO / "Makefile").read_text(), re.M)
    assert match, "Makefile: no GPU_WHEELS line"
    return tuple(match.group(1).split())


def gpu_image_modules() -> frozenset[str]:
    """Top-level modules a GPU machine has: its image's and the carried wheels', installed
    here (`importlib.metadata` maps each module to its distribution), and envgen."""
    wanted = {canonicalize_name(d) for d in (*GPU_IMAGE, *gpu_wheels())}
    dists_of = importlib.metadata.packages_distributions()  # module -> its distributions
    found = {m for m, ds in dists_of.items() if any(canonicalize_name(d) in wanted for d in ds)}
    return frozenset(found | {"envgen"})


def blocker_env(
    tmp_path: Path, *, blocked: Iterable[str] = (), allowed: Iterable[str] | None = None
) -> dict[str, str]:
    """os.environ with PYTHONPATH = a sitecustomize that blocks as the module says, then
    this checkout."""
    site = tmp_path / "blocker-site"
    site.mkdir(exist_ok=True)
    allowed_set = None if allowed is None else frozenset(allowed)
    text = SITECUSTOMIZE.format(blocked=tuple(blocked), allowed=allowed_set)
    (site / "sitecustomize.py").write_text(text)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
