"""Draws the benchmark's charts from the JSON beside them, each when its JSON is there:
latest.png from latest.json (per number of WebApps, each operator's time to converge, CPU seconds
and peak RSS, medians over the runs, and its settled RSS against the ConfigMaps it cached);
startup.png from latest.json (start to ready and peak memory with the compile cache warm and
empty, and idle memory); admission.png from admission.json (webhook latencies); consolidation.png
from consolidation.json (summed memory, CPU and time against the number of operators); and
shards.png from shards.json (each replica's memory and CPU beside the single replica's)."""

import json
import statistics
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402

PANELS = [
    ("seconds", "time to converge", "s", True),
    ("cpu_seconds", "operator CPU", "s", True),
    ("peak_rss", "operator peak RSS", "MiB", False),
]


def median_of(rows, field):
    """The median of `field` over `rows`, or None when no row has it."""
    values = [r[field] for r in rows if r.get(field) is not None]
    return statistics.median(values) if values else None


def medians(runs, comparator, size, field):
    """The median of `field` over the runs of one operator at one size (0 for none)."""
    rows = [r for r in runs if r["comparator"] == comparator and r["webapps"] == size]
    return median_of(rows, field) or 0.0


def warm_starts(results):
    """The start-up runs with a warm compile cache and ConfigMaps to cache (none when only
    convergence ran)."""
    return [r for r in results.get("startup", []) if r["compile_cache"] == "warm" and r["objects"] > 0]


def curve(ax, results):
    """Draws each operator's settled RSS against cached ConfigMaps (warm starts) on `ax`."""
    starts = warm_starts(results)
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
    """Writes the chart of `results` to `out`: time and CPU on a log scale when there are several
    sizes, every panel linear from zero with each bar's value for a single size, and the memory
    curve when start-ups ran."""
    runs = results["converge"]
    comparators = results["comparators"]
    sizes = sorted({r["webapps"] for r in runs})
    has_curve = bool(warm_starts(results))
    panels = len(PANELS) + has_curve
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 5))
    width = 0.8 / len(comparators)
    for ax, (field, name, unit, spans_sizes) in zip(axes, PANELS):
        log = spans_sizes and len(sizes) > 1
        for i, comparator in enumerate(comparators):
            xs = [s + (i - (len(comparators) - 1) / 2) * width for s in range(len(sizes))]
            bars = ax.bar(xs, [medians(runs, comparator, size, field) for size in sizes], width, label=comparator)
            if len(sizes) == 1:
                ax.bar_label(bars, fmt="%.1f", fontsize=8)
        ax.set_xticks(range(len(sizes)), [f"{size:,} WebApps" for size in sizes])
        ax.set_title(f"{name} ({unit}, log scale)" if log else f"{name} ({unit})")
        ax.set_yscale("log" if log else "linear")
        plain = matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.grid(axis="y", alpha=0.3)
    if has_curve:
        curve(axes[-1], results)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle(f"webapp operators on one kube-apiserver — {results['machine']}", fontsize=10)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(out, dpi=110)


CONSOLIDATION_PANELS = [
    ("pss", "summed memory after converging (PSS, MiB)"),
    ("idle_pss", "summed memory idle (PSS, MiB)"),
    ("cpu_seconds", "summed CPU converging (s)"),
    ("seconds", "time until all converged (s)"),
]


def consolidation(runs, out):
    """Writes the consolidation chart of `runs` to `out`: one line per way of running N operators."""
    ways = list(dict.fromkeys(r["comparator"] for r in runs))
    fig, axes = plt.subplots(1, len(CONSOLIDATION_PANELS), figsize=(5 * len(CONSOLIDATION_PANELS), 4.2))
    for ax, (field, title) in zip(axes, CONSOLIDATION_PANELS):
        for way in ways:
            points = sorted((r["operators"], r[field]) for r in runs if r["comparator"] == way and field in r)
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


