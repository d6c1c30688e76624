"""The container recipes install what `make setup` and `make setup-llm` install.

No base image can be pulled and no Docker engine runs where the recipes were written, so
they are checked, not built: each recipe's pip installs, read from its shell commands,
must be the Makefile's setup recipes' in the same order with the same arguments (the
lock files, the torch pin, the local LLM server's `--only-binary`), torch's index the only
addition (the CPU build, or the GPU image's pinned CUDA build); both setup stamps must be
touched so `make test` and `make repro` (the documented commands) install nothing more.
Nothing is compiled: no install sets CMAKE_ARGS and no recipe installs a compiler.
Editing the Makefile's torch pin or a lock file's name without the recipes fails here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]
CONTAINER = REPO / "container"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CUDA_INDEX = re.compile(r"https://download\.pytorch\.org/whl/cu\d{3}")
RECIPES = {"Dockerfile": CPU_INDEX, "Dockerfile.gpu": CUDA_INDEX, "envgen.def": CPU_INDEX}


class Install(NamedTuple):
    """One `pip install`: CMAKE_ARGS set before it (or ""), its arguments without `-q`
    and without `--index-url`, and that index (or "")."""

    cmake_args: str
    args: tuple[str, ...]
    index: str


def make_variable(makefile: str, name: str) -> str:
    (value,) = re.findall(rf"^{name}\s*[:?]?=\s*(.*)$", makefile, flags=re.M)
    return value.strip()


def setup_recipes(makefile: str) -> str:
    """The shell lines of `make setup`'s and `make setup-llm`'s rules, in file order, with
    the Makefile's variables they use replaced by their values."""
    lines = []
    for target in ("$(STAMP):", "$(STAMP_LLM):"):
        start = makefile.index(f"\n{target}") + 1
        rule = makefile[start:].split("\n")[1:]
        lines += _takewhile_recipe(rule)
    text = "\n".join(lines)
    for name in ("STAMP_LLM", "STAMP", "BIN", "VENV", "PY"):
        text = text.replace(f"$({name})", make_variable(makefile, name))
    return text.replace("$(VENV)", make_variable(makefile, "VENV"))


def _takewhile_recipe(rule: list[str]) -> list[str]:
    recipe = []
    for line in rule:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def commands(text: str) -> list[str]:
    """Shell commands: continuation lines joined, comments dropped, split at `&&`."""
    text = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in text.splitlines():
        line = re.sub(r"^\s*RUN\s+", "", line).strip()
        if not line or line.startswith("#"):
            continue
        found += [part.strip() for part in line.split("&&") if part.strip()]
    return found


def installs(text: str) -> list[Install]:
    result = []
    for command in commands(text):
        words = shlex.split(command, comments=True)
        if "pip" not in words or "install" not in words:
            continue
        env = dict(w.split("=", 1) for w in words[: words.index("pip")] if "=" in w)
        args = words[words.index("install") + 1 :]
        index = ""
        if "--index-url" in args:
            at = args.index("--index-url")
            index = args[at + 1]
            del args[at : at + 2]
        args = [a for a in args if a != "-q"]
        result.append(Install(env.get("CMAKE_ARGS", ""), tuple(args), index))
    return result


def recipe_text(name: str) -> str:
    """The shell part of a recipe: a Dockerfile's RUN lines, a definition's %post."""
    text = (CONTAINER / name).read_text()
    if name.endswith(".def"):
        return text.split("%post", 1)[1].split("\n%", 1)[0]
    return "\n".join(
        block for block in re.split(r"\n(?=[A-Z]+ )", text) if block.startswith("RUN ")
    )


def differences(makefile: str, recipe: str, torch_index: str | re.Pattern[str]) -> list[str]:
    """How a recipe's install differs from the Makefile's (empty: none)."""
    expected = installs(setup_recipes(makefile))
    got = installs(recipe)
    problems = []
    if [(i.cmake_args, i.args) for i in got] != [(i.cmake_args, i.args) for i in expected]:
        problems.append(f"pip installs {got} are not the Makefile's {expected}")
    torch = [i for i in got if any(a.startswith("torch==") for a in i.args)]
    if len(torch) != 1 or not re.fullmatch(torch_index, torch[0].index):
        problems.append(f"torch not installed once from {torch_index}: {torch}")
    if any(i.index for i in got if i not in torch):
        problems.append("an index other than torch's")
    shell = commands(recipe)
    for stamp in ("STAMP", "STAMP_LLM"):
        path = make_variable(makefile, stamp).replace("$(VENV)", make_variable(makefile, "VENV"))
        if f"touch {path}" not in shell:
            problems.append(f"{path} is not touched: make would install again")
    venv = make_variable(makefile, "VENV")
    first_pip = next(i for i, c in enumerate(shell) if " pip install" in c)
    if not any(c.endswith(f"-m venv {venv}") for c in shell[:first_pip]):
        problems.append(f"no `-m venv {venv}` before the first install")
    return problems


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_installs_as_the_makefile_does(name: str):
    makefile = (REPO / "Makefile").read_text()
    assert differences(makefile, recipe_text(name), RECIPES[name]) == []


LLM_LOCK = "requirements-llm.lock"


