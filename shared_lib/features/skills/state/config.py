"""The sandbox's limits (``config/skills.json``): per-run time, memory, output, imports, and
the collections a skill may declare it reads (``readable``: each at the level of the built-in
tool that reads it; only organisation-shared collections, nothing private to a person).

>>> load_config().timeout_seconds
10.0
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared_lib.errors import ConfigError
from shared_lib.settings import config_files

SKILLS_FILE = Path(__file__).resolve().parents[3] / "config" / "skills.json"
_MODULE = r"^[a-z_][a-z0-9_]*$"


class SandboxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 10.0  # one run's wall clock
    max_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 60.0  # what a caller may ask for
    memory_mb: Annotated[int, Field(ge=64, le=4096)] = 512  # the child's address space
    max_output_bytes: Annotated[int, Field(ge=1024, le=1_048_576)] = 65_536
    max_open_files: Annotated[int, Field(ge=8, le=256)] = 16
    # the boundary (``skills/isolation.py``): namespaces, a read-only root, an unprivileged user,
    # seccomp. Where this machine cannot make them a skill is refused (``sandbox_unavailable``),
    # unless this says a run with the rest only (process, user, rlimits, seccomp) is acceptable
    allow_without_os_isolation: bool = False
    tmpfs_mb: Annotated[int, Field(ge=1, le=256)] = 8  # the only writable place: its cwd and TMPDIR
    # RLIMIT_NPROC: processes and threads of the sandbox's user, all runs together (seccomp
    # refuses a new process anyway; this bounds threads)
    max_processes: Annotated[int, Field(ge=1, le=256)] = 16
    registry_cache_seconds: Annotated[float, Field(ge=0, le=60)] = 2.0  # active skills, per process
    import_allowlist: tuple[Annotated[str, Field(pattern=_MODULE)], ...]
    # collection -> the level of the built-in read tool that exposes it (config/tools.json)
    readable: dict[Annotated[str, Field(pattern=_MODULE)], Annotated[int, Field(ge=1, le=6)]] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _timeouts(self) -> SandboxConfig:
        if self.timeout_seconds > self.max_timeout_seconds:
            raise ValueError("timeout_seconds is above max_timeout_seconds")
        return self


def load_config(path: Path | None = None) -> SandboxConfig:
    file = path or SKILLS_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: {exc}") from exc
    return config_files.parse_json_model(SandboxConfig, text, str(file))


@cache
def packaged() -> SandboxConfig:
    """The packaged ``config/skills.json``, read once per process."""
    return load_config()
