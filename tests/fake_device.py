"""A stand-in accelerator for CPU-only tests: real CPU numbers, a device tag that must match.

`FakeDevice()` is a context manager. Inside it, a tensor created on (or moved to) the
device `DEVICE` is a `OnDevice` wrapper around a real CPU tensor that reports
`DEVICE` as its device; every op runs on the CPU tensors underneath, so the numbers are
the CPU's, bit for bit, and the agents' code runs unchanged (`.item()`, `.cpu()`,
`bool(t)`, numpy round trips through `.cpu()`). Each op checks the devices of its
tensor inputs and raises "Expected all tensors to be on the same device" where CUDA would,
and at two places where CUDA silently copies instead:

- an op mixing host and device tensors raises, except transfers (`.to`, `.copy_`) and
  0-dim host tensors, which CUDA accepts as scalars;
- a host index tensor into a device tensor raises (CUDA copies the index to the device on
  every call: a host-to-device transfer per minibatch);
- a random op on the device needs a generator registered with `FakeDevice.generator()`
  (CUDA needs a CUDA generator), and a host random op refuses a registered one;
- `.numpy()` and `.tolist()` of a device tensor raise (CUDA refuses `.numpy()`).

It counts the device-to-host copies and `.item()`s (`FakeDevice.host_syncs`): on CUDA each
one waits until the device has run everything queued before it.

`FakeCuda` stands in for the CUDA graph calls (`envgen.agents.graphs`): the cohort's
capture code runs on the CPU, and a test counts captures and makes one fail.

Why not FakeTensorMode: it has no data, so the agents' data-dependent steps (the rollout's
`if unlocked.any()`, AD's transport plan in numpy, `.item()` of every loss) cannot run.
Why the device is `meta`: a CPU-only torch build refuses device guards for "cuda", which
Python's `copy_` and indexing take before any dispatch mode sees the call; the meta device
has a no-op guard. The agents never test for "cuda" by name, so the tag's name does not
matter to them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, return_and_correct_aliasing
from torch.utils._pytree import tree_flatten, tree_map

DEVICE = torch.device("meta")
_HOST, _DEV = "host", "device"
_aten = torch.ops.aten
TRANSFERS = {_aten._to_copy.default, _aten.copy_.default}
INDEXING = {_aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default}


class OnDevice(torch.Tensor):
    """A CPU tensor (`elem`) that reports `DEVICE` as its device."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> OnDevice:
        return torch.Tensor._make_wrapper_subclass(
            cls,
            elem.shape,
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=DEVICE,
            requires_grad=elem.requires_grad,
        )

    def __init__(self, elem: torch.Tensor):
        self.elem = elem

    def __repr__(self) -> str:
        return f"OnDevice({self.elem!r})"

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {}, _ACTIVE[-1] if _ACTIVE else None)

    def tolist(self) -> Any:
        raise RuntimeError("tolist() of a device tensor: move it to the host first")


_ACTIVE: list[FakeDevice] = []


def _where(t: torch.Tensor) -> str:
    return _DEV if isinstance(t, OnDevice) else _HOST


def _run(func, args, kwargs, mode: FakeDevice | None):
    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    places = {_where(t) for t in tensors if isinstance(t, OnDevice) or t.dim() > 0}
    if func not in TRANSFERS and len(places) > 1:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two "
            f"devices, {DEVICE} and cpu! (in {func})"
        )
    if func in INDEXING and _DEV in {_where(t) for t in tensors}:
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        if any(i is not None and not isinstance(i, OnDevice) for i in indices):
            raise RuntimeError(f"a host index into a device tensor (in {func})")
    target = kwargs.get("device")
    if target is not None:
        place = _DEV if torch.device(target) == DEVICE else _HOST
    else:
        place = places.pop() if len(places) == 1 else _HOST
        if func in TRANSFERS and func is _aten.copy_.default:
            place = _where(args[0])
    if (
        mode is not None
        and _DEV in {_where(t) for t in tensors}
        and (func is _aten._local_scalar_dense.default or (func in TRANSFERS and place == _HOST))
    ):
        mode.host_syncs += 1  # a device-to-host copy or `.item()`: CUDA waits for the stream
    generator = kwargs.get("generator")
    if generator is not None:
        on_device = mode is not None and mode.owns(generator)
        if on_device != (place == _DEV):
            raise RuntimeError(f"generator and tensor on different devices (in {func})")
    if place == _HOST and _DEV not in {_where(t) for t in tensors}:
        return func(*args, **kwargs)  # a host op: nothing to unwrap
    if place == _DEV and "device" in kwargs:
        kwargs = {**kwargs, "device": torch.device("cpu")}
    inner_args, inner_kwargs = tree_map(
        lambda t: t.elem if isinstance(t, OnDevice) else t, (args, kwargs)
    )
    out = func(*inner_args, **inner_kwargs)
    if place == _DEV:
        with torch.inference_mode(False):  # wrappers stay ordinary tensors (see below)
            out = tree_map(lambda t: OnDevice(t) if isinstance(t, torch.Tensor) else t, out)
    return return_and_correct_aliasing(func, args, kwargs, out)


