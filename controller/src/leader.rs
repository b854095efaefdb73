//! Leader election on a coordination.k8s.io Lease, so that of several manager replicas one
//! acts: the holder renews the Lease; another replica takes it over once it has not been
//! renewed for its duration. A holder that cannot renew in time stops acting.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

/// How long a Lease holds without renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews (and others retry).
pub const RENEW_PERIOD: Duration = Duration::from_secs(5);

/// One replica's claim on the Lease `namespace/name`.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
    renew: Duration,
}

/// The manager's leader Lease: one per shard (`--shard-key`), so shards lead apart.
pub fn lease_name(shard: &str) -> String {
    match shard {
        "" => "sveltos-events-manager".to_owned(),
        shard => format!("sveltos-events-manager-{shard}"),
    }
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

impl Elector {
    /// A claim on `namespace/name` by `identity` (unique per replica).
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str) -> Self {
        Elector {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            identity: identity.to_owned(),
            duration: LEASE_DURATION,
            renew: RENEW_PERIOD,
        }
    }

    /// The same claim with another Lease duration (whole seconds) and renewal period.
    pub fn with_timing(mut self, duration: Duration, renew: Duration) -> Self {
        self.duration = duration;
        self.renew = renew;
        self
    }

    /// Tries once to take or renew the Lease; `Ok(true)` while this replica holds it.
    pub async fn try_acquire(&self) -> kube::Result<bool> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(1)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let ours = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        let expired = spec.renew_time.as_ref().is_none_or(|renewed| {
            let duration = spec
                .lease_duration_seconds
                .map_or(LEASE_DURATION.as_secs(), |s| s.max(0) as u64);
            let age = k8s_openapi::jiff::Timestamp::now().duration_since(renewed.0);
            age.as_secs() >= duration as i64
        });
        if !ours && !expired {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        let mut next = self.spec(transitions);
        if ours {
            next.acquire_time = spec.acquire_time;
        }
        lease.spec = Some(next);
        // The resourceVersion read above makes this a compare-and-swap.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn spec(&self, transitions: i32) -> k8s_openapi::api::coordination::v1::LeaseSpec {
        k8s_openapi::api::coordination::v1::LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: Some(now()),
            renew_time: Some(now()),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// Waits until this replica holds the Lease.
    pub async fn acquire(&self) {
        loop {
            match self.try_acquire().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(error) => tracing::warn!(%error, "cannot read or take the leader Lease"),
            }
            tokio::time::sleep(self.renew).await;
        }
    }

    /// Renews the Lease until renewal fails for longer than the Lease lasts; returns then,
    /// when another replica may have taken over.
    pub async fn hold(&self) {
        let mut last = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.renew).await;
            match self.try_acquire().await {
                Ok(true) => last = tokio::time::Instant::now(),
                Ok(false) => return,
                Err(error) => {
                    tracing::warn!(%error, "cannot renew the leader Lease");
                    if last.elapsed() >= self.duration {
                        return;
                    }
                }
            }
        }
    }
}