def grouped(ax, labels, series, title, unit):
    """Draws grouped bars on `ax`: one group per label, one bar per (name, values) in `series`,
    each bar marked with its value."""
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(labels))]
        bars = ax.bar(xs, [0 if v is None else v for v in values], width, label=name)
        ax.bar_label(bars, [("" if v is None else f"{v:.{unit}f}") for v in values], fontsize=7)
    wrapped = [textwrap.fill(label, 16) for label in labels]
    ax.set_xticks(range(len(labels)), wrapped, fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def startup(results, out):
    """Writes the start-up and idle chart of `results` to `out`; False when it measured neither."""
    count = results["configmaps"]
    starts = [r for r in results["startup"] if r["objects"] == count]
    converge = results["converge"]
    if not starts or not converge:
        return False
    names = [c for c in results["comparators"] if any(r["comparator"] == c for r in starts)]

    def start(name, cache, field):
        return median_of([r for r in starts if r["comparator"] == name and r["compile_cache"] == cache], field)

    smallest = min(r["webapps"] for r in converge)

    def idle(name, field):
        return median_of([r for r in converge if r["comparator"] == name and r["webapps"] == smallest], field)

    fig, axes = plt.subplots(3, 1, figsize=(13, 13))
    grouped(axes[0], names, [
        ("compile cache warm", [start(n, "warm", "ready_seconds") for n in names]),
        ("empty", [start(n, "cold", "ready_seconds") for n in names]),
    ], f"start to ready with {count:,} ConfigMaps (s)", 2)
    grouped(axes[1], names, [
        ("process, cache warm", [start(n, "warm", "peak") for n in names]),
        ("process, empty", [start(n, "cold", "peak") for n in names]),
        ("pod, empty", [start(n, "cold", "peak_pod") for n in names]),
    ], "peak memory at start (MiB)", 0)
    many = [r for r in results["startup"] if r["objects"] == 0 and r["compile_cache"] == "warm"]
    idle_names = names + sorted({r["comparator"] for r in many} - set(names))

    def idle_rss(name):
        value = idle(name, "idle_rss")
        return value if value is not None else median_of([r for r in many if r["comparator"] == name], "rss")

    grouped(axes[2], idle_names, [
        ("process RSS", [idle_rss(n) for n in idle_names]),
        ("pod", [idle(n, "idle_pod") for n in idle_names]),
    ], "idle, one WebApp converged (MiB)", 0)
    fig.suptitle(f"starting and idling — {results['machine']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return True


def admission(latencies, out):
    """Writes the admission chart of `latencies` to `out`: median and p99 per webhook, and the
    share of requests answered within each latency."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    names = [l["name"] for l in latencies]

    def quantile(millis, q):
        """The quantile as the benchmark's table computes it: the nearest rank."""
        ordered = sorted(millis)
        return ordered[round((len(ordered) - 1) * q)]

    grouped(axes[0], names, [
        ("median", [quantile(l["millis"], 0.5) for l in latencies]),
        ("p99", [quantile(l["millis"], 0.99) for l in latencies]),
    ], "server-side dry-run create through the webhooks (ms)", 2)
    for l in latencies:
        ordered = sorted(l["millis"])
        axes[1].plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=l["name"])
    axes[1].set_xscale("log")
    axes[1].set_xlabel("latency (ms, log scale)")
    axes[1].set_title("share of requests answered within a latency", fontsize=10)
    axes[1].grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return True


def shards(figures, out):
    """Writes the sharding chart of `figures` to `out`: each replica's peak RSS, its file-backed
    part, and its CPU."""
    replicas = figures["single"] + figures["sharded"]
    names = ["one replica" if r["name"] == "solo" else f"sharded {r['name']}" for r in replicas]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    grouped(axes[0], names, [
        ("peak RSS", [r["peak_rss"] for r in replicas]),
        ("file-backed", [r["file_rss"] for r in replicas]),
    ], "memory converging (MiB)", 0)
    grouped(axes[1], names, [("CPU", [r["cpu_seconds"] for r in replicas])], "CPU converging (s)", 1)
    fig.suptitle(
        f"one replica ({figures['single_seconds']:.0f} s) beside {len(figures['sharded'])} sharding "
        f"ones ({figures['sharded_seconds']:.0f} s)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return True


def main():
    results_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results"
    charts = [
        ("latest.json", "latest.png", lambda data, out: draw(data, out) or True),
        ("latest.json", "startup.png", startup),
        ("admission.json", "admission.png", admission),
        ("consolidation.json", "consolidation.png", lambda data, out: consolidation(data, out) or True),
        ("shards.json", "shards.png", shards),
    ]
    for source, chart, drawer in charts:
        if (results_dir / source).exists():
            data = json.loads((results_dir / source).read_text())
            if drawer(data, results_dir / chart):
                print(f"[bench] wrote {results_dir / chart}")


if __name__ == "__main__":
    main()
