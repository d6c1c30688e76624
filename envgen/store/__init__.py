"""The run store: what a finished run directory holds and how its files are checked.

`envgen.store.run_dir` lays out a run's directory and names every file in it: its
config, logs, cycle files, final metrics, provenance (machine, software, sessions,
results version) and, written last when it is sealed, the manifest (every file with its
sha256 and record count). docs/pipeline.md, "Run store".
"""

from envgen.store.lifecycle import finish_run, start_session
from envgen.store.manifest import (
    MANIFEST,
    RunStoreError,
    is_sealed,
    read_run_bytes,
    run_file_exists,
    seal_run,
    verify_run,
)
from envgen.store.provenance import PROVENANCE, is_current, read_provenance, recorded_version

__all__ = [
    "MANIFEST",
    "PROVENANCE",
    "RunStoreError",
    "finish_run",
    "is_current",
    "is_sealed",
    "read_provenance",
    "read_run_bytes",
    "recorded_version",
    "run_file_exists",
    "seal_run",
    "start_session",
    "verify_run",
]
