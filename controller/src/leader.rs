//! Leader election on a coordination.k8s.io Lease, so that of several manager replicas one
//! acts: the holder renews the Lease; another replica takes it over once it has not been
//! renewed for its duration. A holder that cannot renew in time stops acting.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

/// How a replica leads: how long a Lease holds without renewal, how long the holder keeps
/// trying to renew before it stops acting, and how often it renews (and others retry).
/// The defaults are controller-runtime's and kube-controller-manager's: 15 s, 10 s, 2 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long a Lease holds without renewal.
    pub lease_duration: Duration,
    /// How long the holder may fail to renew before it stops acting; shorter than the Lease,
    /// so that it has stopped before another replica may take over.
    pub renew_deadline: Duration,
    /// How often the holder renews and a standby tries to take over.
    pub retry_period: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl Timing {
    /// Why these durations cannot keep one leader at a time, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.lease_duration.as_secs() == 0 || self.lease_duration.subsec_nanos() != 0 {
            return Err(format!(
                "the lease duration must be whole seconds, at least one (a Lease stores \
                 seconds), not {:?}",
                self.lease_duration
            ));
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(format!(
                "the renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline, self.lease_duration
            ));
        }
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            return Err(format!(
                "the retry period ({:?}) must be above zero and shorter than the renew \
                 deadline ({:?})",
                self.retry_period, self.renew_deadline
            ));
        }
        Ok(())
    }
}

/// What one attempt on the Lease found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// This replica holds it.
    Held,
    /// Another replica holds it, and its hold has not expired.
    Taken,
    /// The write lost a race (409): who holds it is known at the next read.
    Contended,
}

/// One replica's claim on the Lease `namespace/name`.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: Timing,
    /// The Lease's resourceVersion as last read, and when this replica first read it.
    observed: Mutex<(String, Instant)>,
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
            timing: Timing::default(),
            observed: Mutex::new((String::new(), Instant::now())),
        }
    }

    /// When this replica first read the Lease at `version`.
    fn seen(&self, version: &str) -> Instant {
        let mut observed = self.observed.lock().unwrap_or_else(PoisonError::into_inner);
        if observed.0 != version {
            *observed = (version.to_owned(), Instant::now());
        }
        observed.1
    }

    /// The same claim with other durations (the Lease's in whole seconds).
    pub fn with_timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }

    /// Tries once to take or renew the Lease; `Ok(true)` while this replica holds it.
    pub async fn try_acquire(&self) -> kube::Result<bool> {
        Ok(self.claim().await? == Claim::Held)
    }

    /// Tries once to take or renew the Lease.
    async fn claim(&self) -> kube::Result<Claim> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(1)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Claim::Held),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(Claim::Contended),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let ours = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        let free = spec.holder_identity.as_deref().is_none_or(str::is_empty);
        let duration = spec
            .lease_duration_seconds
            .map_or(self.timing.lease_duration, |s| {
                Duration::from_secs(u64::try_from(s).unwrap_or(0))
            });
        // Measured on this replica's clock from when it first saw this version of the Lease,
        // as client-go does: the holder's clock may disagree with ours.
        let seen = self.seen(
            lease
                .metadata
                .resource_version
                .as_deref()
                .unwrap_or_default(),
        );
        let expired = free || seen.elapsed() >= duration;
        if !ours && !expired {
            return Ok(Claim::Taken);
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
            Ok(_) => Ok(Claim::Held),
            // Someone wrote the Lease since it was read: the next read says who holds it.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Claim::Contended),
            Err(error) => Err(error),
        }
    }

    fn spec(&self, transitions: i32) -> k8s_openapi::api::coordination::v1::LeaseSpec {
        k8s_openapi::api::coordination::v1::LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.timing.lease_duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: Some(now()),
            renew_time: Some(now()),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// Waits until this replica holds the Lease; the instant the winning request was sent,
    /// from which the hold is counted.
    pub async fn acquire(&self) -> Instant {
        loop {
            let sent = Instant::now();
            match tokio::time::timeout(self.timing.renew_deadline, self.claim()).await {
                Ok(Ok(Claim::Held)) => return sent,
                Ok(Ok(Claim::Taken | Claim::Contended)) => {}
                Ok(Err(error)) => tracing::warn!(%error, "cannot read or take the leader Lease"),
                Err(_) => tracing::warn!("taking the leader Lease took too long"),
            }
            tokio::time::sleep(self.timing.retry_period).await;
        }
    }

    /// Renews the Lease every retry period from `since` (when the claim that won it was
    /// sent); returns when another replica holds it, or at the renew deadline after the last
    /// renewal that went through. A renewal is sent no later than the Lease's other holders
    /// read it, and the deadline is shorter than the Lease, so this replica has stopped
    /// before another may start.
    pub async fn hold(&self, since: Instant) {
        let mut renewed = since;
        loop {
            let deadline = renewed + self.timing.renew_deadline;
            tokio::time::sleep_until(
                (Instant::now() + self.timing.retry_period)
                    .min(deadline)
                    .into(),
            )
            .await;
            if Instant::now() >= deadline {
                tracing::warn!(
                    deadline = ?self.timing.renew_deadline,
                    "stopped leading: no renewal of the leader Lease went through in time"
                );
                return;
            }
            let sent = Instant::now();
            match tokio::time::timeout_at(deadline.into(), self.claim()).await {
                Ok(Ok(Claim::Held)) => renewed = sent,
                Ok(Ok(Claim::Taken)) => {
                    tracing::warn!("stopped leading: another replica holds the leader Lease");
                    return;
                }
                Ok(Ok(Claim::Contended)) => tracing::warn!("renewing the leader Lease conflicted"),
                Ok(Err(error)) => tracing::warn!(%error, "cannot renew the leader Lease"),
                Err(_) => tracing::warn!("renewing the leader Lease took too long"),
            }
        }
    }

    /// Gives the Lease up if this replica holds it, so that another takes over at once
    /// rather than after the Lease's duration (as client-go does when released on cancel).
    pub async fn release(&self) -> kube::Result<()> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now());
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            other => other.map(|_| ()),
        }
    }
}
