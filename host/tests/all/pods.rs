//! wasmop in real pods on the test control plane's node, installed as a user installs it
//! (`kubectl apply -k deploy/test-cluster`, the image from `deploy/image/build` pulled from the
//! node's registry): two replicas
//! start with an empty compile cache inside their memory limit, converge WebApps, fail over when
//! the leader's pod is deleted, come back when a container is killed (out of their Service's
//! ready endpoints until their probes pass again), hot-load a plugin into both pods, survive a
//! plugin too large to compile in their memory (the OOM killer takes the compile, not the host)
//! and one whose guest grows past their guest memory budget (it traps), and lose no WebApp
//! through a rolling update (the Helm chart's install and upgrade: pods_chart.rs). Needs root, the node's binaries and the
//! image: run with `make test-cluster`.

use crate::common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::pods::{
    NAMESPACE, WAIT, apply_module_reconciler, apply_reconciler, converge, endpoint_ready,
    eventually, install, invalid_webapp_refused, kill_container, leader, logs, name,
    namespace_with_webhook_secret, node_with_image, oom_kills, ready, ready_pods, repo,
    restarts_and_oom, seen_by_good,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::DeleteParams;
use wasmop::distribution::digest;
use wasmop_envtest::{ControlPlane, NODE_IP};

/// The Deployment's lease duration and retry period (the host's defaults).
const LEASE: Duration = Duration::from_secs(15 + 2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_in_pods_fail_over_restart_hot_load_and_roll() {
    let plane = node_with_image().await;
    // Both replicas start with an empty compile cache, inside the 256Mi limit.
    let (pods, started) = install(&plane, &repo().join("deploy/test-cluster")).await;
    let client = plane.client().await.unwrap();
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    for pod in &started {
        assert_eq!(
            restarts_and_oom(pod),
            (0, false),
            "{} restarted on its cold start",
            name(pod)
        );
    }
    let namespace = plane.create_namespace("pods").await.unwrap();
    converge(&plane, &namespace, "first").await;

    // The leader's pod deleted: the other replica takes over and keeps converging.
    let first_leader = eventually("a leader", WAIT, || leader(&leases)).await;
    let deleted = Instant::now();
    pods.delete(&first_leader, &DeleteParams::default())
        .await
        .unwrap();
    let next = eventually("a new leader", LEASE + Duration::from_secs(10), || async {
        leader(&leases)
            .await
            .filter(|holder| *holder != first_leader)
    })
    .await;
    eprintln!(
        "[pods] {next} leads {:.1} s after {first_leader} was deleted",
        deleted.elapsed().as_secs_f64()
    );
    converge(&plane, &namespace, "after-failover").await;
    let replicas = ready_pods(&pods, 2).await;

    // A container killed with SIGKILL: the kubelet restarts it, it turns Ready again and rejoins.
    let victim = replicas
        .iter()
        .find(|p| name(p) != next)
        .expect("a follower")
        .clone();
    // Until its probes pass again, the Service sends it nothing: its endpoint is not ready.
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), NAMESPACE);
    let victim_ip = victim
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .expect("an IP");
    assert_eq!(endpoint_ready(&slices, &victim_ip).await, Some(true));
    kill_container(&victim);
    eventually("the killed replica's endpoint not ready", WAIT, || async {
        (endpoint_ready(&slices, &victim_ip).await != Some(true)).then_some(())
    })
    .await;
    let victim_name = name(&victim);
    eventually("the killed container restarted and Ready", WAIT, || async {
        let pod = pods.get(&victim_name).await.ok()?;
        (restarts_and_oom(&pod) == (1, false) && ready(&pod)).then_some(())
    })
    .await;
    eventually("its endpoint ready again", WAIT, || async {
        (endpoint_ready(&slices, &victim_ip).await == Some(true)).then_some(())
    })
    .await;

    // A plugin hot-loaded through a WasmReconciler reaches both running pods.
    apply_module_reconciler(&plane, "guest-good").await;
    seen_by_good(&plane, &namespace, "hot").await;
    for pod in ready_pods(&pods, 2).await {
        let pod = name(&pod);
        eventually(&format!("guest-good loaded in {pod}"), WAIT, || async {
            logs(&plane, &pod)
                .await
                .contains("plugin=guest-good")
                .then_some(())
        })
        .await;
    }

    // A plugin too large to compile within the pod's memory limit: the out-of-memory killer
    // takes each replica's compiler process, not the host; the WasmReconciler says why.
    too_large_plugin_kills_only_its_compile(&plane, &pods).await;

    // A plugin whose memory limit is over what the hosts' guest memory budget (128Mi of the
    // pods' 256Mi) has left: it does not load, naming the plugin and the budget; the hosts are
    // never OOMKilled.
    memory_hog_is_refused_a_share_over_the_guest_budget(&plane, &pods).await;

    // A rolling update while WebApps keep coming: every one converges.
    plane
        .run_kubectl(
            &["rollout", "restart", "-n", NAMESPACE, "deployment/wasmop"],
            None,
        )
        .await
        .unwrap();
    for i in 0..10 {
        converge(&plane, &namespace, &format!("rolling-{i}")).await;
    }
    plane
        .run_kubectl(
            &[
                "rollout",
                "status",
                "-n",
                NAMESPACE,
                "deployment/wasmop",
                "--timeout=300s",
            ],
            None,
        )
        .await
        .unwrap();
    for pod in ready_pods(&pods, 2).await {
        assert!(!restarts_and_oom(&pod).1, "{} was OOMKilled", name(&pod));
    }
}

