"""The context keeps an organisation's people and teachings per process for the flags' refresh
interval (issue 39: two queries a turn less); what changes reaches the prompt within it, and
nothing that decides reads the kept copy."""

from __future__ import annotations

from context_fakes import ORG, OTHER_ORG, context_input, seed_org

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context import ContextBuilder, ContextConfig
from shared_lib.settings import Settings


class CountingQueries(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.queried: list[str] = []

    def query(self, collection, **kw):
        self.queried.append(collection.rsplit("/", 1)[-1])
        return super().query(collection, **kw)


class Tick:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def builder(ttl: float = 10.0) -> tuple[ContextBuilder, Tick]:
    b, tick = ContextBuilder(ContextConfig(token_budget=5000, lists_ttl_seconds=ttl)), Tick()
    b.lists.monotonic = tick
    return b, tick


def build(b: ContextBuilder, store, text="山田さんに今週の進捗どうなってるか聞いといて🙏", org=ORG):
    return b.build(context_input(store, text, org=org))


def seeded() -> CountingQueries:
    store = CountingQueries()
    seed_org(store)
    seed_org(store, OTHER_ORG, marker="GLOBEX")
    return store


def test_within_the_interval_a_turn_queries_neither_the_directory_nor_the_teachings():
    store, (b, tick) = seeded(), builder()
    first = build(b, store)
    tick.now += 9.5
    store.queried.clear()
    again = build(b, store, text="月曜の朝イチで会議室おさえといて")
    assert "users" not in store.queried and "teachings" not in store.queried
    assert again.values["persons"] and again.values["teachings"] == first.values["teachings"]


def test_a_teaching_added_and_a_person_hired_reach_the_prompt_once_the_interval_is_over():
    store, (b, tick) = seeded(), builder()
    build(b, store)
    store.set(
        f"orgs/{ORG}/teachings/t9", {"content": "年末年始は無理せず休む", "priority": 20, "active": True}
    )
    store.set(f"orgs/{ORG}/users/u-new", {"name": "高橋 花子", "level": 2, "department_id": "sales"})
    tick.now += 10.0
    later = build(b, store, text="高橋さんに年末の挨拶まわり、一緒に行けるか聞いて")
    assert later.values["teachings"][0]["content"] == "年末年始は無理せず休む"
    assert "高橋 花子" in [p["name"] for p in later.values["persons"]]


def test_each_organisation_keeps_its_own_lists():
    store, (b, _) = seeded(), builder()
    ours = build(b, store).values["teachings"]
    theirs = build(b, store, org=OTHER_ORG).values["teachings"]
    assert [t["content"] for t in ours] == ["お客様第一"]
    assert [t["content"] for t in theirs] == ["お客様第一GLOBEX"]


def test_a_refresh_interval_of_zero_keeps_nothing():
    store, (b, _) = seeded(), builder(ttl=0)
    build(b, store)
    store.queried.clear()
    build(b, store)
    assert store.queried.count("users") == 1 and store.queried.count("teachings") == 1


def test_what_a_turn_is_given_is_its_own_copy():
    store, (b, _) = seeded(), builder()
    first = build(b, store)
    first.values["teachings"].clear()
    first.values["persons"][0]["name"] = "書き換え"
    again = build(b, store)
    assert again.values["teachings"] and "書き換え" not in [p["name"] for p in again.values["persons"]]


def test_the_interval_is_the_flags_refresh_interval():
    settings = Settings.from_env({"CHARTER_ENV": "test", "CHARTER_FLAGS_TTL": "3"})
    assert ContextConfig.from_settings(settings).lists_ttl_seconds == 3.0
