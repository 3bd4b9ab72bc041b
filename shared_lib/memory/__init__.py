"""Long-term memory (seed 001 §18): chunks of teachings, knowledge, values and memories,
indexed for a Japanese-aware keyword search (BM25) and by their embeddings, searched by both
and fused. ``chunking`` cuts a text, ``keyword`` reads its terms, ``index`` writes the chunks
and the organisation's term statistics, ``search`` answers a query for one reader, ``ingest``
is the way teachings, knowledge and company values come in (with seed 000's levels).
"""
