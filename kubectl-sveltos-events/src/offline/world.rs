//! The manager's view of the world, made from files: the clusters, EventSources and referenced
//! ConfigMaps/Secrets as written, and each EventReport as the agent would write it, by
//! evaluating the EventSource over the source cluster's resources with the agent's own code.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent::evaluate::evaluate_event_source;
use agent::hub::report::publication;
use agent::runtime::{Limits, LuaRuntime};
use api::v1beta1::{EventReport, event_report_name};
use controller::event_data::{DocumentMemo, ReportEvents};
use controller::fleet::Cluster;
use controller::identity::ClusterRef;
use controller::instantiate::{Lookup, Referenced};
use controller::plan::World;
use controller::sets;
use k8s_openapi::ByteString;
use kube::api::ObjectMeta;

use super::inputs::Inputs;

/// [`World`] over [`Inputs`]: the resources are the source cluster's.
pub struct Offline {
    inputs: Inputs,
    source: ClusterRef,
    runtime: LuaRuntime,
}

impl Offline {
    /// The world of `inputs`, whose resources are in cluster `source`.
    pub fn new(inputs: Inputs, source: ClusterRef) -> anyhow::Result<Offline> {
        let runtime = LuaRuntime::new(Limits::default())
            .map_err(|e| anyhow::anyhow!("cannot start Lua: {e}"))?;
        Ok(Offline {
            inputs,
            source,
            runtime,
        })
    }

    /// What was read.
    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// The clusters ClusterSet `name` of the files selects: those its status names, kept
    /// while they are in its pool and healthy, and free places filled from the pool, as the
    /// ClusterSet controller would select them (none when the files hold no such set).
    pub fn selected(&self, name: &str) -> Vec<ClusterRef> {
        let Some(set) = self
            .inputs
            .cluster_sets
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))
        else {
            return Vec::new();
        };
        let before = set
            .status
            .as_ref()
            .map(|s| s.selected_cluster_refs.clone())
            .unwrap_or_default();
        sets::status(&set.spec.pool, None, &self.inputs.clusters, &before)
            .map(|status| sets::selected_refs(&status))
            .unwrap_or_default()
    }
}

impl Lookup for Offline {
    fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Referenced> {
        self.inputs
            .referenced
            .iter()
            .find(|r| r.kind == kind && r.namespace == namespace && r.name == name)
            .cloned()
    }
}

impl World for Offline {
    fn clusters(&self) -> Arc<[Cluster]> {
        self.inputs.clusters.clone().into()
    }

    fn event_source_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.inputs
            .sources
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))
            .map(|s| s.metadata.labels.clone().unwrap_or_default())
    }

    fn lookup_epoch(&self) -> u64 {
        0
    }

    fn cluster_set(&self, name: &str) -> Vec<ClusterRef> {
        self.selected(name)
    }

    fn report(
        &self,
        cluster: &ClusterRef,
        event_source: &str,
        documents: &mut DocumentMemo,
    ) -> Result<Option<ReportEvents>, String> {
        if *cluster != self.source {
            return Ok(None);
        }
        let Some(source) = self
            .inputs
            .sources
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(event_source))
        else {
            return Ok(None);
        };
        let evaluation = evaluate_event_source(&self.runtime, source, &self.inputs.resources)
            .map_err(|e| e.to_string())?;
        let published = publication(Some(cluster), source, &evaluation.matching)?;
        let report = EventReport {
            metadata: ObjectMeta {
                name: Some(event_report_name(
                    event_source,
                    &cluster.name,
                    cluster.cluster_type,
                )),
                namespace: Some(cluster.namespace.clone()),
                ..Default::default()
            },
            spec: published.spec,
            status: None,
        };
        let sealed = published
            .sealed
            .into_iter()
            .map(|(key, data)| (key, ByteString(data)))
            .collect();
        ReportEvents::decode_sealed(&std::sync::Arc::new(report), &sealed, documents)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}