/// Serves `body` to every HTTP request on the node's address, from a thread; returns its URL.
fn serve_on_node(body: Vec<u8>) -> String {
    let listener = std::net::TcpListener::bind((NODE_IP, 0)).unwrap();
    let url = format!("http://{}/module.wasm", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    url
}

/// Applies WasmReconciler `name` for the built component `file`, served from the node by URL and
/// pinned by its digest, with `spec` (indented YAML lines) beside its module.
async fn apply_served(plane: &ControlPlane, name: &str, file: &str, spec: &str) {
    let wasm = std::fs::read(repo().join("target/components").join(file)).unwrap();
    let sha256 = digest(&wasm).trim_start_matches("sha256:").to_owned();
    let url = serve_on_node(wasm);
    let spec = format!("{spec}  module:\n    sha256: {sha256}\n    url: {url}\n");
    apply_reconciler(plane, name, &spec).await;
}

/// A WasmReconciler naming the Python webapp, whose compile needs more than the pods' 256Mi.
async fn too_large_plugin_kills_only_its_compile(plane: &ControlPlane, pods: &Api<Pod>) {
    let before = ready_pods(pods, 2).await;
    apply_served(plane, "too-large", "webapp-python.wasm", "").await;
    let degraded = "jsonpath={.status.conditions[?(@.type=='Degraded')].reason}";
    eventually(
        "the WasmReconciler reporting CompileKilled",
        WAIT,
        || async {
            let reason = plane
                .run_kubectl(
                    &["get", "clusterwasmreconciler", "too-large", "-o", degraded],
                    None,
                )
                .await
                .ok()?;
            (reason == "CompileKilled").then_some(())
        },
    )
    .await;
    let message = "jsonpath={.status.conditions[?(@.type=='Degraded')].message}";
    let message = plane
        .run_kubectl(
            &["get", "clusterwasmreconciler", "too-large", "-o", message],
            None,
        )
        .await
        .unwrap();
    eprintln!("[pods] too-large: CompileKilled: {message}");
    assert!(message.contains("out-of-memory killer"), "{message}");
    for pod in before {
        let pod_name = name(&pod);
        eventually(
            &format!("the compile in {pod_name} killed"),
            WAIT,
            || async { (oom_kills(&pod) > 0).then_some(()) },
        )
        .await;
        let now = pods.get(&pod_name).await.unwrap();
        assert!(
            ready(&now),
            "{pod_name} is not Ready after its compile was killed"
        );
        assert_eq!(
            restarts_and_oom(&now),
            restarts_and_oom(&pod),
            "{pod_name} restarted when its compile was killed"
        );
    }
    plane
        .run_kubectl(&["delete", "clusterwasmreconciler", "too-large"], None)
        .await
        .unwrap();
}

/// A WasmReconciler loading guest-hog with a memory limit of its own near the pods' limit: its
/// share of the guest memory budget does not fit, so it is refused.
async fn memory_hog_is_refused_a_share_over_the_guest_budget(
    plane: &ControlPlane,
    pods: &Api<Pod>,
) {
    let before = ready_pods(pods, 2).await;
    let kills: Vec<u64> = before.iter().map(oom_kills).collect();
    apply_served(
        plane,
        "guest-hog",
        "guest-hog.wasm",
        "  memoryLimit: 250Mi\n",
    )
    .await;
    let leading = eventually("a leader", WAIT, || async {
        let leases: Api<Lease> = Api::namespaced(plane.client().await.ok()?, NAMESPACE);
        leader(&leases).await
    })
    .await;
    let trapped = eventually("guest-hog refused at the budget", WAIT, || async {
        let logs = logs(plane, &leading).await;
        let mut lines = logs.lines();
        let trap =
            lines.find(|line| line.contains("guest-hog") && line.contains("--guest-memory-budget"));
        trap.map(str::to_owned)
    })
    .await;
    eprintln!("[pods] guest-hog in {leading}: {trapped}");
    for (pod, kills) in before.iter().zip(kills) {
        let now = pods.get(&name(pod)).await.unwrap();
        assert!(ready(&now), "{} is not Ready under the hog", name(pod));
        assert_eq!(
            restarts_and_oom(&now),
            restarts_and_oom(pod),
            "{} restarted under the hog",
            name(pod)
        );
        assert_eq!(
            oom_kills(pod),
            kills,
            "the OOM killer acted in {}",
            name(pod)
        );
    }
    plane
        .run_kubectl(&["delete", "clusterwasmreconciler", "guest-hog"], None)
        .await
        .unwrap();
}

/// Server-side dry-run creates of a valid WebApp, one after another until `stop`; returns how
/// many the apiserver admitted and every error it answered.
async fn admit_until(
    apps: Api<kube::api::DynamicObject>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> (usize, Vec<String>) {
    let params = kube::api::PostParams {
        dry_run: true,
        ..Default::default()
    };
    let (mut admitted, mut errors) = (0, Vec::new());
    while !*stop.borrow() {
        match apps.create(&params, &common::webapp("dry-run")).await {
            Ok(_) => admitted += 1,
            Err(error) => errors.push(error.to_string()),
        }
    }
    (admitted, errors)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_in_pods_refuse_nothing_while_a_replica_goes() {
    let plane = node_with_image().await;
    namespace_with_webhook_secret(&plane).await;
    let overlay = repo().join("deploy/test-cluster-webhooks");
    plane
        .run_kubectl(&["apply", "-k", &overlay.to_string_lossy()], None)
        .await
        .unwrap();
    let client = plane.client().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    ready_pods(&pods, 2).await;
    let namespace = plane.create_namespace("webhooks").await.unwrap();
    let apps = common::webapps(client.clone(), &namespace);

    // The apiserver calls the plugin in the pods: an invalid WebApp is refused with its message.
    let refused = invalid_webapp_refused(&apps).await;
    eprintln!("[pods] {refused}");

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let load = tokio::spawn(admit_until(apps.clone(), stopped));
    for role in ["follower", "leader"] {
        let leader = eventually("a leader", WAIT, || leader(&leases)).await;
        let live = ready_pods(&pods, 2).await;
        let victim = live
            .iter()
            .map(name)
            .find(|pod| (*pod == leader) == (role == "leader"))
            .expect("a pod in that role");
        eprintln!("[pods] deleting the {role} {victim} while the apiserver calls the webhooks");
        pods.delete(&victim, &DeleteParams::default())
            .await
            .unwrap();
        eventually(&format!("{victim} gone"), WAIT, || async {
            pods.get_opt(&victim).await.ok()?.is_none().then_some(())
        })
        .await;
        ready_pods(&pods, 2).await;
    }
    stop.send(true).unwrap();
    let (admitted, errors) = load.await.unwrap();
    eprintln!("[pods] {admitted} dry-run creates admitted while two replicas were replaced");
    assert!(admitted > 100, "only {admitted} requests went through");
    assert!(
        errors.is_empty(),
        "the apiserver refused {} of them: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
}