class FakeDevice(TorchDispatchMode):
    """The mode that puts factory calls with `device=DEVICE` on the fake device."""

    def __init__(self) -> None:
        super().__init__()
        self._generators: list[torch.Generator] = []
        self.host_syncs = 0
        """Device-to-host copies and `.item()`s so far: each one waits for the device."""

    def generator(self, seed: int) -> torch.Generator:
        """A generator that counts as the device's (a CPU one underneath)."""
        generator = torch.Generator()
        generator.manual_seed(seed)
        self._generators.append(generator)
        return generator

    def owns(self, generator: torch.Generator) -> bool:
        """Whether `generator` is one of `generator()`'s. Dispatch hands ops a new Python
        object for the same generator, so the match is by state, not identity."""
        state = generator.get_state()
        return any(torch.equal(state, g.get_state()) for g in self._generators)

    def __enter__(self) -> FakeDevice:
        _ACTIVE.append(self)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        _ACTIVE.pop()
        super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {}, self)


def on_device(t: torch.Tensor) -> bool:
    """Whether `t` lives on the fake device."""
    return isinstance(t, OnDevice)


class FakeStream:
    """A stream of `FakeCuda`: a name; waiting on another stream is a no-op on the CPU."""

    def __init__(self, name: str):
        self.name = name

    def wait_stream(self, other: FakeStream) -> None:
        pass

    def __repr__(self) -> str:
        return f"FakeStream({self.name})"


class FakeGraph:
    """A graph of `FakeCuda`: its body ran op by op while captured; a replay runs nothing."""

    def __init__(self, cuda: FakeCuda):
        self.cuda = cuda
        self.stream: FakeStream | None = None

    def capture_begin(self) -> None:
        self.cuda.captures += 1
        self.stream = self.cuda.current
        self.cuda.events.append("begin")

    def capture_end(self) -> None:
        self.cuda.events.append("end")
        if self.cuda.captures in self.cuda.fail_end:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    def replay(self) -> None:
        self.cuda.replays += 1

    def reset(self) -> None:
        self.cuda.events.append("reset")


class FakeCuda:
    """A stand-in for `envgen.agents.graphs.CudaGraphs`, so that the cohort's capture code
    runs on the CPU (monkeypatch `envgen.agents.graphs.backend` to return one). It keeps
    the current stream (`current`; `use` restores the one before, as `torch.cuda.stream`
    does), counts captures and replays, and records in `events` what a capture does to the
    device: "clear" (cuBLAS's workspaces), "begin", "end", "reset". `fail_end`: the
    captures, counted from 1, whose `capture_end` raises, as CUDA's does when a captured
    op is not allowed in a graph."""

    def __init__(self, fail_end: tuple[int, ...] = ()):
        self.default = FakeStream("default")
        self.current = self.default
        self.fail_end = set(fail_end)
        self.captures = self.replays = 0
        self.events: list[str] = []
        self._streams = 0

    def stream(self) -> FakeStream:
        self._streams += 1
        return FakeStream(f"side{self._streams}")

    def current_stream(self) -> FakeStream:
        return self.current

    @contextlib.contextmanager
    def use(self, stream: FakeStream) -> Iterator[None]:
        before, self.current = self.current, stream
        try:
            yield
        finally:
            self.current = before

    def graph(self) -> FakeGraph:
        return FakeGraph(self)

    def settle(self) -> None:
        pass

    def clear_cublas_workspaces(self) -> None:
        self.events.append("clear")
