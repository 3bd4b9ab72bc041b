"""The pipeline's fixed rules as data (``config/finetune.json``) and the organisation's opt-in.

>>> cfg = load_config()
>>> cfg.min_confidence, cfg.held_out_percent, cfg.export_max
(0.8, 10, 500)
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.adapters.doc_cache import DocCache
from shared_lib.ports import Store
from shared_lib.settings.config_files import parse_json_model

CONFIG_FILE = Path(__file__).resolve().parents[3] / "config" / "finetune.json"
OPT_IN_FIELD = "ft_staging"  # settings/company: the organisation's yes to training data (default no)
# The opt-in as staging reads it: the flags document's own bound (10 s) for a change made elsewhere
OPT_IN_CACHE = DocCache(seconds=10.0)
EXPORT_MAX = 500  # seed 001 §29.5: at most 500 examples a fine-tuning run; no file may raise it


class FinetuneConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str = ""
    min_confidence: Annotated[float, Field(ge=0, le=1)] = 0.8
    held_out_percent: Annotated[int, Field(ge=0, le=50)] = 10
    correction_cues: Annotated[list[str], Field(min_length=1)]
    correction_window_minutes: Annotated[int, Field(ge=1)] = 30
    pending_per_person_per_day: Annotated[int, Field(ge=1)] = 20
    export_max: Annotated[int, Field(ge=1, le=EXPORT_MAX)] = EXPORT_MAX
    per_person_max: Annotated[int, Field(ge=1)] = 100
    per_tool_max: Annotated[int, Field(ge=1)] = 150
    context_chars: Annotated[int, Field(ge=200)] = 4000
    system_text: Annotated[str, Field(min_length=1)]


@lru_cache(maxsize=4)
def load_config(path: str = str(CONFIG_FILE)) -> FinetuneConfig:
    return parse_json_model(FinetuneConfig, Path(path).read_text(encoding="utf-8"), path)


def company_path(org_id: str) -> str:
    return f"orgs/{org_id}/settings/company"


def opted_in(store: Store, org_id: str, *, cached: bool = False) -> bool:
    """Whether the organisation lets its conversations become training data (one read; with
    ``cached``, one read per ``OPT_IN_CACHE`` period in this process: the staging of a turn. The
    export reads it as it is now, so a turn staged in the seconds after an opt-out is never
    exported)."""
    path = company_path(org_id)
    doc = (OPT_IN_CACHE.read(store, path) if cached else store.get(path)) or {}
    return doc.get(OPT_IN_FIELD) is True


def set_opt_in(store: Store, org_id: str, on: bool) -> None:
    store.set(company_path(org_id), {OPT_IN_FIELD: on}, merge=True)
    OPT_IN_CACHE.forget(company_path(org_id))
