"""Memory (seed 001 §18–22): what lasts beyond one conversation. Domain floor, between
``state`` and ``context``: it imports the ports, the organisation-scoped store view
(``adapters.scoped``), the persona and the sanitizer; never ``tools``, ``policy`` or ``state``
(the memory tools in ``tools/`` use it), ``context``, ``layers`` or the runtime.

Long-term memory (§18): chunks of teachings, knowledge, values, memories and episodes, indexed
for a Japanese-aware keyword search (BM25) and by their embeddings, searched by both and fused.
``chunking`` cuts a text, ``keyword`` reads its terms, ``index`` writes the chunks and the
organisation's term statistics, ``search`` answers a query for one reader, ``ingest`` is the way
teachings, knowledge and company values come in (with seed 000's levels).

* ``episodes``: episodic memory (§22) — a daily digest per organisation and day, and
  event-driven episodes of a turn (a task done, a goal reached, 「覚えておいて」).
* ``tags``: dynamic tags on episodes and chunks (§21), the daily tagging job, tag search.
* ``answers``: the JSON answer of a background memory call, validated, retried once.
"""
