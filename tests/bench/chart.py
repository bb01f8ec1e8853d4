"""Draws tests/bench/results/latest.png from latest.json: per number of WebApps, each operator's
time to converge, CPU seconds and peak RSS (medians over the runs), beside one another, and each
operator's settled RSS against the number of ConfigMaps it cached (the memory curve); and
consolidation.png from consolidation.json: summed memory (PSS), CPU and time to converge against the number
of operators run side by side."""

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

PANELS = [
    ("seconds", "time to converge (s, log scale)", "log"),
    ("cpu_seconds", "operator CPU (s, log scale)", "log"),
    ("peak_rss", "operator peak RSS (MiB)", "linear"),
]


def medians(runs, comparator, size, field):
    """The median of `field` over the runs of one operator at one size."""
    values = [r[field] for r in runs if r["comparator"] == comparator and r["webapps"] == size]
    return statistics.median(values) if values else 0.0


def curve(ax, results):
    """Draws each operator's settled RSS against cached ConfigMaps (warm starts) on `ax`."""
    starts = [r for r in results["startup"] if r["compile_cache"] == "warm" and r["objects"] > 0]
    counts = sorted({r["objects"] for r in starts})
    for comparator in results["comparators"]:
        rss = [
            statistics.median(
                [r["rss"] for r in starts if r["comparator"] == comparator and r["objects"] == n]
            )
            for n in counts
        ]
        ax.plot(counts, rss, marker="o", label=comparator)
    ax.set_title("settled RSS (MiB) against cached ConfigMaps")
    ax.set_xlabel("ConfigMaps cached")
    ax.grid(alpha=0.3)


def draw(results, out):
    """Writes the chart of `results` to `out`."""
    runs = results["converge"]
    comparators = results["comparators"]
    sizes = sorted({r["webapps"] for r in runs})
    fig, axes = plt.subplots(1, len(PANELS) + 1, figsize=(5 * (len(PANELS) + 1), 4.2))
    width = 0.8 / len(comparators)
    for ax, (field, title, scale) in zip(axes, PANELS):
        for i, comparator in enumerate(comparators):
            xs = [s + (i - (len(comparators) - 1) / 2) * width for s in range(len(sizes))]
            ax.bar(xs, [medians(runs, comparator, size, field) for size in sizes], width, label=comparator)
        ax.set_xticks(range(len(sizes)), [f"{size:,} WebApps" for size in sizes])
        ax.set_title(title)
        ax.set_yscale(scale)
        ax.grid(axis="y", alpha=0.3)
    curve(axes[-1], results)
    axes[0].legend()
    fig.suptitle(f"webapp operators on one kube-apiserver — {results['machine']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


CONSOLIDATION_PANELS = [
    ("pss", "summed memory after converging (PSS, MiB)"),
    ("cpu_seconds", "summed CPU converging (s)"),
    ("seconds", "time until all converged (s)"),
]


def consolidation(runs, out):
    """Writes the consolidation chart of `runs` to `out`: one line per way of running N operators."""
    ways = list(dict.fromkeys(r["comparator"] for r in runs))
    fig, axes = plt.subplots(1, len(CONSOLIDATION_PANELS), figsize=(5 * len(CONSOLIDATION_PANELS), 4.2))
    for ax, (field, title) in zip(axes, CONSOLIDATION_PANELS):
        for way in ways:
            points = sorted((r["operators"], r[field]) for r in runs if r["comparator"] == way)
            label = way if way.startswith("wasmop") else f"{way} (one process each)"
            ax.plot([n for n, _ in points], [v for _, v in points], marker="o", label=label)
        ax.set_title(title)
        ax.set_xticks(sorted({r["operators"] for r in runs}))
        ax.set_xlabel(f"operators, {runs[0]['webapps_each']} WebApps each")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle("N operators: N processes, or N plugins in one wasmop host", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    results_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results"
    results = json.loads((results_dir / "latest.json").read_text())
    draw(results, results_dir / "latest.png")
    print(f"[bench] wrote {results_dir / 'latest.png'}")
    consolidated = results_dir / "consolidation.json"
    if consolidated.exists():
        consolidation(json.loads(consolidated.read_text()), results_dir / "consolidation.png")
        print(f"[bench] wrote {results_dir / 'consolidation.png'}")


if __name__ == "__main__":
    main()
