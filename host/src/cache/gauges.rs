//! The cache's size as Prometheus gauges — objects and JSON bytes per kind and view (`all`, or
//! `shard` for a sharded replica's share) — and the objects it skipped as a counter, read from
//! the informers at scrape time by a collector registered while the cache lives.

use std::sync::{Arc, Mutex, Weak};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounterVec, IntGaugeVec, Opts};

use super::Cache;

/// The cache's gauges.
#[derive(Clone)]
pub struct CacheGauges {
    cache: Weak<Cache>,
    objects: IntGaugeVec,
    bytes: IntGaugeVec,
    skipped: IntCounterVec,
    /// One scrape at a time fills the gauges.
    scrape: Arc<Mutex<()>>,
}

impl CacheGauges {
    pub(super) fn new(cache: &Arc<Cache>) -> Self {
        let labels = &["group", "version", "kind", "view"];
        let gauge = |name: &str, help: &str| {
            IntGaugeVec::new(Opts::new(name, help), labels).expect("a constant metric")
        };
        CacheGauges {
            cache: Arc::downgrade(cache),
            objects: gauge(
                "wasmop_cache_objects",
                "Objects in the shared informer cache per kind",
            ),
            bytes: gauge(
                "wasmop_cache_json_bytes",
                "JSON bytes held by the shared informer cache per kind",
            ),
            skipped: IntCounterVec::new(
                Opts::new(
                    "wasmop_cache_objects_skipped_total",
                    "Objects the shared informer cache could not hold (nested past the depth bound, \
                     or with mistyped metadata) and skipped, per kind, once per list or watch event",
                ),
                labels,
            )
            .expect("a constant metric"),
            scrape: Arc::default(),
        }
    }
}

impl Collector for CacheGauges {
    fn desc(&self) -> Vec<&Desc> {
        [self.objects.desc(), self.bytes.desc(), self.skipped.desc()].concat()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let Some(cache) = self.cache.upgrade() else {
            return Vec::new();
        };
        let _scrape = self.scrape.lock().unwrap_or_else(|e| e.into_inner());
        self.objects.reset();
        self.bytes.reset();
        self.skipped.reset();
        for informer in cache.informers() {
            let kind = informer.kind();
            let view = match informer.selector() {
                Some(_) => "shard",
                None => "all",
            };
            let labels = [
                kind.group.as_str(),
                kind.version.as_str(),
                kind.kind.as_str(),
                view,
            ];
            let (objects, bytes) = informer.size();
            let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            self.objects.with_label_values(&labels).set(count(objects));
            self.bytes.with_label_values(&labels).set(count(bytes));
            let skipped = self.skipped.with_label_values(&labels);
            skipped.inc_by(informer.skipped());
        }
        [
            self.objects.collect(),
            self.bytes.collect(),
            self.skipped.collect(),
        ]
        .concat()
    }
}
