"""Pictures of a memory plan: buffers as rectangles (offset against step) and live bytes over time."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from nn2c.memory.inplace import InPlacePair
from nn2c.memory.requests import BufferRequest, MemoryPlan


def live_bytes_per_step(requests: list[BufferRequest]) -> list[int]:
    if not requests:
        return []
    last = max(r.last for r in requests)
    return [sum(r.size for r in requests if r.first <= s <= r.last) for s in range(last + 1)]


def plot_plan(requests: list[BufferRequest], plan: MemoryPlan, pairs: list[InPlacePair], title: str,
              path: Path, groups: dict[int, str] | None = None) -> Path:
    """One rectangle per buffer: x = steps it is live, y = its bytes in the arena; the steps that are
    row groups (step -> label) shaded, their windows are the grey scratch rectangles."""
    inplace_outputs = {p.output for p in pairs}
    fig, ax = plt.subplots(figsize=(10, 5), dpi=110)
    for k, step in enumerate(sorted(groups or {})):
        # one legend entry; which operators each group runs is in the report's Schedule table
        ax.axvspan(step - 0.5, step + 0.5, color="#2ca02c", alpha=0.15, linewidth=0,
                   label="row group (windows in grey)" if k == 0 else None)
    cmap = plt.get_cmap("tab20")
    for k, r in enumerate(sorted(requests, key=lambda r: (r.first, r.name))):
        if not r.size:
            continue
        offset = plan.offsets[r.name]
        colour = "#bbbbbb" if r.name.startswith("s") else cmap(k % 20)
        ax.add_patch(Rectangle((r.first - 0.45, offset), r.last - r.first + 0.9, r.size, facecolor=colour,
                               edgecolor="#d62728" if r.name in inplace_outputs else "black", linewidth=0.6,
                               alpha=0.85))
    steps = max((r.last for r in requests), default=0) + 1
    ax.set_xlim(-1, steps)
    ax.set_ylim(0, max(plan.arena_bytes, 1) * 1.05)
    ax.axhline(plan.arena_bytes, color="black", linestyle="--", linewidth=0.8)
    ax.set_xlabel("operator step")
    ax.set_ylabel("arena offset (bytes)")
    ax.set_title(f"{title}: arena {plan.arena_bytes:,} B ({plan.planner}); red edge = written in place")
    if groups:
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_live_bytes(requests: list[BufferRequest], plan: MemoryPlan, title: str, path: Path) -> Path:
    live = live_bytes_per_step(requests)
    fig, ax = plt.subplots(figsize=(10, 3.5), dpi=110)
    ax.step(range(len(live)), live, where="mid", label="live bytes (buffers kept apart)")
    ax.axhline(plan.arena_bytes, color="black", linestyle="--", linewidth=0.8, label=f"arena {plan.arena_bytes:,} B")
    ax.set_xlabel("operator step")
    ax.set_ylabel("bytes")
    ax.set_title(f"{title}: live bytes over the schedule")
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_tradeoff(points: list[tuple[int, float]], chosen: tuple[int, float], layer_ram: int, title: str,
                  path: Path, candidates: list[tuple[int, float]] | None = None) -> Path:
    """The schedules the search planned (arena bytes against estimated added cost, % of the model),
    and the lower bounds of every candidate it considered."""
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    if candidates:
        ax.plot([100 * c for _, c in candidates], [r for r, _ in candidates], ".", color="#aaaaaa",
                label="candidates (live-bytes lower bound)")
    ax.plot([100 * c for _, c in points], [r for r, _ in points], "o-", color="#1f77b4", label="schedules planned")
    ax.plot([0], [layer_ram], "s", color="black", label=f"layer by layer {layer_ram:,} B")
    ax.plot([100 * chosen[1]], [chosen[0]], "*", markersize=14, color="#d62728", label=f"chosen {chosen[0]:,} B")
    ax.set_xlabel("estimated extra cost (% of the model's instructions)")
    ax.set_ylabel("arena bytes")
    ax.set_title(f"{title}: RAM against estimated cost", fontsize=10)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
