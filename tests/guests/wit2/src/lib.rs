//! A component built against `wasmop:reconciler@2.0.0`, which this host must refuse.

wit_bindgen::generate!({ world: "reconciler", path: "wit" });

struct Future;

impl Guest for Future {
    fn describe() -> String {
        wasmop::reconciler::log::log("describing a 2.0.0 plugin");
        "guest-wit2".to_owned()
    }

    fn reconcile() {}

    fn map() {}
}

export!(Future);
