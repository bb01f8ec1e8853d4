//! Turns the runs into the Markdown tables people read: medians over the repeats with their
//! range, every figure's ratio to controller-runtime's, marked `~` where the two operators'
//! run-to-run ranges overlap (a difference inside the noise), the apiserver requests per WebApp,
//! start-up with wasmop's compile cache warm and empty, and the memory curve over cached objects.

use std::fmt::Write;

use crate::comparator::TEN_PLUGINS;
use crate::scenario::{CompileCache, Converge, Startup};

/// Every run of one bench invocation.
#[derive(Debug, Default, serde::Serialize)]
pub struct Results {
    /// The machine it ran on, in words.
    pub machine: String,
    /// ConfigMaps in the pre-filled namespace of the start-up table.
    pub configmaps: usize,
    /// The mean size of one of those ConfigMaps as JSON without managedFields, in bytes.
    pub json_bytes: f64,
    /// The operators, baseline first, in table order.
    pub comparators: Vec<String>,
    /// The convergence runs.
    pub converge: Vec<Converge>,
    /// The start-up runs.
    pub startup: Vec<Startup>,
}

/// The median and range of one figure over runs.
#[derive(Debug, Clone, Copy)]
struct Spread {
    median: f64,
    low: f64,
    high: f64,
    runs: usize,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Spread {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        let runs = values.len();
        let median = match runs {
            0 => f64::NAN,
            n if n % 2 == 0 => (values[n / 2 - 1] + values[n / 2]) / 2.0,
            n => values[n / 2],
        };
        Spread {
            median,
            low: values.first().copied().unwrap_or(f64::NAN),
            high: values.last().copied().unwrap_or(f64::NAN),
            runs,
        }
    }

    /// The ratio of this median to `baseline`'s, marked `~` when both were repeated and their
    /// ranges overlap.
    fn ratio(&self, baseline: &Spread) -> String {
        if !(baseline.median > 0.0 && self.median.is_finite()) {
            return "–".to_owned();
        }
        let itself =
            (self.median, self.low, self.high) == (baseline.median, baseline.low, baseline.high);
        let overlap = !itself
            && self.runs > 1
            && baseline.runs > 1
            && self.low <= baseline.high
            && baseline.low <= self.high;
        let mark = if overlap { " ~" } else { "" };
        format!("{:.2}x{mark}", self.median / baseline.median)
    }

    /// The median with its range when repeated, e.g. `11.0 (10.0–12.0)`; `–` when not measured.
    fn ranged(&self, decimals: usize) -> String {
        if self.runs == 0 {
            "–".to_owned()
        } else if self.runs > 1 {
            format!(
                "{:.decimals$} ({:.decimals$}–{:.decimals$})",
                self.median, self.low, self.high
            )
        } else {
            format!("{:.decimals$}", self.median)
        }
    }
}

/// The least-squares slope of `points` (x, y).
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), (px, py)| (x + px / n, y + py / n));
    let (num, den) = points.iter().fold((0.0, 0.0), |(num, den), (x, y)| {
        (num + (x - mx) * (y - my), den + (x - mx) * (x - mx))
    });
    if den > 0.0 { num / den } else { f64::NAN }
}

const LEGEND: &str = "`~` marks a ratio whose run-to-run range overlaps the baseline's: a difference inside the noise.";

impl Results {
    fn converge(&self, name: &str, webapps: usize, field: impl Fn(&Converge) -> f64) -> Spread {
        Spread::of(
            self.converge
                .iter()
                .filter(|r| r.comparator == name && r.webapps == webapps)
                .map(field)
                .collect(),
        )
    }

    fn startup(
        &self,
        name: &str,
        (objects, cache): (usize, CompileCache),
        field: fn(&Startup) -> f64,
    ) -> Spread {
        Spread::of(
            self.startup
                .iter()
                .filter(|r| {
                    r.comparator == name && r.objects == objects && r.compile_cache == cache
                })
                .map(field)
                .collect(),
        )
    }

