//! Serving a registered cluster (SveltosCluster or Cluster API Cluster) reached through its
//! kubeconfig Secret: the connection reported in a SveltosCluster's status, and reconnecting
//! with a backoff when it fails.

use std::time::Duration;

use api::v1beta1::{ClusterType, SveltosCluster};
use clusters::registry::{Registration, connect};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;
use tokio::sync::watch;

use crate::hub::cluster::{ClusterAgent, Sources};
use crate::hub::relay;
use crate::hub::report::{ClusterId, Destination};

const FIRST_RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Records the connection in a SveltosCluster's status (Cluster API keeps its own).
async fn write_status(mgmt: &Client, id: &ClusterId, status: serde_json::Value) {
    if id.cluster_type != ClusterType::Sveltos {
        return;
    }
    let clusters: Api<SveltosCluster> = Api::namespaced(mgmt.clone(), &id.namespace);
    let patch = json!({ "status": status });
    if let Err(error) = clusters
        .patch_status(&id.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::warn!(cluster = %id, %error, "cannot update SveltosCluster status");
    }
}

/// Connects to the cluster and serves it until `sources` closes; reconnects on failure. A
/// spoke cluster is relayed (its own agent evaluates); any other is evaluated from here.
pub async fn serve(
    mgmt: Client,
    id: ClusterId,
    cluster: Registration,
    mut sources: watch::Receiver<Sources>,
) {
    let mut delay = FIRST_RETRY;
    loop {
        let outcome = match connect(&mgmt, &cluster).await {
            Ok((managed, version)) => {
                let healthy = match &cluster {
                    Registration::Sveltos(cluster) => {
                        let status = cluster.status.clone().unwrap_or_default();
                        status.ready
                            && status.version == version
                            && status.connection_status
                                == Some(api::v1beta1::ConnectionStatus::Healthy)
                            && status.failure_message.is_none()
                    }
                    Registration::Capi(_) => true,
                };
                if !healthy {
                    let status = json!({"ready": true, "version": version, "connectionStatus": "Healthy", "failureMessage": null});
                    write_status(&mgmt, &id, status).await;
                }
                tracing::info!(cluster = %id, %version, "connected");
                if cluster.is_spoke() {
                    relay::run(&id, managed, &mgmt, &mut sources)
                        .await
                        .map_err(|e| e.to_string())
                } else {
                    let destination = Destination::Hub {
                        mgmt,
                        cluster: id.clone(),
                    };
                    ClusterAgent::run(id, managed, destination, sources).await;
                    return;
                }
            }
            Err(error) => Err(error.to_string()),
        };
        let Err(error) = outcome else {
            return;
        };
        tracing::warn!(cluster = %id, %error, "cannot serve cluster; retrying in {delay:?}");
        let status = json!({"connectionStatus": "Down", "failureMessage": error});
        write_status(&mgmt, &id, status).await;
        if sources.has_changed().is_err() {
            return;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(MAX_RETRY);
    }
}
