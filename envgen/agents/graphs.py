"""CUDA graph capture for the cohort (`envgen.agents.cohort`): warm-up, capture, and on a
failure the process left as it was found.

Why not `torch.cuda.graph`: a `capture_end` that raises in its `__exit__` leaves the
thread on the capture stream, and a body that raises leaves the graph half captured.
`record` ends (and resets) such a graph and leaves the stream on every exit.

Why each capture gets its own stream and cleared cuBLAS workspaces: cuBLAS keeps a
workspace per (handle, stream) outside every graph's pool, and a graph captured while one
exists bakes its address in, so the policy and update graphs of a pipelined cohort would
share it while running at once. Cleared around each capture (as `torch._inductor`'s
cudagraph trees do), a capture allocates its workspace in its own graph's private pool.

`backend(device)` is the only door to `torch.cuda` (None off CUDA); the tests hand the
cohort a fake with the same methods (tests/fake_device.py, `FakeCuda`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

import torch

T = TypeVar("T")
WARM_UPS = 3  # PyTorch's recipe: cuDNN/cuBLAS set-up and autotuning outside the graph


class CudaGraphs:
    """The calls a capture makes, on `torch.cuda` for one device."""

    def __init__(self, device: torch.device):
        self.device = device

    def stream(self) -> torch.cuda.Stream:
        return torch.cuda.Stream(self.device)

    def current_stream(self) -> torch.cuda.Stream:
        return torch.cuda.current_stream(self.device)

    def use(self, stream: torch.cuda.Stream) -> contextlib.AbstractContextManager[Any]:
        """`stream` current inside the block; the one before it again on every exit."""
        return torch.cuda.stream(stream)

    def graph(self) -> torch.cuda.CUDAGraph:
        return torch.cuda.CUDAGraph()

    def settle(self) -> None:
        """As `torch.cuda.graph` before a capture: the work queued so far done, the
        allocator's unused cached blocks freed for the graph's pool."""
        torch.cuda.synchronize(self.device)
        torch.cuda.empty_cache()

    def clear_cublas_workspaces(self) -> None:
        """Free cuBLAS's workspaces (a build without CUDA has no such call: nothing to free)."""
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()


def backend(device: torch.device) -> CudaGraphs | None:
    """The capture calls for `device`; None off CUDA (everything runs op by op there)."""
    return CudaGraphs(device) if device.type == "cuda" else None


def warm_up(cuda: CudaGraphs, fn: Callable[[], Any], times: int = WARM_UPS) -> None:
    """`fn` `times` times on a side stream, then the current stream waits for it."""
    side = cuda.stream()
    side.wait_stream(cuda.current_stream())
    try:
        with cuda.use(side):
            for _ in range(times):
                fn()
    finally:
        cuda.current_stream().wait_stream(side)


def record(cuda: CudaGraphs, fn: Callable[[], T]) -> tuple[Any, T]:
    """(graph, `fn`'s result): `fn` captured as one CUDA graph on a stream of its own,
    cuBLAS's workspaces cleared before and after (module docstring). Whatever raises is
    raised on with the caller's stream current again and no half-captured graph left."""
    graph = cuda.graph()
    capture_stream = cuda.stream()
    cuda.settle()
    cuda.clear_cublas_workspaces()
    try:
        with cuda.use(capture_stream):  # left on every exit, capture_end's error included
            graph.capture_begin()
            try:
                out = fn()
            except BaseException:  # end the capture (the stream leaves capture mode), drop it
                with contextlib.suppress(Exception):  # an invalidated capture fails to end
                    graph.capture_end()
                _reset(graph)
                raise
            try:
                graph.capture_end()
            except BaseException:
                _reset(graph)
                raise
    finally:
        cuda.clear_cublas_workspaces()
    return graph, out


def _reset(graph: Any) -> None:
    with contextlib.suppress(Exception):  # the error being raised is the one to report
        graph.reset()


def failure(kernels: str, what: str, exc: BaseException) -> str:
    """The one line a failed capture or compilation raises with: the mode, what failed,
    the error's first line, and the fix."""
    lines = str(exc).strip().splitlines()
    reason = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return (
        f"{kernels!r} kernels: the cohort's {what} failed ({reason}); nothing runs uncaptured "
        "under this mode's name: train with cohort_kernels eager (or fix the kernel)"
    )
