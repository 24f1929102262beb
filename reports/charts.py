"""Inline SVG charts, drawn in Python so the dashboard needs no script and no network."""

from __future__ import annotations

import math
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 600, 260, 60, 40, 24, 190


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        high = low + 1.0
    return [low + (high - low) * i / (count - 1) for i in range(count)]


def line_chart(
    title: str,
    series: dict[str, list[tuple[float, float]]],
    x_label: str,
    y_label: str,
    log_x: bool = True,
) -> str:
    """Lines with markers, one per series; x on a log2 scale (token counts)."""
    points = [p for values in series.values() for p in values]
    if not points:
        return f'<p class="empty">{escape(title)}: no data</p>'
    fx = (lambda x: math.log2(max(x, 1e-9))) if log_x else float
    xs, ys = [fx(x) for x, _ in points], [y for _, y in points]
    x_low, x_high = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y_high = max(ys) * 1.1 or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (fx(x) - x_low) / (x_high - x_low) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - y / y_high * plot_h

    parts = [
        f'<svg class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{LEFT}" y="14" class="title">{escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
        f'class="axis"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" class="axis"/>',
    ]
    for tick in _ticks(0.0, y_high):
        parts.append(
            f'<text x="{LEFT - 4}" y="{py(tick) + 4:.1f}" class="tick" text-anchor="end">'
            f"{tick:.3g}</text>"
        )
    for x in sorted({x for x, _ in points}):
        parts.append(
            f'<text x="{px(x):.1f}" y="{TOP + plot_h + 14}" class="tick" text-anchor="middle">'
            f"{x:g}</text>"
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 6}" class="label" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    parts.append(
        f'<text x="12" y="{TOP + plot_h / 2}" class="label" '
        f'transform="rotate(-90 12 {TOP + plot_h / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for i, (name, values) in enumerate(sorted(series.items())):
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(values))
        parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts += [
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}">'
            f"<title>{escape(name)}: {x:g} tokens, {y:.4g}</title></circle>"
            for x, y in values
        ]
        parts.append(
            f'<text x="{LEFT + plot_w + 8}" y="{TOP + 12 + 14 * i}" class="legend" fill="{color}">'
            f"{escape(name)}</text>"
        )
    return "\n".join(parts + ["</svg>"])


def sparkline(
    values: list[float], highlight_last: bool = True, width: int = 120, height: int = 24
) -> str:
    """A tiny trend of per-run medians, oldest first; the latest run is a dot."""
    if not values:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = width / max(len(values) - 1, 1)
    coords = [
        (i * step, height - 3 - (v - low) / span * (height - 6)) for i, v in enumerate(values)
    ]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    dot = (
        f'<circle cx="{coords[-1][0]:.1f}" cy="{coords[-1][1]:.1f}" r="2.5" fill="#d62728"/>'
        if highlight_last
        else ""
    )
    return (
        f'<svg class="spark" width="{width + 4}" height="{height}" '
        f'viewBox="-2 0 {width + 4} {height}">'
        f'<polyline points="{path}" fill="none" stroke="#555" stroke-width="1.5"/>{dot}</svg>'
    )


def interval_chart(
    title: str, rows: list[tuple[str, float, float, float]], reference: float = 1.0
) -> str:
    """One horizontal point with its confidence interval per row: (label, value, low, high)."""
    if not rows:
        return f'<p class="empty">{escape(title)}: no data</p>'
    label_w, plot_w, row_h = 260, 300, 18
    high = max(max(r[3] for r in rows), reference) * 1.05
    height = TOP + row_h * len(rows) + 20

    def px(v: float) -> float:
        return label_w + v / high * plot_w

    parts = [
        f'<svg class="chart" width="{label_w + plot_w + 20}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><text x="0" y="14" class="title">{escape(title)}</text>',
        f'<line x1="{px(reference):.1f}" y1="{TOP - 4}" x2="{px(reference):.1f}" '
        f'y2="{height - 16}" class="reference"/>',
        f'<text x="{px(reference):.1f}" y="{height - 4}" class="tick" text-anchor="middle">'
        f"{reference:g}</text>",
    ]
    for i, (label, value, low, high_ci) in enumerate(rows):
        y = TOP + row_h * i + row_h / 2
        parts += [
            f'<text x="{label_w - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">'
            f"{escape(label)}</text>",
            f'<line x1="{px(low):.1f}" y1="{y:.1f}" x2="{px(high_ci):.1f}" y2="{y:.1f}" '
            f'stroke="#1f77b4" stroke-width="2"/>',
            f'<circle cx="{px(value):.1f}" cy="{y:.1f}" r="3.5" fill="#1f77b4">'
            f"<title>{escape(label)}: {value:.3f} [{low:.3f}, {high_ci:.3f}]</title></circle>",
        ]
    return "\n".join(parts + ["</svg>"])
