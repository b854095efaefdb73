//! The default RBAC policy kube-apiserver bootstraps a cluster with: `cluster-admin`,
//! `admin`, `edit`, `view`, `system:discovery`, `system:basic-user`,
//! `system:public-info-viewer`, the controllers' roles, and their bindings.
//!
//! `bootstrap.json` holds them as kube-apiserver 1.20 serves them in a new cluster (read from
//! ../shared/tools/kube-oracle, with the cluster-assigned metadata dropped): policy data,
//! the same in every cluster, which the sandbox has no business inventing.

use super::RBAC_GROUP;
use crate::meta::meta_str;
use crate::store::{Store, WriteOptions};
use serde_json::Value;

const POLICY: &str = include_str!("bootstrap.json");

/// Creates the default Roles, ClusterRoles and bindings in a new cluster.
pub fn install(store: &Store) {
    let objects: Vec<Value> = match serde_json::from_str(POLICY) {
        Ok(objects) => objects,
        Err(error) => {
            tracing::error!(%error, "the bootstrap RBAC policy does not parse");
            return;
        }
    };
    let opts = WriteOptions {
        manager: "kube-apiserver".into(),
        ..WriteOptions::default()
    };
    for object in objects {
        let plural = match object["kind"].as_str().unwrap_or_default() {
            "ClusterRole" => "clusterroles",
            "ClusterRoleBinding" => "clusterrolebindings",
            "Role" => "roles",
            _ => "rolebindings",
        };
        let Some(info) = store.resolve(RBAC_GROUP, "v1", plural) else {
            continue;
        };
        let namespace = meta_str(&object, "namespace").to_owned();
        // A restored cluster has them already, perhaps edited as a real cluster's may be.
        if store
            .get(&info, &namespace, meta_str(&object, "name"))
            .is_ok()
        {
            continue;
        }
        if let Err(error) = store.create(&info, &namespace, object, &opts) {
            tracing::error!(%error, "bootstrap RBAC object refused");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_roles_are_there() {
        let store = Store::new();
        install(&store);
        let info = store.resolve(RBAC_GROUP, "v1", "clusterroles").unwrap();
        for name in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
            assert!(store.get(&info, "", name).is_ok(), "{name}");
        }
        let roles = store.resolve(RBAC_GROUP, "v1", "roles").unwrap();
        let page = store
            .list(&roles, Some("kube-system"), &Default::default())
            .unwrap();
        assert!(!page.items.is_empty());
    }
}
