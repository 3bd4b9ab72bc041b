"""Inline SVG line charts for the dashboard (no chart library, no script).

``line_chart`` draws one series over time: a polyline (gaps where a window had no
data), the threshold as a dashed line, the first and last time labels and the maximum.
All text is escaped; the markup is safe to insert as HTML.

>>> svg = line_chart("block rate", [("00:00", 0.0), ("01:00", 0.2)], threshold=0.1, percent=True)
>>> svg.startswith("<svg") and "block rate" in svg
True
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT = 360, 140
PAD_L, PAD_R, PAD_T, PAD_B = 44, 10, 22, 22


def _fmt(value: float, percent: bool, unit: str) -> str:
    if percent:
        return f"{value:.0%}"
    if value >= 100:
        return f"{value:,.0f}{unit}"
    return f"{value:.3g}{unit}"


def line_chart(
    title: str,
    points: Sequence[tuple[str, float | None]],
    *,
    threshold: float | None = None,
    percent: bool = False,
    unit: str = "",
) -> str:
    values = [v for _, v in points if v is not None]
    top = max([*values, threshold or 0.0, 1e-9]) * 1.15
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B
    n = max(1, len(points) - 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return PAD_L + inner_w * i / n, PAD_T + inner_h * (1 - v / top)

    segments: list[list[str]] = [[]]
    for i, (_, v) in enumerate(points):
        if v is None:
            if segments[-1]:
                segments.append([])
            continue
        x, y = xy(i, v)
        segments[-1].append(f"{x:.1f},{y:.1f}")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{PAD_L}" y="14" class="chart-title">{escape(title)}</text>',
        f'<line x1="{PAD_L}" y1="{PAD_T + inner_h}" x2="{WIDTH - PAD_R}" y2="{PAD_T + inner_h}" class="axis"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{PAD_T + inner_h}" class="axis"/>',
        f'<text x="{PAD_L - 4}" y="{PAD_T + 4}" class="tick" text-anchor="end">{escape(_fmt(top, percent, unit))}</text>',
        f'<text x="{PAD_L - 4}" y="{PAD_T + inner_h}" class="tick" text-anchor="end">0</text>',
    ]
    if threshold is not None:
        _, ty = xy(0, threshold)
        parts.append(
            f'<line x1="{PAD_L}" y1="{ty:.1f}" x2="{WIDTH - PAD_R}" y2="{ty:.1f}" class="threshold"/>'
        )
    for seg in segments:
        if len(seg) == 1:
            cx, cy = seg[0].split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" class="point"/>')
        elif seg:
            parts.append(f'<polyline points="{" ".join(seg)}" class="series"/>')
    if points:
        parts.append(f'<text x="{PAD_L}" y="{HEIGHT - 6}" class="tick">{escape(points[0][0])}</text>')
        parts.append(
            f'<text x="{WIDTH - PAD_R}" y="{HEIGHT - 6}" class="tick" text-anchor="end">'
            f"{escape(points[-1][0])}</text>"
        )
    if not values:
        parts.append(
            f'<text x="{PAD_L + inner_w / 2}" y="{PAD_T + inner_h / 2}" class="tick" '
            f'text-anchor="middle">no data</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
