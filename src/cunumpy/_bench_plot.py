"""The PNG of ``cunumpy bench --plot``: phase split, throughput, launch overhead.

Every engine keeps one colour (:func:`engine_colours`) in every panel: its phase bars, its
throughput line and its launch-overhead bar. Phases are told apart by shade and hatching of
that colour, and the phase bars are stacked to 100 % on a linear axis, so a phase that takes
1 % of a call takes 1 % of its bar; the totals, which differ by orders of magnitude between
engines, are written under the engine names. Importing this module does not import matplotlib.
"""

from __future__ import annotations

from typing import Any

from cunumpy import _runners

__all__ = ["engine_colours", "figure", "plot"]


_PHASES = ("to_device_s", "kernel_s", "to_host_s")
_PHASE_NAMES = {"to_device_s": "to device", "kernel_s": "kernel", "to_host_s": "to host"}
_PHASE_STYLE = {  # phases differ by shade and hatching; the hue always names the engine
    "to_device_s": {"alpha": 0.35, "hatch": "//"},
    "kernel_s": {"alpha": 1.0, "hatch": ""},
    "to_host_s": {"alpha": 0.35, "hatch": "\\\\"},
}


def engine_colours() -> dict[str, Any]:
    """One colour per engine, the same in every panel (and every run) of the plot."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {e: cmap(i) for i, e in enumerate(_runners.ENGINES)}


def _fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3g} ms" if ms >= 0.001 else f"{ms * 1e3:.3g} us"


def _phase_panel(ax: Any, w: str, ran: list[str], n: int, by: dict, colours: dict) -> None:
    """Each engine's time split into phases, as percentages of its total (a linear axis).

    Bars are horizontal and stacked to 100 %: a 1 % copy takes 1 % of the bar, whatever the
    total; the totals, which differ by orders of magnitude, are written under the engine names.
    """
    rows = list(reversed(ran))  # first engine on top
    for y, e in enumerate(rows):
        r = by[(w, e, n)]
        total = sum(r[p] for p in _PHASES)
        left = 0.0
        for phase in _PHASES:
            share = 100.0 * r[phase] / total if total > 0 else 0.0
            style = _PHASE_STYLE[phase]
            ax.barh(y, share, left=left, color=colours[e], alpha=style["alpha"],
                    hatch=style["hatch"], edgecolor=colours[e], linewidth=0.8)
            if share >= 12:
                ax.annotate(f"{share:.0f}%", (left + share / 2, y), ha="center", va="center",
                            fontsize=7, color="white" if phase == "kernel_s" else "black")
            left += share
    ax.set_yticks(range(len(rows)),
                  [f"{e}\n{_fmt_ms(sum(by[(w, e, n)][p] for p in _PHASES))}" for e in rows],
                  fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of each engine's time (its total under its name)")
    ax.set_title(f"{w}: time per phase, n = {n:,}")


def _phase_legend(fig: Any) -> None:
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor="grey", alpha=_PHASE_STYLE[p]["alpha"], hatch=_PHASE_STYLE[p]["hatch"],
              edgecolor="grey", label=_PHASE_NAMES[p])
        for p in _PHASES
    ]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.04, 0.955), ncol=3,
               fontsize=8, frameon=False, title="phases: shades of each engine's colour",
               title_fontsize=8, alignment="left")


def plot(data: dict[str, Any], path: str) -> None:
    """Draw the benchmark results (:func:`cunumpy._bench.run_bench`) as a PNG at ``path``."""
    import matplotlib.pyplot as plt

    fig = figure(data)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure(data: dict[str, Any]) -> Any:
    """The matplotlib figure of :func:`plot` (not saved; the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    workloads = data["config"]["workloads"]
    engines = [e for e, info in data["engines"].items() if info["available"]]
    colours = engine_colours()
    ncol = len(workloads) + 1
    fig, axes = plt.subplots(2, ncol, figsize=(4.6 * ncol, 8.5), squeeze=False)
    by = {(r["workload"], r["engine"], r["n"]): r for r in data["results"]}

    for col, w in enumerate(workloads):
        # Top: the time split at the largest size every engine ran.
        ax = axes[0][col]
        ran = [e for e in engines if any(k[0] == w and k[1] == e for k in by)]
        common = set.intersection(*(set(k[2] for k in by if k[0] == w and k[1] == e)
                                    for e in ran)) if ran else set()
        if common:
            _phase_panel(ax, w, ran, max(common), by, colours)
        else:
            ax.set_title(f"{w}: no results")
    # Bottom: kernel throughput against size, with the measured rooflines.
        ax = axes[1][col]
        for e in ran:
            pts = sorted((n, r["kernel_gbps"]) for (ww, ee, n), r in by.items()
                         if ww == w and ee == e and r["kernel_gbps"])
            if pts:
                ax.plot(*zip(*pts), marker="o", color=colours[e], label=e)
        drawn = set()
        for e in ran:
            roof = data["engines"][e]["roofline"]
            if roof and roof not in drawn:
                drawn.add(roof)
                gbps = data["roofline"][roof]["gbps"]
                ax.axhline(gbps, linestyle="--", color="grey", linewidth=1)
                ax.annotate(f"{roof} copy bandwidth {gbps:.0f} GB/s", (0.02, gbps),
                            xycoords=("axes fraction", "data"), va="bottom", fontsize=7,
                            color="grey")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("elements")
        ax.set_ylabel("kernel throughput, GB/s (bytes read + written)")
        ax.set_title(f"{w}: throughput against size")
        ax.legend(fontsize=8, loc="lower right")

    ax = axes[0][-1]
    launch = [x for x in data["launch"] if x["engine"] in engines]
    if launch:
        ax.bar(range(len(launch)), [x["launch_us"] for x in launch],
               color=[colours[x["engine"]] for x in launch])
        ax.set_xticks(range(len(launch)), [x["engine"] for x in launch], rotation=30, ha="right")
        ax.set_yscale("log")
        values = [x["launch_us"] for x in launch]
        ax.set_ylim(min(values) / 4, max(values) * 4)
        for i, x in enumerate(launch):
            ax.annotate(f"{x['launch_us']:.3g}", (i, x["launch_us"]), ha="center",
                        va="bottom", fontsize=8)
    ax.set_title("launch overhead, one element")
    ax.set_ylabel("microseconds per launch (log scale)")

    ax = axes[1][-1]
    ax.axis("off")
    ax.text(0, 1, _machine_text(data), va="top", ha="left", fontsize=8, family="monospace",
            wrap=True)
    fig.suptitle(f"cunumpy bench{' --quick' if data['quick'] else ''}, {data['created']}")
    _phase_legend(fig)
    # Fixed margins: tight_layout would draw the whole figure once more just to measure it.
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.07, top=0.86, wspace=0.3, hspace=0.35)
    return fig


def _machine_text(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [f"cunumpy {m['cunumpy']}, numpy {m['numpy']}", f"python {m['python']}",
             m["platform"][:48]]
    for dev in m["cupy"].get("devices", []):
        lines.append(f"GPU {dev['index']}: {dev['name']}")
    for name, roof in data["roofline"].items():
        lines.append(f"{name} copy: {roof['gbps']:.1f} GB/s")
    lines.append("")
    for e, info in data["engines"].items():
        lines.append(f"{e}: {'yes' if info['available'] else 'not available'}")
    return "\n".join(lines)