def test_makefile_setup_is_read_as_expected():
    """The reading the recipes are compared with: torch first, the lock, the package,
    then the local-LLM lock, with pyproject.toml's torch pin and lock files that exist."""
    makefile = (REPO / "Makefile").read_text()
    steps = installs(setup_recipes(makefile))
    (pin,) = re.findall(r'"(torch==[^"]+)"', (REPO / "pyproject.toml").read_text())
    assert [s.args for s in steps] == [
        ("--upgrade", "pip"),
        (pin,),
        ("--require-hashes", "--no-deps", "-r", "requirements.lock"),
        ("--no-deps", "-e", "."),
        ("--only-binary", "xllamacpp", "--require-hashes", "--no-deps", "-r", LLM_LOCK),
    ]
    for step in steps:
        if "-r" in step.args:
            assert (REPO / step.args[step.args.index("-r") + 1]).is_file()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("install -q torch==2.13.0", "install -q torch==2.14.0"),
        ("-r requirements.lock", "-r requirements-cpu.lock"),
        ("requirements-llm.lock\n\ttouch", "requirements-local.lock\n\ttouch"),
        ("--only-binary xllamacpp", "--only-binary :none:"),
        ("STAMP := $(VENV)/.installed", "STAMP := $(VENV)/.setup-done"),
    ],
)
def test_a_makefile_edit_without_the_recipes_fails(old: str, new: str):
    makefile = (REPO / "Makefile").read_text()
    assert makefile.count(old) == 1, old
    edited = makefile.replace(old, new)
    for name, index in RECIPES.items():
        assert differences(edited, recipe_text(name), index), name


def test_nothing_is_compiled():
    """The set-up builds no native code: no install is given CMAKE_ARGS, only `make
    setup-llm-source` (the headline campaign's llama-cpp-python, which no other target
    needs) uses them, and no recipe installs a compiler or cmake (the local LLM server is
    a prebuilt wheel, docs/llm.md "Local backend")."""
    makefile = (REPO / "Makefile").read_text()
    assert all(step.cmake_args == "" for step in installs(setup_recipes(makefile)))
    rules = re.split(r"\n(?=\S[^\n]*:)", makefile)  # a rule or assignment per block
    compiling = [r.split(":", 1)[0] for r in rules if 'CMAKE_ARGS="' in r]
    assert compiling == ["$(STAMP_LLM_SOURCE)"]
    targets = re.findall(r"^(?:test|repro|setup|setup-llm):.*$", makefile, flags=re.M)
    assert len(targets) == 4 and not any("SOURCE" in t or "source" in t for t in targets)
    for name in RECIPES:
        text = (CONTAINER / name).read_text()
        assert "CMAKE_ARGS" not in text, name
        packages = " ".join(c for c in commands(recipe_text(name)) if "apt-get install" in c)
        for tool in ("build-essential", "cmake", "gcc", "g++", "clang"):
            assert tool not in packages.split(), (name, tool)


def test_base_images_are_pinned_to_the_locks_python():
    header = (REPO / "requirements.lock").read_text().split("\n\n", 1)[0]
    (python,) = re.findall(r"with Python (3\.\d+)", header)
    cpu = re.findall(r"^FROM (\S+)", (CONTAINER / "Dockerfile").read_text(), flags=re.M)
    apptainer = re.findall(r"^From: (\S+)", (CONTAINER / "envgen.def").read_text(), flags=re.M)
    assert cpu == apptainer and re.fullmatch(rf"python:{python}\.\d+-slim-\w+", cpu[0])
    gpu_text = (CONTAINER / "Dockerfile.gpu").read_text()
    (gpu,) = re.findall(r"^FROM (\S+)", gpu_text, flags=re.M)
    assert re.fullmatch(r"nvidia/cuda:\d+\.\d+\.\d+-[a-z]+-runtime-ubuntu\d+\.\d+", gpu)
    assert f"python{python} -m venv" in gpu_text


def test_make_test_and_make_repro_are_the_documented_commands():
    for name in ("Dockerfile", "Dockerfile.gpu"):
        text = (CONTAINER / name).read_text()
        assert text.rstrip().endswith('CMD ["make", "test"]'), name
        assert "make repro" in text and f"docker build -f container/{name}" in text
    definition = (CONTAINER / "envgen.def").read_text()
    runscript = definition.split("%runscript", 1)[1].split("\n%", 1)[0]
    assert "set -- test" in runscript and 'exec make "$@"' in runscript
    assert "apptainer run --writable-tmpfs envgen.sif repro" in definition
    section = (REPO / "docs" / "pipeline.md").read_text().split("## Container", 1)[1]
    section = section.split("\n## ", 1)[0]
    for command in ("docker build -f container/Dockerfile ", "Dockerfile.gpu", "envgen.def"):
        assert command in section
    assert "make repro" in section and "make test" in section
    assert "tests/test_container_recipe.py" in section and "not built" in section


def test_the_source_build_installs_the_headline_campaigns_pins_hash_checked():
    """`make setup-llm-source`: llama-cpp-python at the pin the headline campaign recorded
    with, built for portable x86-64, from a lock whose every pin carries its hash."""
    makefile = (REPO / "Makefile").read_text()
    start = makefile.index("\n$(STAMP_LLM_SOURCE):") + 1
    recipe = "\n".join(_takewhile_recipe(makefile[start:].split("\n")[1:]))
    recipe = recipe.replace("$(LLAMA_CMAKE_ARGS)", make_variable(makefile, "LLAMA_CMAKE_ARGS"))
    (step,) = installs(recipe.replace("$(BIN)", make_variable(makefile, "BIN")))
    lock = "requirements-llm-source.lock"
    assert step.args == ("--no-cache-dir", "--require-hashes", "--no-deps", "-r", lock)
    assert "-DGGML_NATIVE=OFF" in step.cmake_args.split()
    pins = re.findall(
        r"^(\S+==\S+) \\\n((?:    --hash=sha256:[0-9a-f]{64}.*\n)+)",
        (REPO / lock).read_text(),
        flags=re.M,
    )
    names = [pin for pin, _ in pins]
    assert "llama-cpp-python==0.3.36" in names
    assert len(names) == len(re.findall(r"^\S+==", (REPO / lock).read_text(), flags=re.M))
