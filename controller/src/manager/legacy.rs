//! EventBasedAddOn, the v1alpha1 kind upstream dropped: each one is reconciled by writing the
//! EventTrigger it stands for (same name, owned by it, v1alpha1's instantiation rule), which
//! the manager then serves like any other. Deleting the EventBasedAddOn deletes its trigger
//! through garbage collection.

use api::v1alpha1::EventBasedAddOn;
use futures_util::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

/// Field manager of the EventTriggers written for EventBasedAddOns.
const FIELD_MANAGER: &str = "sveltos-events-manager/eventbasedaddon";

/// Keeps an EventTrigger in step with every EventBasedAddOn until the watch ends.
pub async fn run(client: Client) {
    let addons: Api<EventBasedAddOn> = Api::all(client.clone());
    let triggers: Api<api::v1beta1::EventTrigger> = Api::all(client);
    let mut changes = watcher(addons, watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(change) = changes.next().await {
        let addon = match change {
            Ok(addon) => addon,
            Err(error) => {
                tracing::warn!(%error, "EventBasedAddOn watch failed; retrying");
                continue;
            }
        };
        let name = addon.metadata.name.clone().unwrap_or_default();
        if addon.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let trigger = match addon.to_event_trigger() {
            Ok(trigger) => trigger,
            Err(error) => {
                tracing::warn!(eventbasedaddon = %name, %error, "cannot convert EventBasedAddOn");
                continue;
            }
        };
        let params = PatchParams::apply(FIELD_MANAGER).force();
        if let Err(error) = triggers
            .patch(&name, &params, &Patch::Apply(&trigger))
            .await
        {
            tracing::warn!(eventbasedaddon = %name, %error, "cannot write the EventTrigger of an EventBasedAddOn");
        }
    }
}
