"""How a setting is declared and read: the field helper with its deploy metadata, and the
source that reads a given mapping instead of the process environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import AliasChoices, Field
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

ALL = "*"


def _f(
    default: Any,
    *names: str,
    targets: tuple[str, ...] = (ALL,),
    deploy: Literal["env", "secret"] | None = None,
    required: bool = False,
    doc: str = "",
    **constraints: Any,
) -> Any:
    """A settings field read from ``names`` (the first set wins), with its deploy metadata."""
    alias: str | AliasChoices = names[0] if len(names) == 1 else AliasChoices(*names)
    return Field(
        default,
        validation_alias=alias,
        description=doc,
        json_schema_extra={"env": names[0], "targets": list(targets), "deploy": deploy, "required": required},
        **constraints,
    )


class _MappingSource(EnvSettingsSource):
    """The environment source, reading a given mapping instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(
            self._environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
        )


def _names(info: FieldInfo) -> list[str]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(c) for c in alias.choices]
    return [str(alias)] if alias else []


def _meta(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}
