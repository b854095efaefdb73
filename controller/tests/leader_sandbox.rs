//! Leader election on the sandbox: one holder at a time; a holder that stops renewing is
//! replaced once its Lease has expired.
#![allow(clippy::unwrap_used)] // test set-up

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use sandbox::{Sandbox, SandboxOptions};
use sveltos_events_controller::leader::Elector;

#[tokio::test]
async fn one_holder_at_a_time_and_takeover_after_expiry() {
    let sandbox = Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap();
    let client = sandbox.clusters()[0].client().unwrap();
    let timing = |e: Elector| e.with_timing(Duration::from_secs(1), Duration::from_millis(200));
    let first = timing(Elector::new(client.clone(), "default", "lead", "first"));
    let second = timing(Elector::new(client.clone(), "default", "lead", "second"));

    assert!(first.try_acquire().await.unwrap());
    assert!(!second.try_acquire().await.unwrap());
    assert!(first.try_acquire().await.unwrap(), "the holder renews");

    // The first stops renewing; after the Lease's duration the second takes over.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(second.try_acquire().await.unwrap());
    assert!(!first.try_acquire().await.unwrap());
    let lease = Api::<Lease>::namespaced(client, "default")
        .get("lead")
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("second"));
    assert_eq!(spec.lease_transitions, Some(2));

    sandbox.shutdown().await;
}
