"""The peers table as a PNG: cycles per second against concurrency, one bar per path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a bench machine

import matplotlib.pyplot as plt

COLOURS = {
    "casework-lean": "#1f6feb",
    "casework-general": "#79b8ff",
    "postgraphile": "#d1242f",
    "postgraphile-nojwt": "#ff8182",
    "pgqueuer": "#8250df",
    "raw": "#6e7781",
    "raw+notify": "#1a7f37",
    "plain+notify": "#4ac26b",
}


def plot(
    rates: Mapping[int, Mapping[str, float]], paths: Sequence[str], title: str, path: Path
) -> None:
    """Grouped bars: one group per concurrency, one bar per path, the rate written on it."""
    concurrencies = list(rates)
    width = 0.8 / len(paths)
    figure, axes = plt.subplots(figsize=(12, 6), dpi=120)
    for offset, name in enumerate(paths):
        xs = [index + (offset - (len(paths) - 1) / 2) * width for index in range(len(rates))]
        ys = [rates[concurrency][name] for concurrency in concurrencies]
        bars = axes.bar(xs, ys, width * 0.92, label=name, color=COLOURS.get(name))
        axes.bar_label(bars, labels=[f"{y:,.0f}" for y in ys], fontsize=7, padding=2)
    axes.set_xticks(range(len(rates)), [f"{c} worker{'s' * (c != 1)}" for c in concurrencies])
    axes.set_xlabel("concurrency (client workers = connections = server pool size)")
    axes.set_ylabel("claim+decide cycles per second")
    axes.set_title(title, fontsize=11)
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    axes.margins(y=0.22)
    axes.legend(ncols=4, loc="upper left", fontsize=9, frameon=False)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
