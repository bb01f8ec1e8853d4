//! Every language's `webapp` plugin against the conformance scenarios. A new language adds one
//! line here once its component builds.

use wasmop_conformance::{Language, Operator, run};

macro_rules! conformance {
    ($($test:ident: $name:literal => $component:literal;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() -> anyhow::Result<()> {
            run(Operator::Wasmop(Language { name: $name, component: $component })).await
        }
    )*};
}

conformance! {
    rust: "rust" => "webapp.wasm";
    python: "python" => "webapp-python.wasm";
    js: "js" => "webapp-js.wasm";
    go: "go" => "webapp-go.wasm";
}
