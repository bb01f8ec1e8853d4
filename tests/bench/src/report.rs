//! Turns the runs into the Markdown tables people read: medians over the repeats, the spread
//! beside the time to converge, and every figure's ratio to controller-runtime's.

use std::fmt::Write;

use crate::scenario::{Converge, Startup};

/// Every run of one bench invocation.
#[derive(Debug, Default, serde::Serialize)]
pub struct Results {
    /// The machine it ran on, in words.
    pub machine: String,
    /// ConfigMaps in the pre-filled namespace.
    pub configmaps: usize,
    /// The operators, baseline first, in table order.
    pub comparators: Vec<String>,
    /// The convergence runs.
    pub converge: Vec<Converge>,
    /// The start-up runs.
    pub startup: Vec<Startup>,
}

fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

fn ratio(value: f64, baseline: f64) -> String {
    if baseline.is_finite() && baseline > 0.0 && value.is_finite() {
        format!("{:.2}x", value / baseline)
    } else {
        "–".to_owned()
    }
}

impl Results {
    fn converge_of(&self, comparator: &str, webapps: usize) -> Vec<&Converge> {
        self.converge
            .iter()
            .filter(|r| r.comparator == comparator && r.webapps == webapps)
            .collect()
    }

    fn converge_median(
        &self,
        comparator: &str,
        webapps: usize,
        field: fn(&Converge) -> f64,
    ) -> f64 {
        median(
            self.converge_of(comparator, webapps)
                .into_iter()
                .map(field)
                .collect(),
        )
    }

    fn startup_median(&self, comparator: &str, field: fn(&Startup) -> f64) -> f64 {
        median(
            self.startup
                .iter()
                .filter(|r| r.comparator == comparator)
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

    /// The report: one table per number of WebApps, then the start-up table.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let baseline = self.comparators.first().cloned().unwrap_or_default();
        for webapps in self.sizes() {
            let runs = self.converge_of(&baseline, webapps).len();
            let _ = writeln!(
                out,
                "\n**{webapps} WebApps created at once** (median of {runs} runs; ratios to {baseline})\n"
            );
            out.push_str("| operator | converged in | ratio | WebApps/s | CPU seconds | ratio | peak RSS | ratio | idle RSS |\n");
            out.push_str("|---|---|---|---|---|---|---|---|---|\n");
            let base =
                |field: fn(&Converge) -> f64| self.converge_median(&baseline, webapps, field);
            for name in &self.comparators {
                let get = |field: fn(&Converge) -> f64| self.converge_median(name, webapps, field);
                let times: Vec<f64> = self
                    .converge_of(name, webapps)
                    .iter()
                    .map(|r| r.seconds)
                    .collect();
                let (low, high) = times
                    .iter()
                    .fold((f64::MAX, 0.0f64), |(l, h), t| (l.min(*t), h.max(*t)));
                let seconds = get(|r| r.seconds);
                let _ = writeln!(
                    out,
                    "| {name} | {seconds:.1} s ({low:.1}–{high:.1}) | {} | {:.0} | {:.1} | {} | {:.0} MiB | {} | {:.0} MiB |",
                    ratio(seconds, base(|r| r.seconds)),
                    webapps as f64 / seconds,
                    get(|r| r.cpu_seconds),
                    ratio(get(|r| r.cpu_seconds), base(|r| r.cpu_seconds)),
                    get(|r| r.peak_rss),
                    ratio(get(|r| r.peak_rss), base(|r| r.peak_rss)),
                    get(|r| r.idle_rss),
                );
            }
        }
        self.startup_table(&mut out, &baseline);
        out
    }

    fn startup_table(&self, out: &mut String, baseline: &str) {
        if self.startup.is_empty() {
            return;
        }
        let smallest = self.sizes().first().copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "\n**Start with {} ConfigMaps to cache** (start until a waiting WebApp converged; cache cost = RSS over the idle RSS of the same operator with an empty namespace, per ConfigMap)\n",
            self.configmaps
        );
        out.push_str("| operator | start to ready | ratio | RSS | cache per ConfigMap |\n|---|---|---|---|---|\n");
        let base = self.startup_median(baseline, |r| r.ready_seconds);
        for name in &self.comparators {
            let ready = self.startup_median(name, |r| r.ready_seconds);
            let rss = self.startup_median(name, |r| r.rss);
            let idle = self.converge_median(name, smallest, |r| r.idle_rss);
            let per_object = (rss - idle) * 1024.0 / self.configmaps as f64;
            let _ = writeln!(
                out,
                "| {name} | {ready:.2} s | {} | {rss:.0} MiB | {per_object:.2} KiB |",
                ratio(ready, base)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(comparator: &str, seconds: f64, cpu: f64, peak: f64) -> Converge {
        Converge {
            comparator: comparator.to_owned(),
            webapps: 100,
            seconds,
            cpu_seconds: cpu,
            idle_rss: 10.0,
            peak_rss: peak,
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn the_table_shows_medians_spread_and_ratios_to_the_baseline() {
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
                "| base | 11.0 s (10.0–12.0) | 1.00x | 9 | 5.0 | 1.00x | 100 MiB | 1.00x | 10 MiB |"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "| other | 6.0 s (5.0–7.0) | 0.55x | 17 | 2.5 | 0.50x | 45 MiB | 0.45x | 10 MiB |"
            ),
            "{table}"
        );
    }
}
