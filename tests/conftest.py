"""Test-session settings shared by every test module."""

from envgen.agents.threads import DEFAULT_TORCH_THREADS, set_torch_threads

# In-process runs must use the same torch thread count as the CLIs (`--torch-threads`),
# so that a run recorded with `envgen run` replays bit-identically inside a test.
set_torch_threads(DEFAULT_TORCH_THREADS)
