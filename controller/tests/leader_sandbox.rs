//! Leader election on the sandbox: one holder at a time; a holder that stops renewing is
//! replaced once its Lease has expired.
#![allow(clippy::unwrap_used)] // test set-up

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use sandbox::faults::Fault;
use sandbox::{Sandbox, SandboxOptions};
use sveltos_events_controller::leader::{Elector, Timing};

/// A Lease of a second, renewed every 200 ms.
fn quick() -> Timing {
    Timing {
        lease_duration: Duration::from_secs(1),
        renew_deadline: Duration::from_millis(600),
        retry_period: Duration::from_millis(200),
    }
}

/// A sandbox of one cluster, where the Leases go.
async fn management() -> Sandbox {
    Sandbox::start(SandboxOptions {
        dir: None,
        managed_clusters: 0,
        ..Default::default()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn one_holder_at_a_time_and_takeover_after_expiry() {
    let sandbox = management().await;
    let client = sandbox.clusters()[0].client().unwrap();
    let timing = |e: Elector| e.with_timing(quick());
    let first = timing(Elector::new(client.clone(), "default", "lead", "first"));
    let second = timing(Elector::new(client.clone(), "default", "lead", "second"));

    assert!(first.try_acquire().await.unwrap());
    assert!(!second.try_acquire().await.unwrap());
    assert!(first.try_acquire().await.unwrap(), "the holder renews");
    // A renewal restarts the standby's count (on its own clock, as client-go's).
    assert!(!second.try_acquire().await.unwrap());

    // The first stops renewing; the Lease's duration after the second saw the last renewal,
    // it takes over.
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

#[tokio::test]
async fn a_released_lease_is_taken_at_once_and_a_holder_that_cannot_renew_stops_in_time() {
    let sandbox = management().await;
    let mgmt = &sandbox.clusters()[0];
    let client = mgmt.client().unwrap();
    let first = Elector::new(client.clone(), "default", "lead", "first").with_timing(quick());
    let second = Elector::new(client.clone(), "default", "lead", "second").with_timing(quick());
    assert!(first.try_acquire().await.unwrap());
    assert!(!second.try_acquire().await.unwrap());

    // Released on the way out: the standby need not wait for the Lease to expire.
    first.release().await.unwrap();
    assert!(second.try_acquire().await.unwrap());
    // Releasing a Lease another replica holds changes nothing.
    first.release().await.unwrap();
    assert!(!first.try_acquire().await.unwrap());

    // The holder's API server fails every request: it stops acting within the renew
    // deadline (plus a retry period), before the Lease could expire for anyone else.
    let started = tokio::time::Instant::now();
    mgmt.store.faults().inject(
        Fault::Errors {
            code: 503,
            share: 1.0,
        },
        Duration::from_secs(5),
    );
    second.hold(std::time::Instant::now()).await;
    let held = started.elapsed();
    assert!(
        held < quick().lease_duration,
        "held on for {held:?} without renewing"
    );
    mgmt.store.faults().clear();
    sandbox.shutdown().await;
}

#[test]
fn timings_that_could_make_two_leaders_are_refused() {
    assert_eq!(Timing::default().check(), Ok(()));
    let late = Timing {
        renew_deadline: Duration::from_secs(15),
        ..Timing::default()
    };
    assert!(
        late.check()
            .unwrap_err()
            .contains("shorter than the lease duration")
    );
    let slow = Timing {
        retry_period: Duration::from_secs(10),
        ..Timing::default()
    };
    assert!(
        slow.check()
            .unwrap_err()
            .contains("shorter than the renew deadline")
    );
}
