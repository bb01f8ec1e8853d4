//! The workqueue's invariants, property by property, on tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;

fn queue() -> Arc<Queue<&'static str>> {
    Arc::new(Queue::new(RateLimits::default(), Arc::new(NoMetrics)))
}

/// `get`, failing the test if nothing arrives within `limit` of (paused) time.
async fn next(queue: &Queue<&'static str>, limit: Duration) -> Option<&'static str> {
    tokio::time::timeout(limit, queue.get())
        .await
        .ok()
        .flatten()
        .map(|(key, _)| key)
}

/// `get`'s key and reason, failing the test if nothing arrives within `limit` of (paused) time.
async fn next_with_reason(queue: &Queue<&'static str>, limit: Duration) -> (&'static str, String) {
    let (key, reason) = tokio::time::timeout(limit, queue.get())
        .await
        .expect("a key arrives in time")
        .expect("the queue runs");
    (key, reason.to_string())
}

const SOON: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn queued_keys_are_deduplicated() {
    let q = queue();
    q.add("a", "test");
    q.add("b", "test");
    q.add("a", "test");
    assert_eq!(q.len(), 2);
    assert_eq!(next(&q, SOON).await, Some("a"));
    assert_eq!(next(&q, SOON).await, Some("b"));
    assert_eq!(next(&q, SOON).await, None);
}

#[tokio::test(start_paused = true)]
async fn a_key_is_never_handed_to_two_workers_and_runs_again_if_added_meanwhile() {
    let q = queue();
    q.add("a", "test");
    assert_eq!(next(&q, SOON).await, Some("a"));
    q.add("a", "test");
    q.add("a", "test");
    assert_eq!(
        next(&q, Duration::from_secs(10)).await,
        None,
        "a is still being processed"
    );
    q.done(&"a");
    assert_eq!(
        next(&q, SOON).await,
        Some("a"),
        "the add during processing runs afterwards, once"
    );
    q.done(&"a");
    assert_eq!(next(&q, SOON).await, None);
}

#[tokio::test(start_paused = true)]
async fn a_blocked_worker_wakes_when_a_key_arrives() {
    let q = queue();
    let worker = tokio::spawn({
        let q = q.clone();
        async move { q.get().await.map(|(key, _)| key) }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    q.add("late", "test");
    assert_eq!(worker.await.unwrap(), Some("late"));
}

#[tokio::test(start_paused = true)]
async fn add_after_delays_and_the_earliest_delay_wins() {
    let q = queue();
    q.add_after("a", Duration::from_secs(10), 0, "test");
    q.add_after("a", Duration::from_secs(2), 0, "test");
    q.add_after("a", Duration::from_secs(5), 0, "test");
    let started = Instant::now();
    assert_eq!(next(&q, Duration::from_secs(60)).await, Some("a"));
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    q.done(&"a");
    assert_eq!(
        next(&q, Duration::from_secs(60)).await,
        None,
        "the later delays were merged"
    );
}

#[tokio::test(start_paused = true)]
async fn rate_limited_retries_back_off_exponentially_and_forget_resets() {
    let q = queue();
    let mut waits = Vec::new();
    for _ in 0..4 {
        q.add_rate_limited("flaky", 0, "test");
        let started = Instant::now();
        assert_eq!(next(&q, Duration::from_secs(60)).await, Some("flaky"));
        waits.push(started.elapsed());
        q.done(&"flaky");
    }
    let ms = Duration::from_millis;
    assert_eq!(waits, [ms(5), ms(10), ms(20), ms(40)]);
    assert_eq!(q.retries(&"flaky"), 4);
    q.forget(&"flaky");
    q.add_rate_limited("flaky", 0, "test");
    let started = Instant::now();
    next(&q, Duration::from_secs(60)).await;
    assert_eq!(started.elapsed(), ms(5));
}

#[tokio::test(start_paused = true)]
async fn higher_priority_goes_first_fifo_within_a_priority() {
    let q = queue();
    q.add_with_priority("initial-1", LOW_PRIORITY, "test");
    q.add_with_priority("initial-2", LOW_PRIORITY, "test");
    q.add("new-1", "test");
    q.add_with_priority("urgent", 10, "test");
    q.add("new-2", "test");
    q.add_with_priority("initial-2", 10, "test");
    let mut handed = Vec::new();
    for _ in 0..5 {
        handed.push(next(&q, SOON).await.unwrap());
        q.done(handed.last().unwrap());
    }
    // A raised key keeps its place in line, as in controller-runtime's priority queue: it was
    // added before "urgent", so it goes first among the priority-10 keys.
    assert_eq!(
        handed,
        ["initial-2", "urgent", "new-1", "new-2", "initial-1"]
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_hands_out_what_is_queued_then_none_and_ignores_new_keys() {
    let q = queue();
    q.add("queued", "test");
    q.add_after("delayed", Duration::from_secs(1), 0, "test");
    q.shutdown();
    q.add("too-late", "test");
    assert_eq!(next(&q, SOON).await, Some("queued"));
    assert_eq!(q.get().await.map(|(key, _)| key), None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_drain_waits_for_workers() {
    let q = queue();
    q.add("busy", "test");
    let key = next(&q, SOON).await.unwrap();
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !drain.is_finished(),
        "drain returned while a worker held a key"
    );
    q.done(&key);
    tokio::time::timeout(SOON, drain)
        .await
        .expect("drain finishes")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn merged_adds_keep_the_reason_of_the_first() {
    let q = queue();
    q.add("a", "object updated");
    q.add_with_priority("a", 10, "owned Deployment updated");
    q.add("a", "object deleted");
    assert_eq!(
        next_with_reason(&q, SOON).await,
        ("a", "object updated".to_owned())
    );
    q.done(&"a");
    assert_eq!(next(&q, SOON).await, None, "the adds were merged");
}

#[tokio::test(start_paused = true)]
async fn a_key_added_while_processed_runs_again_for_the_first_reason_given_meanwhile() {
    let q = queue();
    q.add("a", "object added");
    assert_eq!(next_with_reason(&q, SOON).await.1, "object added");
    q.add("a", "owned Service updated");
    q.add("a", "object updated");
    q.done(&"a");
    assert_eq!(
        next_with_reason(&q, SOON).await,
        ("a", "owned Service updated".to_owned())
    );
}

#[tokio::test(start_paused = true)]
async fn the_earliest_delay_brings_its_reason() {
    let q = queue();
    q.add_after("a", Duration::from_secs(10), 0, "requeue-after");
    q.add_rate_limited("a", 0, "error retry");
    q.add_after("a", Duration::from_secs(5), 0, "later");
    assert_eq!(
        next_with_reason(&q, Duration::from_secs(60)).await,
        ("a", "error retry".to_owned())
    );
}

#[tokio::test(start_paused = true)]
async fn an_add_overtakes_a_delay_and_the_delay_still_comes_with_its_own_reason() {
    let q = queue();
    q.add_after("a", Duration::from_secs(5), 0, "requeue-after");
    q.add("a", "object updated");
    assert_eq!(
        next_with_reason(&q, SOON).await,
        ("a", "object updated".to_owned())
    );
    q.done(&"a");
    let started = Instant::now();
    assert_eq!(
        next_with_reason(&q, Duration::from_secs(60)).await,
        ("a", "requeue-after".to_owned())
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_delay_that_comes_due_while_the_key_waits_keeps_the_waiting_reason() {
    let q = queue();
    q.add("a", "object listed");
    q.add_after("a", Duration::from_secs(1), 0, "requeue-after");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        next_with_reason(&q, SOON).await,
        ("a", "object listed".to_owned())
    );
    q.done(&"a");
    assert_eq!(next(&q, SOON).await, None, "the due delay was merged");
}

#[derive(Default)]
struct Counting {
    added: AtomicUsize,
    retried: AtomicUsize,
    latency_ms: AtomicUsize,
    work_ms: AtomicUsize,
}

impl QueueMetrics for Counting {
    fn added(&self) {
        self.added.fetch_add(1, Ordering::Relaxed);
    }
    fn retried(&self) {
        self.retried.fetch_add(1, Ordering::Relaxed);
    }
    fn queued_for(&self, latency: Duration) {
        self.latency_ms
            .fetch_add(latency.as_millis() as usize, Ordering::Relaxed);
    }
    fn worked_for(&self, duration: Duration) {
        self.work_ms
            .fetch_add(duration.as_millis() as usize, Ordering::Relaxed);
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_see_adds_retries_latency_and_work_time() {
    let metrics = Arc::new(Counting::default());
    let q: Queue<&str> = Queue::new(RateLimits::default(), metrics.clone());
    q.add("a", "test");
    tokio::time::sleep(Duration::from_millis(30)).await;
    let (key, _) = q.get().await.unwrap();
    tokio::time::sleep(Duration::from_millis(70)).await;
    assert_eq!(
        q.in_progress(),
        (Duration::from_millis(70), Duration::from_millis(70))
    );
    q.done(&key);
    q.add_rate_limited("a", 0, "test");
    assert_eq!(
        metrics.added.load(Ordering::Relaxed),
        1,
        "a delayed key counts when it is due"
    );
    assert_eq!(metrics.retried.load(Ordering::Relaxed), 1);
    assert_eq!(metrics.latency_ms.load(Ordering::Relaxed), 30);
    assert_eq!(metrics.work_ms.load(Ordering::Relaxed), 70);
}
