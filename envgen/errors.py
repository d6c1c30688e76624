"""Errors the package raises on bad input; each message names the field and the fix."""

from __future__ import annotations

import errno


class EnvGenError(Exception):
    """Base class for every error this package raises on purpose."""


class FileWriteError(EnvGenError, OSError):
    """A file could not be written (a full disk, a read-only folder): one line naming the
    path and the fix; still an `OSError` with its `errno`, for handlers of the original."""

    def __init__(self, path: object, exc: OSError):
        super().__init__(exc.errno, exc.strerror)
        self.filename = str(path)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            fix = "free space on its disk, then run the command again"
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            fix = "make its folder writable (or give another directory), then run it again"
        else:
            fix = "check its disk and folder, then run the command again"
        self.message = f"{path}: cannot be written ({exc.strerror or exc}); {fix}"

    def __str__(self) -> str:
        return self.message


class ConfigError(EnvGenError, ValueError):
    """A configuration field (`path`, dotted: ``environment_settings.coal_rarity``) is
    unknown or holds a value that cannot be coerced."""

    def __init__(self, path: str, message: str, *, file: object = None):
        self.path = path
        self.message = message
        self.file = file
        parts = [str(part) for part in (file, path) if part]
        super().__init__(": ".join([*parts, message]))

    def in_file(self, file: object) -> ConfigError:
        """This error with the file that holds the field named (kept if already set)."""
        return ConfigError(self.path, self.message, file=self.file or file)


class RunSettingError(ConfigError):
    """A run's setting no attempt can follow (`llm_history_cycles: auto` for a model of
    unknown context): the executor records `config_error` and does not retry it."""


class LLMResponseError(EnvGenError):
    """An LLM reply did not yield the environments that were asked for."""


class LLMTransportError(EnvGenError):
    """No usable answer came from the LLM server (unreachable, refused, rate-limited, a
    malformed reply): never recorded as a reply; the job fails and the executor retries it."""


class CacheMissError(EnvGenError):
    """Replay mode found no recorded response for a request (never calls the network)."""


class CacheIntegrityError(EnvGenError):
    """A cache file's request does not hash to its name, or a record would overwrite."""


class InputError(EnvGenError):
    """Bad input at `where` (a file, a row, a claim), said as "where: detail"; `detail`
    alone is kept for callers that put it in their own words."""

    def __init__(self, where: object, detail: str):
        self.detail = detail
        super().__init__(f"{where}: {detail}")


class StatsInputError(InputError, ValueError):
    """Run arrays or reported numbers given to `envgen.stats` (at a row, claim or column)
    are malformed."""


class ReportInputError(InputError, ValueError):
    """A results file read by `envgen.report` (runs.json, a run directory) is malformed."""
