"""The report's figures, drawn by matplotlib (Agg) and returned as inline SVG text: no network, no CDN, no
image files beside the page. Text stays text in the SVG (svg.fonttype none), which keeps a 45-model page
small and its labels searchable; ids and metadata are fixed so the same run gives the same page. Labels are
names as written: no mathtext (a '$' in a model or subset name is a '$', not TeX that fails to parse) and no
LaTeX, whatever the user's matplotlibrc says."""
from __future__ import annotations

import functools
import html
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

STYLE = {"svg.fonttype": "none", "svg.hashsalt": "ragjudge", "font.size": 8, "font.family": "sans-serif",
         "axes.spines.top": False, "axes.spines.right": False, "text.parse_math": False, "text.usetex": False}
ROW_INCHES = 0.2  # height of one model's row: 45 models stay readable without scrolling inside the figure


@functools.cache
def _pyplot() -> Any:
    """pyplot on the Agg backend, imported on the first figure: matplotlib is slow to import
    (docs/measurements.md, "Figures moved from the code's comments"), and every `ragjudge` command and every
    sweep driver imports this package, most of them drawing nothing."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot loads: the backend must be chosen first
    import matplotlib.pyplot as plt

    return plt


def _svg(fig: Any, title: str) -> str:
    """The figure as an <svg> element (no XML prolog), labelled for screen readers and the page's tests."""
    plt = _pyplot()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buffer.getvalue()
    svg = text[text.index("<svg"):]
    return svg.replace("<svg ", f'<svg class="plot" role="img" aria-label="{html.escape(title)}" ', 1)


def ci_plot(models: Sequence[Mapping[str, Any]], title: str) -> str:
    """Score and 95% interval of each model, best at the top, letter groups beside the names."""
    plt = _pyplot()
    with plt.rc_context(STYLE):
        n = len(models)
        fig, ax = plt.subplots(figsize=(6.5, 0.7 + ROW_INCHES * n))
        y = np.arange(n)[::-1]
        scores = np.array([m["score"] for m in models])
        ci = [m.get("ci95") or [m["score"], m["score"]] for m in models]
        errors = np.array([[s - lo for s, (lo, _) in zip(scores, ci)],
                           [hi - s for s, (_, hi) in zip(scores, ci)]])
        ax.errorbar(scores, y, xerr=errors.clip(0), fmt="o", ms=3, color="#1f4e79", ecolor="#7fa6c9",
                    capsize=2, lw=1)
        ax.set_yticks(y, [f"{m['model']}  [{m['group']}]" for m in models])
        ax.set_xlabel("score (95% bootstrap interval)")
        ax.set_ylim(-0.7, n - 0.3)
        ax.grid(axis="x", color="#e5e5e5", lw=0.6)
        ax.set_title(title, loc="left")
        return _svg(fig, title)


def heatmap(models: Sequence[str], subsets: Sequence[str], values: np.ndarray, title: str) -> str:
    """Subset x model accuracy; rows in leaderboard order. The colours span the data's range (to the nearest
    0.1), since models of one benchmark often sit within a few points. Cells are annotated while legible."""
    plt = _pyplot()
    with plt.rc_context(STYLE):
        rows, cols = values.shape
        fig, ax = plt.subplots(figsize=(min(11.0, 2.2 + 0.45 * cols), 0.9 + ROW_INCHES * rows))
        finite = values[~np.isnan(values)]
        low = math.floor(10 * finite.min()) / 10 if finite.size else 0.0
        high = max(low + 0.1, math.ceil(10 * finite.max()) / 10) if finite.size else 1.0
        mesh = ax.pcolormesh(np.ma.masked_invalid(values), cmap="viridis", vmin=low, vmax=high,
                             edgecolors="white", linewidth=0.3)
        ax.set_yticks(np.arange(rows) + 0.5, list(models))
        ax.set_xticks(np.arange(cols) + 0.5, list(subsets), rotation=60, ha="right")
        ax.invert_yaxis()
        ax.tick_params(length=0)
        if rows * cols <= 300:
            for (r, c), v in np.ndenumerate(values):
                if not math.isnan(v):
                    ax.text(c + 0.5, r + 0.5, f"{100 * v:.0f}", ha="center", va="center", fontsize=6,
                            color="white" if v < (low + high) / 2 else "black")
        fig.colorbar(mesh, ax=ax, fraction=0.03, pad=0.02, label="accuracy")
        ax.set_title(title, loc="left")
        return _svg(fig, title)


