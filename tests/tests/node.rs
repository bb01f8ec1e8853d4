//! The test control plane with a node: a Deployment's pods are scheduled, run in containerd
//! from an image it pulled from the node's registry, get addresses on the node's bridge, answer
//! the host, each other and `kubectl logs`/`exec`, reach the apiserver and the registry, are
//! replaced when deleted, and stopping the node leaves nothing behind. Needs root and the
//! node's binaries (`tests/k8s/build.sh --node`): run with `make test-cluster`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use wasmop_envtest::{
    BRIDGE, CGROUP_ROOT, ControlPlane, NODE_IP, NODE_NAME, REGISTRY_ADDRESS, within,
};

const ARCHIVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/image/archive.py");
const IMAGE: &str = "wasmop.dev/busybox:envtest";
/// Where the test pushes [`IMAGE`] in the node's registry.
const PUSHED: &str = "busybox:envtest";
const WAIT: Duration = Duration::from_secs(120);

/// A Deployment of two busybox pods, each logging a greeting and serving its name over HTTP.
const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: 2
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: hello
          image: 10.213.0.1:5000/busybox:envtest
          imagePullPolicy: Always
          command:
            - sh
            - -c
            - echo "hello from $HOSTNAME"; mkdir -p /tmp/www; echo "$HOSTNAME" > /tmp/www/index.html; exec httpd -f -p 8080 -h /tmp/www
"#;

fn busybox_image(dir: &Path) -> PathBuf {
    let archive = dir.join("busybox.tar");
    let status = std::process::Command::new("python3")
        .args([ARCHIVE, "--tag", IMAGE, "--output"])
        .arg(&archive)
        .args([
            "--entrypoint",
            r#"["/bin/sh"]"#,
            "--link",
            "busybox:/bin/sh",
            "--dir",
            "/tmp:1777",
            "/usr/bin/busybox:/bin/busybox",
        ])
        .status()
        .expect("python3 runs");
    assert!(status.success(), "archive.py failed: {status}");
    archive
}

async fn running_pods(pods: &Api<Pod>, count: usize) -> Vec<Pod> {
    let deadline = Instant::now() + WAIT;
    loop {
        let list = pods
            .list(&ListParams::default().labels("app=hello"))
            .await
            .unwrap();
        let running: Vec<Pod> = list
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .collect();
        if running.len() == count {
            return running;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {count} pods Running after {WAIT:?}",
            running.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn pod_ip(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .expect("a Running pod has an IP")
}

/// GET / of `ip`:8080 from this machine, as the apiserver calls a webhook's endpoint.
async fn http_get(ip: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect((ip, 8080)).await.unwrap();
    stream.write_all(b"GET / HTTP/1.0\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

fn leftovers(dir: &Path) -> Vec<String> {
    let mut left = Vec::new();
    if dir.exists() {
        left.push(format!("{} exists", dir.display()));
    }
    let bridge = std::process::Command::new("ip")
        .args(["link", "show", BRIDGE])
        .output()
        .unwrap();
    if bridge.status.success() {
        left.push(format!("bridge {BRIDGE}"));
    }
    for entry in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        if entry.path().join(CGROUP_ROOT).exists() {
            left.push(format!(
                "cgroup {}",
                entry.path().join(CGROUP_ROOT).display()
            ));
        }
    }
    let needle = dir.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) {
            left.push(format!(
                "process {}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    if std::path::Path::new("/run/containerd/s").exists() {
        left.push("/run/containerd/s".to_owned());
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    left.extend(
        mounts
            .lines()
            .filter(|l| l.contains(&needle))
            .map(|l| format!("mount {l}")),
    );
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_run_on_the_node_reach_each_other_and_leave_nothing_behind() {
    let plane = within(
        Duration::from_secs(600),
        "the node",
        ControlPlane::start_with_node(),
    )
    .await
    .unwrap();
    let dir = plane.dir().to_owned();
    let node = plane.node().expect("started with a node");
    let pushed = node.push_image(&busybox_image(&dir), PUSHED).unwrap();
    assert_eq!(pushed, format!("{REGISTRY_ADDRESS}/{PUSHED}"));
    assert!(DEPLOYMENT.contains(&format!("image: {pushed}\n")));
    let namespace = plane.create_namespace("node").await.unwrap();
    plane
        .run_kubectl(&["apply", "-n", &namespace, "-f", "-"], Some(DEPLOYMENT))
        .await
        .unwrap();

    let pods: Api<Pod> = Api::namespaced(plane.client().await.unwrap(), &namespace);
    let running = running_pods(&pods, 2).await;
    let ips: Vec<String> = running.iter().map(pod_ip).collect();
    assert_ne!(ips[0], ips[1], "each pod has its own address");
    for (pod, ip) in running.iter().zip(&ips) {
        let name = pod.metadata.name.clone().unwrap();
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(
            spec.node_name.as_deref(),
            Some(NODE_NAME),
            "the scheduler bound {name}"
        );
        assert!(
            ip.starts_with("10.213.0."),
            "{name} has {ip}, not an address on the bridge"
        );
        let logs = plane
            .run_kubectl(&["logs", "-n", &namespace, &name], None)
            .await
            .unwrap();
        assert_eq!(logs.trim(), format!("hello from {name}"));
        let answer = http_get(ip).await;
        assert!(
            answer.trim_end().ends_with(&name),
            "{ip}:8080 answered {answer:?}"
        );
    }

    let first = running[0].metadata.name.clone().unwrap();
    let from_pod = plane
        .run_kubectl(
            &[
                "exec",
                "-n",
                &namespace,
                &first,
                "--",
                "busybox",
                "wget",
                "-qO-",
                &format!("http://{}:8080/", ips[1]),
            ],
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        from_pod.trim(),
        running[1].metadata.name.clone().unwrap(),
        "pod to pod"
    );
    // Plain HTTP to the apiserver's TLS port: Go's server answers 400, so the pod reached it.
    let apiserver = format!(
        "busybox wget -qO- http://{NODE_IP}:{}/ 2>&1; true",
        wasmop_envtest::APISERVER_PORT
    );
    let reach = plane
        .run_kubectl(
            &[
                "exec", "-n", &namespace, &first, "--", "sh", "-c", &apiserver,
            ],
            None,
        )
        .await
        .unwrap();
    assert!(
        reach.contains("400 Bad Request"),
        "a pod reaches the apiserver: {reach:?}"
    );
    // The registry containerd pulled the image from, which pods reach too.
    let catalog = format!("http://{REGISTRY_ADDRESS}/v2/_catalog");
    let listed = plane
        .run_kubectl(
            &[
                "exec", "-n", &namespace, &first, "--", "busybox", "wget", "-qO-", &catalog,
            ],
            None,
        )
        .await
        .unwrap();
    assert_eq!(listed.trim(), r#"{"repositories":["busybox"]}"#);

    pods.delete(&first, &DeleteParams::default()).await.unwrap();
    let replaced = running_pods(&pods, 2).await;
    assert!(
        replaced
            .iter()
            .all(|p| p.metadata.name.as_deref() != Some(first.as_str())),
        "the ReplicaSet replaced the deleted {first}"
    );

    drop(plane);
    let left = leftovers(&dir);
    assert!(
        left.is_empty(),
        "the node left behind:\n{}",
        left.join("\n")
    );
}