    /// The sizes measured, ascending.
    fn sizes(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = self.converge.iter().map(|r| r.webapps).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// The cached-object counts started against, ascending.
    fn counts(&self) -> Vec<usize> {
        let mut counts: Vec<usize> = self
            .startup
            .iter()
            .map(|r| r.objects)
            .filter(|n| *n > 0)
            .collect();
        counts.sort_unstable();
        counts.dedup();
        counts
    }

    fn baseline(&self) -> String {
        self.comparators.first().cloned().unwrap_or_default()
    }

    /// The report: one table per number of WebApps, idle, start-up and the memory curve.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for webapps in self.sizes() {
            self.converge_table(&mut out, webapps);
        }
        self.idle_table(&mut out);
        self.startup_table(&mut out);
        self.curve_table(&mut out);
        let _ = writeln!(out, "\n{LEGEND}");
        out
    }

    fn converge_table(&self, out: &mut String, webapps: usize) {
        let baseline = self.baseline();
        let runs = self.converge(&baseline, webapps, |r| r.seconds).runs;
        let _ = writeln!(
            out,
            "\n**{webapps} WebApps created at once** (median and range of {runs} runs; ratios to {baseline}; apiserver requests per WebApp from its audit log)\n"
        );
        out.push_str("| operator | converged in | ratio | CPU seconds | ratio | peak RSS | ratio | peak, pod | ratio | requests | ratio | writes | conflicts |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        let per_app = |n: usize| n as f64 / webapps as f64;
        for name in &self.comparators {
            let get =
                |name: &str, field: &dyn Fn(&Converge) -> f64| self.converge(name, webapps, field);
            let seconds = get(name, &|r| r.seconds);
            if seconds.runs == 0 {
                let _ = writeln!(
                    out,
                    "| {name} | not run at this size | | | | | | | | | | | |"
                );
                continue;
            }
            let cpu = get(name, &|r| r.cpu_seconds);
            let peak = get(name, &|r| r.peak_rss);
            let pod = |r: &Converge| r.peak_pod.unwrap_or(f64::NAN);
            let peak_pod = get(name, &pod);
            let requests = get(name, &|r| per_app(r.requests.total));
            let _ = writeln!(
                out,
                "| {name} | {} s | {} | {} | {} | {} MiB | {} | {} MiB | {} | {:.1} | {} | {:.1} | {:.2} |",
                seconds.ranged(1),
                seconds.ratio(&get(&baseline, &|r| r.seconds)),
                cpu.ranged(1),
                cpu.ratio(&get(&baseline, &|r| r.cpu_seconds)),
                peak.ranged(0),
                peak.ratio(&get(&baseline, &|r| r.peak_rss)),
                peak_pod.ranged(0),
                peak_pod.ratio(&get(&baseline, &pod)),
                requests.median,
                requests.ratio(&get(&baseline, &|r| per_app(r.requests.total))),
                get(name, &|r| per_app(r.requests.writes)).median,
                get(name, &|r| per_app(r.requests.conflicts)).median,
            );
        }
    }

    fn idle_table(&self, out: &mut String) {
        let Some(&smallest) = self.sizes().first() else {
            return;
        };
        let baseline = self.baseline();
        let _ = writeln!(
            out,
            "\n**Idle** (one WebApp converged, nothing to do: RSS 3 s after it did, and CPU over the next 5 s, from the {smallest}-WebApp runs; {} started the same way in the start-up runs' empty namespace)\n",
            TEN_PLUGINS.name
        );
        out.push_str("| operator | idle RSS | ratio | idle, pod | ratio | idle CPU |\n|---|---|---|---|---|---|\n");
        let pod = |r: &Converge| r.idle_pod.unwrap_or(f64::NAN);
        for name in &self.comparators {
            let rss = self.converge(name, smallest, |r| r.idle_rss);
            let idle_pod = self.converge(name, smallest, pod);
            let cpu = self.converge(name, smallest, |r| r.idle_cpu.unwrap_or(f64::NAN));
            let _ = writeln!(
                out,
                "| {name} | {} MiB | {} | {} MiB | {} | {} % of a core |",
                rss.ranged(0),
                rss.ratio(&self.converge(&baseline, smallest, |r| r.idle_rss)),
                idle_pod.ranged(0),
                idle_pod.ratio(&self.converge(&baseline, smallest, pod)),
                cpu.ranged(2),
            );
        }
        let many = TEN_PLUGINS.name;
        let rss = self.startup(many, (0, CompileCache::Warm), |r| r.rss);
        if rss.runs > 0 {
            let _ = writeln!(out, "| {many} | {} MiB | | | | |", rss.ranged(0));
        }
    }

    fn startup_table(&self, out: &mut String) {
        let count = self.configmaps;
        if !self.counts().contains(&count) {
            return;
        }
        let baseline = self.baseline();
        let _ = writeln!(
            out,
            "\n**Start with {count} ConfigMaps to cache** (process start until a waiting WebApp converged, and peak RSS by 3 s later; with wasmop's compile cache warm, and empty as in a new pod — the other operators compile nothing, so their two columns are two measurements of the same start)\n"
        );
        out.push_str("| operator | start to ready | ratio | peak RSS | ratio | start, empty cache | peak RSS, empty cache | ratio | peak, pod, empty cache | ratio |\n|---|---|---|---|---|---|---|---|---|---|\n");
        let warm = (count, CompileCache::Warm);
        let cold = (count, CompileCache::Cold);
        for name in &self.comparators {
            let get = |name: &str, key, field| self.startup(name, key, field);
            let ready = get(name, warm, |r| r.ready_seconds);
            let peak = get(name, warm, |r| r.peak);
            let cold_ready = get(name, cold, |r| r.ready_seconds);
            let cold_peak = get(name, cold, |r| r.peak);
            let pod = |r: &Startup| r.peak_pod.unwrap_or(f64::NAN);
            let cold_pod = get(name, cold, pod);
            let _ = writeln!(
                out,
                "| {name} | {} s | {} | {} MiB | {} | {} s | {} MiB | {} | {} MiB | {} |",
                ready.ranged(2),
                ready.ratio(&get(&baseline, warm, |r| r.ready_seconds)),
                peak.ranged(0),
                peak.ratio(&get(&baseline, warm, |r| r.peak)),
                cold_ready.ranged(2),
                cold_peak.ranged(0),
                cold_peak.ratio(&get(&baseline, cold, |r| r.peak)),
                cold_pod.ranged(0),
                cold_pod.ratio(&get(&baseline, cold, pod)),
            );
        }
    }

    /// Each operator's settled RSS at every number of cached ConfigMaps and the slope through
    /// them.
    fn curve_table(&self, out: &mut String) {
        let counts = self.counts();
        if counts.len() < 2 {
            return;
        }
        let _ = writeln!(
            out,
            "\n**Memory against cached ConfigMaps** (settled RSS after start; the slope is the least-squares fit over the counts, per ConfigMap, beside the ConfigMap's own {:.0} bytes of JSON)\n",
            self.json_bytes
        );
        let heads: Vec<String> = counts.iter().map(|n| format!("RSS at {n}")).collect();
        let _ = writeln!(
            out,
            "| operator | {} | per ConfigMap | to its JSON |\n|---|{}---|---|",
            heads.join(" | "),
            "---|".repeat(counts.len())
        );
        for name in &self.comparators {
            let points: Vec<(f64, f64)> = counts
                .iter()
                .map(|&n| {
                    let rss = self.startup(name, (n, CompileCache::Warm), |r| r.rss);
                    (n as f64, rss.median)
                })
                .collect();
            // MiB per object to bytes.
            let per_object = slope(&points) * 1024.0 * 1024.0;
            let cells: Vec<String> = points.iter().map(|(_, y)| format!("{y:.0} MiB")).collect();
            let _ = writeln!(
                out,
                "| {name} | {} | {:.0} B | {:.2}x |",
                cells.join(" | "),
                per_object,
                per_object / self.json_bytes
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Requests;

    fn run(comparator: &str, seconds: f64, cpu: f64, peak: f64) -> Converge {
        Converge {
            comparator: comparator.to_owned(),
            webapps: 100,
            seconds,
            cpu_seconds: cpu,
            idle_rss: 10.0,
            peak_rss: peak,
            idle_pod: Some(12.0),
            peak_pod: Some(peak + 20.0),
            idle_cpu: Some(0.5),
            requests: Requests {
                total: 600,
                writes: 400,
                conflicts: 3,
                by_kind: Default::default(),
            },
        }
    }

    fn start(comparator: &str, objects: usize, rss: f64) -> Startup {
        Startup {
            comparator: comparator.to_owned(),
            objects,
            compile_cache: CompileCache::Warm,
            ready_seconds: 0.5,
            rss,
            peak: rss + 1.0,
            peak_pod: None,
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(Spread::of(vec![3.0, 1.0, 2.0]).median, 2.0);
        assert_eq!(Spread::of(vec![4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert!(Spread::of(Vec::new()).median.is_nan());
    }

    #[test]
    fn a_ratio_inside_the_spread_is_marked() {
        let base = Spread::of(vec![10.0, 12.0, 11.0]);
        assert_eq!(Spread::of(vec![11.5, 13.0, 12.5]).ratio(&base), "1.14x ~");
        assert_eq!(Spread::of(vec![5.0, 6.0, 7.0]).ratio(&base), "0.55x");
        assert_eq!(Spread::of(vec![11.0]).ratio(&base), "1.00x");
        assert_eq!(base.ratio(&base), "1.00x");
    }

    #[test]
    fn the_slope_of_a_line_is_its_gradient() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), 2.0);
        assert!(slope(&[(1.0, 1.0)]).is_nan());
    }

    #[test]
    fn the_table_shows_medians_spread_ratios_and_requests() {
        let results = Results {
            comparators: vec!["base".into(), "other".into()],
            converge: vec![
                run("base", 10.0, 4.0, 100.0),
                run("base", 12.0, 6.0, 100.0),
                run("base", 11.0, 5.0, 100.0),
                run("other", 5.0, 2.0, 40.0),
                run("other", 6.0, 3.0, 50.0),
                run("other", 7.0, 2.5, 45.0),
            ],
            ..Results::default()
        };
        let table = results.markdown();
        assert!(
            table.contains(
                "| other | 6.0 (5.0–7.0) s | 0.55x | 2.5 (2.0–3.0) | 0.50x | 45 (40–50) MiB | 0.45x | 65 (60–70) MiB | 0.54x | 6.0 | 1.00x | 4.0 | 0.03 |"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "| base | 10 (10–10) MiB | 1.00x | 12 (12–12) MiB | 1.00x | 0.50 (0.50–0.50) % of a core |"
            ),
            "{table}"
        );
    }

    #[test]
    fn the_curve_gives_bytes_per_cached_object() {
        let results = Results {
            comparators: vec!["base".into()],
            configmaps: 10_000,
            json_bytes: 512.0,
            startup: vec![
                start("base", 1_000, 20.0),
                start("base", 10_000, 29.0),
                start("base", 50_000, 69.0),
            ],
            ..Results::default()
        };
        let table = results.markdown();
        assert!(
            table.contains("| base | 20 MiB | 29 MiB | 69 MiB | 1049 B | 2.05x |"),
            "{table}"
        );
    }
}