def position_plot(judges: Sequence[Mapping[str, Any]], title: str) -> str:
    """Position bias of each judge: how often it picks the first position (0.5 is none) and, where the rows
    have both orders, its accuracy with the right answer shown first and second."""
    plt = _pyplot()
    with plt.rc_context(STYLE):
        n = len(judges)
        with_orders = [j for j in judges if j.get("accuracy_first") is not None]
        panels = 2 if with_orders else 1
        fig, axes = plt.subplots(1, panels, figsize=(4.0 * panels + 1.5, 0.8 + ROW_INCHES * n), squeeze=False,
                                 sharey=True)
        y = np.arange(n)[::-1]
        names = [j["model"] for j in judges]
        rate = np.array([j.get("first_position_rate", np.nan) for j in judges], dtype=float)
        ax = axes[0][0]
        colors = ["#b03a2e" if r > 0.5 else "#2e6fb0" for r in rate]  # red: favours the first position
        ax.barh(y, rate - 0.5, left=0.5, color=colors, height=0.6)
        ax.axvline(0.5, color="black", lw=0.8)
        ax.set_xlim(0, 1)
        ax.set_yticks(y, names)
        ax.set_xlabel("first-position pick rate (0.5: unbiased)")
        if with_orders:
            ax2 = axes[0][1]
            first = np.array([j.get("accuracy_first", np.nan) for j in judges], dtype=float)
            second = np.array([j.get("accuracy_second", np.nan) for j in judges], dtype=float)
            ax2.hlines(y, np.fmin(first, second), np.fmax(first, second), color="#999999", lw=1)
            ax2.plot(first, y, "o", ms=3.5, color="#b03a2e", label="right answer shown first")
            ax2.plot(second, y, "s", ms=3.5, color="#2e6fb0", label="right answer shown second")
            ax2.set_xlim(0, 1)
            ax2.set_xlabel("accuracy by position of the right answer")
            ax2.legend(loc="lower left", fontsize=7, frameon=False)
        for a in axes[0]:
            a.set_ylim(-0.7, n - 0.3)
            a.grid(axis="x", color="#e5e5e5", lw=0.6)
        axes[0][0].set_title(title, loc="left")
        return _svg(fig, title)


def thinking_plot(judges: Sequence[Mapping[str, Any]], title: str) -> str:
    """Each thinking judge's accuracy by quartile of an item's thinking tokens (metrics.json's
    `accuracy_by_thinking_quartile`), its quartiles' token ranges in the legend: what thinking longer bought."""
    plt = _pyplot()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.5, 2.8))
        for judge in judges:
            quartiles = judge["quartiles"]
            accuracy = [np.nan if q["accuracy"] is None else q["accuracy"] for q in quartiles]
            ranges = ", ".join(f"{q['tokens_to']:g}" for q in quartiles)
            ax.plot(range(1, len(quartiles) + 1), accuracy, "o-", ms=3.5, lw=1,
                    label=f"{judge['model']} (quartiles up to {ranges} tokens)")
        ax.set_xticks([1, 2, 3, 4], ["Q1 (shortest)", "Q2", "Q3", "Q4 (longest)"])
        ax.set_ylim(0, 1)
        ax.set_ylabel("accuracy")
        ax.set_xlabel("quartile of the item's thinking tokens")
        ax.grid(axis="y", color="#e5e5e5", lw=0.6)
        ax.legend(loc="lower left", fontsize=7, frameon=False)
        ax.set_title(title, loc="left")
        return _svg(fig, title)
