"""The cosine threshold of tag names (``memory.tag_match.VECTOR_THRESHOLD``), chosen on one set of
pairs and reported on another.

Each pair is two tag names an office would give, labelled ``True`` when a person searching one
wants the other (synonyms, loan word and Japanese word, abbreviation) and ``False`` when they
are near topics but not the same thing (経費精算 / 交通費 is a neighbour, not a synonym). Pairs
that the spelling rules already match (variants, compounds, readings) are left out: the vector
is what remains. ``TUNE`` picks the threshold with the best F0.5 (precision first; ties: the higher threshold);
``HELD_OUT`` (other words) reports precision and recall at it.

    python -m infra.bench.tag_pairs [--embedder local|vertex]
"""

from __future__ import annotations

import argparse
import sys

from shared_lib.memory.tag_match import cosine
from shared_lib.ports import Embedder

BETA = 0.5  # precision weighs more: a wrong tag offered misleads, a missed one is found by spelling

TUNE: list[tuple[str, str, bool]] = [
    ("打ち合わせ", "ミーティング", True),
    ("パソコン", "コンピュータ", True),
    ("見積もり", "見積書", True),
    ("請求書", "インボイス", True),
    ("顧客", "クライアント", True),
    ("有給休暇", "年休", True),
    ("社内チャット", "Slack", True),
    ("締め切り", "期限", True),
    ("採用", "リクルーティング", True),
    ("プログラミング", "コーディング", True),
    ("経費精算", "交通費", False),
    ("会議室", "会議費", False),
    ("打ち合わせ", "議事録", False),
    ("パソコン", "プリンター", False),
    ("見積もり", "請求書", False),
    ("顧客", "仕入先", False),
    ("有給休暇", "残業", False),
    ("採用", "退職", False),
    ("Rust", "Python", False),
    ("営業", "経理", False),
]
HELD_OUT: list[tuple[str, str, bool]] = [
    ("会議", "ミーティング", True),
    ("ノートPC", "ラップトップ", True),
    ("契約書", "契約", True),
    ("出張", "ビジネストリップ", True),
    ("問い合わせ", "問合せ対応", True),
    ("スケジュール", "予定", True),
    ("バグ", "不具合", True),
    ("研修", "トレーニング", True),
    ("出張", "経費精算", False),
    ("バグ", "リリース", False),
    ("スケジュール", "議事録", False),
    ("研修", "採用", False),
    ("契約書", "請求書", False),
    ("予算", "売上", False),
    ("勤怠", "給与", False),
    ("パスワード", "アカウント", False),
]


def similarities(embedder: Embedder, pairs: list[tuple[str, str, bool]]) -> list[tuple[float, bool]]:
    names = sorted({n for a, b, _ in pairs for n in (a, b)})
    vectors = dict(zip(names, embedder.embed(names, kind="query"), strict=True))
    return [(cosine(vectors[a], vectors[b]), same) for a, b, same in pairs]


def scores(sims: list[tuple[float, bool]], threshold: float) -> tuple[float, float, float]:
    """Precision, recall and F(``BETA``) of "same" at ``threshold``."""
    tp = sum(1 for s, same in sims if same and s >= threshold)
    fp = sum(1 for s, same in sims if not same and s >= threshold)
    fn = sum(1 for s, same in sims if same and s < threshold)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    beta2 = BETA * BETA
    f = (1 + beta2) * precision * recall / (beta2 * precision + recall) if precision + recall else 0.0
    return precision, recall, f


def choose(sims: list[tuple[float, bool]]) -> float:
    candidates = [round(0.80 + i * 0.005, 3) for i in range(40)]
    return max(candidates, key=lambda t: (scores(sims, t)[2], scores(sims, t)[0], t))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--embedder", choices=("local", "vertex"), help="default: the settings'")
    args = ap.parse_args(argv)
    from shared_lib.adapters.inproc_bus import InProcessBus
    from shared_lib.adapters.memory_store import MemoryStore
    from shared_lib.settings import Settings
    from shared_lib.wiring.composition import build_runtime

    values = {"embedder": args.embedder} if args.embedder else {}
    rt = build_runtime(
        settings=Settings.from_env(**values), store=MemoryStore(), llm=None, bus=InProcessBus(), notifiers=[]
    )
    if rt.embedder is None:
        print("no embedder configured", file=sys.stderr)
        return 2
    tune = similarities(rt.embedder, TUNE)
    threshold = choose(tune)
    held = similarities(rt.embedder, HELD_OUT)
    print(f"embedder {rt.embedder.name}: threshold {threshold:.3f} (best F0.5 on {len(TUNE)} tuning pairs)")
    for label, sims in (("tuning", tune), ("held-out", held)):
        p, r, f = scores(sims, threshold)
        print(f"{label:<9} precision {p:.2f} recall {r:.2f} F0.5 {f:.2f}")
    for (a, b, same), (s, _) in zip(TUNE + HELD_OUT, tune + held, strict=True):
        print(f"  {s:.3f} {'same' if same else 'diff'} {a} / {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
