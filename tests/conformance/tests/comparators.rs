//! The benchmark's comparators (`tests/bench`), the `webapp` operator written for other
//! frameworks, against the conformance scenarios: the benchmark compares operators that do the
//! same work. Each runs as its own process, built by the command named when it is missing.

use wasmop_conformance::{Operator, Program, run};

macro_rules! conformance {
    ($($test:ident: $name:literal => $executable:literal, script $script:expr,
        built by $build:literal, applying as $manager:literal;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() -> anyhow::Result<()> {
            run(Operator::Program(Program {
                name: $name,
                executable: $executable,
                script: $script,
                build: $build,
                field_manager: $manager,
            }))
            .await
        }
    )*};
}

conformance! {
    controller_runtime: "controller-runtime" => "target/bench/webapp-controller-runtime",
        script None,
        built by "tests/bench/controller-runtime/build", applying as "webapp-controller-runtime";
    kube_rs: "kube-rs" => "target/debug/webapp-kube-rs",
        script None,
        built by "cargo build -p webapp-kube-rs", applying as "webapp-kube-rs";
    kopf: "kopf" => "target/bench/kopf-venv/bin/python",
        script Some("tests/bench/kopf/webapp.py"),
        built by "tests/bench/kopf/install", applying as "webapp-kopf";
}
