"""Episodic memory (seed 001 §22): stories of what happened, in the persona's voice.

Two kinds, both at ``orgs/{org}/episodes/{id}`` in the seed's JSON form (§22.3: ``id`` a UUID,
``type``, ``date``, ``time``, ``story_text``, ``metadata`` {mood, topics, characters,
importance, related_chunks, tags}), masked at rest, kept for the organisation's retention
(``expires_at``), naming the people in it (``user_ids``: how ``charter data purge`` finds it):

* ``daily_digest``: the day's conversations of the organisation (JST day), told as a diary
  entry. Written once per organisation and day (the id derives from them); a day with fewer
  than ``min_events_for_daily`` messages from people gets none.
* ``event_driven``: one completed turn worth remembering (``triggers``): a task marked done,
  a goal reached, a person saying 「覚えておいて」「これ重要」. Once per turn.

The story comes from a ``call_type="summary"`` call (``answers.ask_json``): the persona's
prompt of §22.4 asks for JSON, a bad answer is retried once, a second one is reported as a
failed ``EpisodeOutcome`` and nothing is stored. The tags the model gives the story are put
on the episode at once (``tagged_by="realtime"``); the background job tags it later too.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Literal

from cryptography.fernet import MultiFernet
from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared_lib.adapters.scoped import scoped
from shared_lib.collections import collection_path, path
from shared_lib.dates import display_date
from shared_lib.dates.model import JST
from shared_lib.errors import LLMOutputError
from shared_lib.memory import tags as tagging
from shared_lib.memory.answers import ask_json
from shared_lib.memory.day_log import day_log
from shared_lib.memory.triggers import TurnFacts, trigger_of
from shared_lib.observability.logs import log_event
from shared_lib.persona.catalogue import Persona
from shared_lib.ports import LLM, Doc, Store
from shared_lib.privacy.sanitizer import Sanitizer, unmask
from shared_lib.privacy.sealing import seal

EpisodeType = Literal["daily_digest", "event_driven"]
_NAMESPACE = uuid.UUID("6f1c2a9e-4b7d-5e30-9a21-0c8d3f5b7e14")  # episode ids: uuid5 under it
REALTIME_TAG_CONFIDENCE = 0.7
LIST_LIMIT = 200


class StoryConfig(BaseModel):
    """Seed 001 §22.7 ``[story]`` (defaults are the seed's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    min_events_for_daily: int = Field(default=3, ge=1)
    event_driven: bool = True
    max_story_length: int = Field(default=800, ge=100)
    use_persona: bool = True


class Metadata(BaseModel):
    # the model writes it: a key of its own is dropped, not a reason to refuse the story
    model_config = ConfigDict(extra="ignore")
    mood: list[str] = Field(default_factory=list, max_length=10)
    topics: list[str] = Field(default_factory=list, max_length=20)
    characters: list[str] = Field(default_factory=list, max_length=20)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    related_chunks: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list, max_length=15)

    @field_validator("mood", "topics", "characters", "tags")
    @classmethod
    def _words(cls, value: list[str]) -> list[str]:
        return [w.strip()[:60] for w in value if w.strip()]


