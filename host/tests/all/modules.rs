//! Fetching a `WasmReconciler`'s module on the real control plane and from a local HTTP server:
//! from a ConfigMap's binaryData or a URL, each pinned by its sha256, and refusing a module with no
//! pin, a digest that does not match, or a key that is not there. The policy opts in to the test's
//! namespace and to loopback URLs, which the default refuses.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmop::contract::{Ceiling, ModuleSources};
use wasmop::distribution::digest;
use wasmop::distribution::module::{KeyRef, ModuleError, ModuleRef};
use wasmop::distribution::oci::Registries;
use wasmop_envtest::{shared_by, within};

const LIMIT: Duration = Duration::from_secs(60);

/// Serves `body` to every request on a loopback port; returns the module's URL.
async fn serve(body: Vec<u8>) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/wasm\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
        }
    });
    Ok(format!("http://{address}/guest-good.wasm"))
}

fn hex(bytes: &[u8]) -> String {
    digest(bytes).trim_start_matches("sha256:").to_owned()
}

#[tokio::test]
async fn modules_come_from_configmaps_and_pinned_urls() -> anyhow::Result<()> {
    within(LIMIT, "fetching modules", async {
        let plane = &shared_by(module_path!()).await?;
        let client = plane.client().await?;
        let namespace = plane.create_namespace("modules").await?;
        let bytes = std::fs::read(common::component("guest-good"))?;
        let configmap = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("guest-good".into()),
                ..Default::default()
            },
            binary_data: Some(BTreeMap::from([(
                "module.wasm".into(),
                ByteString(bytes.clone()),
            )])),
            ..Default::default()
        };
        Api::<ConfigMap>::namespaced(client.clone(), &namespace)
            .create(&PostParams::default(), &configmap)
            .await?;
        // Modules from this namespace and from loopback, as the test serves them.
        let policy = Ceiling {
            modules: ModuleSources {
                namespaces: Some(vec![namespace.clone()]),
                private_addresses: true,
            },
            ..Ceiling::default()
        };
        let key = |key: &str| KeyRef {
            namespace: namespace.clone(),
            name: "guest-good".into(),
            key: key.into(),
        };

        let unpinned = ModuleRef {
            config_map: Some(key("module.wasm")),
            ..ModuleRef::default()
        };
        let error = unpinned
            .fetch(&client, &policy, &Registries::default(), None)
            .await
            .unwrap_err();
        assert!(matches!(error, ModuleError::Invalid(_)), "{error}");
        let pinned = ModuleRef {
            sha256: Some(hex(&bytes)),
            ..unpinned.clone()
        };
        assert_eq!(
            pinned
                .fetch(&client, &policy, &Registries::default(), None)
                .await?
                .bytes,
            bytes
        );
        let swapped = ModuleRef {
            sha256: Some(hex(b"the module that was reviewed")),
            ..unpinned
        };
        let error = swapped
            .fetch(&client, &policy, &Registries::default(), None)
            .await
            .unwrap_err();
        assert!(matches!(error, ModuleError::Digest), "{error}");
        let missing = ModuleRef {
            config_map: Some(key("other.wasm")),
            sha256: Some(hex(&bytes)),
            ..ModuleRef::default()
        };
        let error = missing
            .fetch(&client, &policy, &Registries::default(), None)
            .await
            .unwrap_err();
        assert!(matches!(error, ModuleError::Unreadable), "{error}");
        let refused = pinned
            .fetch(&client, &Ceiling::default(), &Registries::default(), None)
            .await;
        let refused = refused.unwrap_err();
        assert!(
            matches!(refused, ModuleError::Namespace { .. }),
            "{refused}"
        );

        let url = serve(bytes.clone()).await?;
        let from_url = ModuleRef {
            url: Some(url.clone()),
            sha256: Some(hex(&bytes)),
            ..ModuleRef::default()
        };
        assert_eq!(
            from_url
                .fetch(&client, &policy, &Registries::default(), None)
                .await?
                .bytes,
            bytes
        );
        let wrong = ModuleRef {
            sha256: Some(hex(b"something else")),
            ..from_url.clone()
        };
        let refused = wrong
            .fetch(&client, &policy, &Registries::default(), None)
            .await
            .unwrap_err();
        println!("{refused}");
        assert!(matches!(refused, ModuleError::Digest), "{refused}");
        let loopback = from_url
            .fetch(&client, &Ceiling::default(), &Registries::default(), None)
            .await;
        let loopback = loopback.unwrap_err();
        assert!(
            matches!(loopback, ModuleError::Address { .. }),
            "{loopback}"
        );
        let unreachable = ModuleRef {
            url: Some("http://127.0.0.1:1/none.wasm".into()),
            sha256: Some(hex(&bytes)),
            ..ModuleRef::default()
        };
        let error = unreachable
            .fetch(&client, &policy, &Registries::default(), None)
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("fetching http://127.0.0.1:1/none.wasm"),
            "{error}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_apiserver_refuses_a_wasm_reconciler_without_exactly_one_pinned_source()
-> anyhow::Result<()> {
    within(LIMIT, "validating WasmReconcilers", async {
        let plane = &shared_by(module_path!()).await?;
        let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../deploy/crds/clusterwasmreconciler.yaml");
        plane.install_crds(&[crd]).await?;
        let kind =
            kube::api::GroupVersionKind::gvk("wasmop.dev", "v1alpha1", "ClusterWasmReconciler");
        let resource =
            kube::core::ApiResource::from_gvk_with_plural(&kind, "clusterwasmreconcilers");
        let api: Api<kube::api::DynamicObject> = Api::all_with(plane.client().await?, &resource);
        let create = |name: &str, module: serde_json::Value| {
            let api = api.clone();
            let object = serde_json::json!({
                "apiVersion": "wasmop.dev/v1alpha1", "kind": "ClusterWasmReconciler",
                "metadata": {"name": name}, "spec": {"module": module},
            });
            async move {
                let object: kube::api::DynamicObject = serde_json::from_value(object)?;
                anyhow::Ok(api.create(&PostParams::default(), &object).await)
            }
        };
        let unpinned = create(
            "unpinned",
            serde_json::json!({"url": "https://example.com/a.wasm"}),
        )
        .await?;
        let message = format!("{:?}", unpinned.unwrap_err());
        assert!(
            message.contains("pin the module with its sha256"),
            "{message}"
        );
        let both = serde_json::json!({
            "url": "https://example.com/a.wasm", "sha256": "0".repeat(64),
            "configMap": {"namespace": "a", "name": "b", "key": "c"},
        });
        let message = format!("{:?}", create("both", both).await?.unwrap_err());
        assert!(
            message.contains("set exactly one of configMap, secret, url"),
            "{message}"
        );
        let pinned =
            serde_json::json!({"url": "https://example.com/a.wasm", "sha256": "0".repeat(64)});
        create("pinned", pinned).await??;
        api.delete("pinned", &Default::default()).await?;
        Ok(())
    })
    .await
}
