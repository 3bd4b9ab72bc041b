"""Slow-changing documents kept per process (``adapters.doc_cache``): how stale, and when not."""

from __future__ import annotations

from infra.bench.hops import CountingStore
from shared_lib.adapters.doc_cache import DocCache
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.finetune.state import config as ft_config

COMPANY = "orgs/kitakyu-shoji/settings/company"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_document_is_read_once_per_period_and_a_change_elsewhere_is_seen_after_it():
    # GIVEN the company settings kept 10 s
    store, clock = CountingStore(MemoryStore()), Clock()
    store.inner.set(COMPANY, {"values": "誠実・挑戦・感謝", "ft_staging": True})
    cache = DocCache(seconds=10, clock=clock)
    # WHEN three turns read it within the period, then another process changes it
    reads = [cache.read(store, COMPANY) for _ in range(3)]  # type: ignore[arg-type]
    store.inner.set(COMPANY, {"values": "誠実・挑戦・感謝", "ft_staging": False})
    within = cache.read(store, COMPANY)  # type: ignore[arg-type]
    clock.now += 10.5
    after = cache.read(store, COMPANY)  # type: ignore[arg-type]
    # THEN one read served the period; the change shows once the period is over, never later
    assert [r["ft_staging"] for r in reads] == [True] * 3  # type: ignore[index]
    assert within["ft_staging"] is True and after["ft_staging"] is False  # type: ignore[index]
    assert dict(store.ops["ingress"]) == {"get": 2}


def test_an_opt_out_in_this_process_is_seen_by_the_next_staging_at_once(monkeypatch):
    # GIVEN an organisation opted in, its opt-in read by staging (cached)
    clock = Clock()
    monkeypatch.setattr(ft_config, "OPT_IN_CACHE", DocCache(seconds=10, clock=clock))
    store = MemoryStore()
    ft_config.set_opt_in(store, "kitakyu-shoji", True)
    assert ft_config.opted_in(store, "kitakyu-shoji", cached=True) is True
    # WHEN an operator of this process turns it off
    ft_config.set_opt_in(store, "kitakyu-shoji", False)
    # THEN the next staging reads no from the store, without waiting out the period
    assert ft_config.opted_in(store, "kitakyu-shoji", cached=True) is False


def test_a_reader_cannot_change_what_the_next_reader_is_given():
    store, cache = MemoryStore(), DocCache(seconds=10, clock=Clock())
    store.set(COMPANY, {"values": "お客様第一"})
    cache.read(store, COMPANY)["values"] = "書き換え"  # type: ignore[index]
    assert cache.read(store, COMPANY) == {"values": "お客様第一"}