class Episode(BaseModel):
    """One episode in the seed's JSON form (§22.3)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    type: EpisodeType
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    time: str = Field(pattern=r"^\d{2}:\d{2}:\d{2}$")
    story_text: str = Field(min_length=1)
    metadata: Metadata


class StoryAnswer(BaseModel):
    """What the model answers: the story and its metadata (the ids are ours)."""

    model_config = ConfigDict(extra="ignore")
    story_text: str = Field(min_length=20)
    metadata: Metadata = Field(default_factory=Metadata)

    @field_validator("story_text")
    @classmethod
    def _story(cls, value: str) -> str:
        return value.strip()


@dataclass(frozen=True)
class EpisodeOutcome:
    """What one call did: ``written``, ``exists`` (written before), ``skipped`` (nothing to
    tell: ``reason`` says why) or ``failed`` (the model's answer was refused twice)."""

    status: Literal["written", "exists", "skipped", "failed"]
    episode_id: str = ""
    reason: str = ""
    episode: Episode | None = field(default=None, compare=False)


def episode_id(org_id: str, key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{org_id}:{key}"))


def episode_path(org_id: str, eid: str) -> str:
    return path("episodes", org=org_id, id=eid)


def story_system(persona: Persona, config: StoryConfig, kind: EpisodeType) -> str:
    """The prompt of §22.4 in the persona's voice, asking for the JSON of §22.3."""
    core = persona.core()
    who = (
        f"あなたは{core.persona.name}です。{core.persona.species}。{core.persona.base_personality}。"
        f"一人称は「{core.tone.first_person}」、文末は「{'」「'.join(core.tone.sentence_endings)}」。"
        if config.use_persona
        else "あなたは記録係です。"
    )
    what = (
        "以下の会話ログを元に、あなたの視点でその日の出来事を日記のように書いてください。"
        if kind == "daily_digest"
        else "以下のやり取りを、あとで思い出せる短いエピソードとして書いてください。"
    )
    return (
        f"{who}\n\n{what}\n\nルール:\n"
        "- 事実だけでなく、あなたが感じたこと、考えたことも書く\n"
        f"- {core.persona.name}の口調・性格を反映する\n"
        "- 重要な決定事項は具体的に記録する\n"
        "- 人間関係や感情的な側面も大切にする\n"
        f"- 長すぎず、読み返して楽しい長さにする（{config.max_story_length // 3}-{config.max_story_length}文字程度）\n"
        "- 伏せ字（[EMAIL] など）はそのまま残し、推測で埋めない\n\n"
        'JSONだけを返してください: {"story_text": "...", "metadata": {"mood": ["..."], '
        '"topics": ["..."], "characters": ["登場した人の名前"], "importance": 0.0〜1.0, '
        '"tags": ["..."]}}'
    )


def _ask_story(
    llm: LLM, persona: Persona, config: StoryConfig, kind: EpisodeType, model: str, user: str
) -> StoryAnswer:
    def not_a_transcript(answer: StoryAnswer) -> None:
        if len(answer.story_text) > 2 * config.max_story_length:
            raise ValueError(
                f"story of {len(answer.story_text)} characters, at most {config.max_story_length}"
            )

    return ask_json(
        llm,
        job=kind,
        model=model,
        system=story_system(persona, config, kind),
        user=user,
        answer=StoryAnswer,
        check=not_a_transcript,
    )


def _store(
    store: Store,
    org_id: str,
    episode: Episode,
    *,
    now: datetime,
    retention: timedelta,
    user_ids: list[str],
    extra: Doc,
    cipher: MultiFernet | None = None,
) -> bool:
    """Create the episode document (masked, its values sealed: ``sealing``); ``False`` when it
    was there already."""
    body = seal(episode.model_dump(), cipher)
    doc = {
        **body,
        **tagging.untagged_fields(),
        **extra,
        "user_ids": sorted(set(user_ids)),
        "created_at": now,
        "expires_at": now + retention,
    }
    created = scoped(store, org_id).create(episode_path(org_id, episode.id), doc)
    if created and episode.metadata.tags:
        tagging.assign(
            store,
            org_id,
            episode_path(org_id, episode.id),
            [tagging.ScoredTag(tag=t, confidence=REALTIME_TAG_CONFIDENCE) for t in episode.metadata.tags],
            now=now,
            tagged_by="realtime",
            config=tagging.TaggingConfig(),
        )
    return created


def _failed(kind: str, org_id: str, eid: str, exc: LLMOutputError) -> EpisodeOutcome:
    log_event(
        "episode_failed", severity="WARNING", org_id=org_id, kind=kind, episode_id=eid, reason=exc.detail
    )
    return EpisodeOutcome("failed", eid, exc.detail)


@dataclass(frozen=True)
class _Telling:
    org_id: str
    eid: str
    kind: EpisodeType
    at: datetime  # the episode's date and time (JST)
    prompt: str  # the call's user message
    user_ids: list[str]  # the people in it
    extra: Doc  # what the document adds to the seed's form (the trigger, the turn)


def _tell(
    store: Store,
    llm: LLM,
    persona: Persona,
    telling: _Telling,
    *,
    now: datetime,
    model: str,
    retention: timedelta,
    config: StoryConfig,
    cipher: MultiFernet | None = None,
) -> EpisodeOutcome:
    """Ask for the story, then store it once. The model reads the prompt's values numbered
    (``[PHONE_1]``), so the placeholders of its story are given back their values here and
    sealed with the episode (``sealing``): what the person said to keep is not lost in it."""
    prompt, vault = Sanitizer.default().mask(telling.prompt)
    try:
        answer = _ask_story(llm, persona, config, telling.kind, model, prompt)
    except LLMOutputError as exc:
        return _failed(telling.kind, telling.org_id, telling.eid, exc)
    episode = Episode(
        id=telling.eid,
        type=telling.kind,
        date=telling.at.date().isoformat(),
        time=telling.at.strftime("%H:%M:%S"),
        story_text=unmask(answer.story_text, vault) if cipher is not None else answer.story_text,
        metadata=answer.metadata,
    )
    created = _store(
        store,
        telling.org_id,
        episode,
        now=now,
        retention=retention,
        user_ids=telling.user_ids,
        extra=telling.extra,
        cipher=cipher,
    )
    return EpisodeOutcome("written" if created else "exists", telling.eid, episode=episode)


def daily_digest(
    store: Store,
    llm: LLM,
    persona: Persona,
    org_id: str,
    day: date,
    now: datetime,
    model: str,
    *,
    retention: timedelta,
    config: StoryConfig | None = None,
    cipher: MultiFernet | None = None,
) -> EpisodeOutcome:
    """The digest of ``org_id``'s ``day`` (JST), written once; with ``cipher`` the values its
    messages sealed are sealed in it too (``_tell``)."""
    config = config or StoryConfig()
    eid = episode_id(org_id, f"daily:{day.isoformat()}")
    if scoped(store, org_id).get(episode_path(org_id, eid)) is not None:
        return EpisodeOutcome("exists", eid)
    log = day_log(store, org_id, day, persona_name=persona.name, cipher=cipher)
    if log.events < config.min_events_for_daily:
        return EpisodeOutcome(
            "skipped", eid, f"{log.events} messages, fewer than {config.min_events_for_daily}"
        )
    last = log.last_at.astimezone(JST) if log.last_at else datetime.combine(day, time(23, 59, 59), JST)
    prompt = f"{display_date(day)}の会話ログ:\n{log.text}"
    telling = _Telling(org_id, eid, "daily_digest", last, prompt, log.user_ids, {"trigger": "daily"})
    return _tell(
        store, llm, persona, telling, now=now, model=model, retention=retention, config=config, cipher=cipher
    )


def event_episode(
    store: Store,
    llm: LLM,
    persona: Persona,
    org_id: str,
    turn_facts: TurnFacts,
    now: datetime,
    model: str,
    *,
    retention: timedelta,
    config: StoryConfig | None = None,
    cipher: MultiFernet | None = None,
) -> EpisodeOutcome:
    """An episode of a completed turn when it is worth one (``triggers.trigger_of``), once per turn."""
    config = config or StoryConfig()
    eid = episode_id(org_id, f"turn:{turn_facts.turn_id}")
    trigger = trigger_of(turn_facts)
    if trigger is None or not config.event_driven:
        return EpisodeOutcome("skipped", eid, "no trigger" if trigger is None else "event episodes are off")
    if scoped(store, org_id).get(episode_path(org_id, eid)) is not None:
        return EpisodeOutcome("exists", eid)
    at, extra = turn_facts.at.astimezone(JST), {"trigger": trigger, "source_turn_id": turn_facts.turn_id}
    prompt, people = turn_facts.prompt(trigger), [turn_facts.user_id]
    telling = _Telling(org_id, eid, "event_driven", at, prompt, people, extra)
    return _tell(
        store, llm, persona, telling, now=now, model=model, retention=retention, config=config, cipher=cipher
    )


def list_episodes(
    store: Store, org_id: str, *, day: date | None = None, limit: int = LIST_LIMIT
) -> list[tuple[str, Doc]]:
    """An organisation's episodes, newest first (one day's with ``day``: an equality filter,
    sorted here, so no composite index is needed)."""
    org_store = scoped(store, org_id, read_only=True)
    where = collection_path("episodes", org=org_id)
    if day is None:
        return org_store.query(where, order_by="created_at", descending=True, limit=limit)
    docs = org_store.query(where, where=[("date", "==", day.isoformat())], limit=limit)
    return sorted(docs, key=lambda d: str(d[1].get("time", "")), reverse=True)


def get_episode(store: Store, org_id: str, eid: str) -> Doc | None:
    return scoped(store, org_id, read_only=True).get(episode_path(org_id, eid))
