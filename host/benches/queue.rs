//! Workqueue throughput: keys added, handed out and marked done per second, with one worker and
//! with four workers, for distinct keys and for keys added many times while queued (merged).
//! Each figure is the median of five runs.
//!
//! Run with `cargo bench -p wasmop --bench queue`.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmop::contract::object::ObjectKey;
use wasmop::queue::{NoMetrics, Queue, RateLimits, Reason};

use support::median;

/// Keys per run.
const KEYS: usize = 100_000;
/// Runs per figure.
const RUNS: usize = 5;

fn keys(distinct: usize) -> Vec<ObjectKey> {
    (0..distinct)
        .map(|i| ObjectKey::new(format!("ns-{}", i % 16), format!("object-{i:06}")))
        .collect()
}

/// Adds `adds` keys cycling over `distinct` ones, while `workers` take and finish them; returns
/// how long until the queue was drained.
async fn run(distinct: usize, adds: usize, workers: usize) -> Duration {
    let queue = Arc::new(Queue::new(RateLimits::default(), Arc::new(NoMetrics)));
    let keys = keys(distinct);
    let reason: Reason = "object updated".into();
    let started = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                while let Some((key, _)) = queue.get().await {
                    queue.done(&key);
                }
            })
        })
        .collect();
    for i in 0..adds {
        queue.add(keys[i % distinct].clone(), reason.clone());
    }
    queue.shutdown();
    for handle in handles {
        handle.await.expect("the worker finishes");
    }
    started.elapsed()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    println!("workqueue: {KEYS} adds per run, median of {RUNS} runs");
    println!("| keys | workers | adds/s (add + get + done) |");
    println!("|---|---|---|");
    for (label, distinct) in [("distinct", KEYS), ("1,000 repeated", 1000)] {
        for workers in [1, 4] {
            let mut times = Vec::with_capacity(RUNS);
            for _ in 0..RUNS {
                times.push(run(distinct, KEYS, workers).await);
            }
            let rate = KEYS as f64 / median(times).as_secs_f64();
            println!("| {label} | {workers} | {rate:.0} |");
        }
    }
}
