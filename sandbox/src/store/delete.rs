//! Deleting from the store: finalizers, graceful deletion, and the objects of a custom
//! resource whose definition goes.

use super::*;

impl Store {
    /// Delete an object, honouring finalizers and propagation policy.
    pub fn delete(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted> {
        let mut st = self.lock();
        self.writable()?;
        let gr = info.group_resource();
        let key = (ns.to_owned(), name.to_owned());
        let old = st.stored(info, ns, name)?;
        if opts
            .uid
            .as_deref()
            .is_some_and(|u| u != meta_str(&old, "uid"))
        {
            return Err(Error::Conflict {
                message: format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the UID in the precondition ({}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                    qualified_kind(info),
                    opts.uid.as_deref().unwrap_or(""),
                    meta_str(&old, "uid")
                ),
                fields: Vec::new(),
            });
        }
        if let Some(wanted) = opts
            .resource_version
            .as_deref()
            .filter(|r| *r != meta_str(&old, "resourceVersion"))
        {
            return Err(Error::Conflict {
                message: format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({}). The object might have been modified",
                    qualified_kind(info),
                    meta_str(&old, "resourceVersion")
                ),
                fields: Vec::new(),
            });
        }
        let mut new = (*old).clone();
        let mut fins = finalizers(&new);
        match opts.propagation.as_deref() {
            Some("Foreground") if !fins.iter().any(|f| f == "foregroundDeletion") => {
                fins.push("foregroundDeletion".into())
            }
            Some("Orphan") if !fins.iter().any(|f| f == "orphan") => fins.push("orphan".into()),
            _ => {}
        }
        let is_namespace = info.plural == "namespaces" && info.group.is_empty();
        if fins.is_empty() && !is_namespace {
            if opts.dry_run {
                return Ok(Deleted::Gone(new));
            }
            let gone = remove_object(&mut st, &self.tx, info, &key, new);
            return Ok(Deleted::Gone(gone));
        }
        if !meta_str(&old, "deletionTimestamp").is_empty() && fins == finalizers(&old) {
            return Ok(Deleted::Pending((*old).clone()));
        }
        {
            let md = meta::metadata_mut(&mut new);
            if !md.contains_key("deletionTimestamp") {
                md.insert(
                    "deletionTimestamp".into(),
                    Value::String(meta::now_rfc3339()),
                );
                if !is_namespace {
                    md.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
            }
            if fins.is_empty() {
                md.remove("finalizers");
            } else {
                md.insert("finalizers".into(), json!(fins));
            }
        }
        if is_namespace {
            new["status"]["phase"] = json!("Terminating");
        }
        if info.generation {
            let g = new["metadata"]["generation"].as_i64().unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(new));
        }
        let (_, stored) = commit(&mut st, &self.tx, &gr, key, new, EventType::Modified)?;
        Ok(Deleted::Pending(Arc::unwrap_or_clone(stored)))
    }
}

/// Remove an object for good: DELETED event with a new resourceVersion.
pub(super) fn remove_object(
    st: &mut State,
    tx: &broadcast::Sender<Arc<Event>>,
    info: &ResourceInfo,
    key: &(String, String),
    mut last: Value,
) -> Value {
    let gr = info.group_resource();
    let before = st.objects.get_mut(&gr).and_then(|m| m.remove(key));
    st.rv += 1;
    let rv = st.rv;
    meta::metadata_mut(&mut last).insert("resourceVersion".into(), Value::String(rv.to_string()));
    let arc = Arc::new(last);
    emit(
        st,
        tx,
        &gr,
        key.0.clone(),
        (arc.clone(), before),
        EventType::Deleted,
        rv,
    );
    if is_crd(info)
        && let Some(crd_gr) = crd_group_resource(&arc)
    {
        st.registry.remove(&crd_gr);
        remove_all(st, tx, &crd_gr);
    }
    (*arc).clone()
}

/// Removes every object of `gr` (a custom resource no longer served), each with its DELETED
/// event.
pub(super) fn remove_all(st: &mut State, tx: &broadcast::Sender<Arc<Event>>, gr: &GroupResource) {
    let Some(objs) = st.objects.remove(gr) else {
        return;
    };
    for ((ns, _), before) in objs {
        st.rv += 1;
        let rv = st.rv;
        let mut o = (*before).clone();
        meta::metadata_mut(&mut o).insert("resourceVersion".into(), Value::String(rv.to_string()));
        emit(
            st,
            tx,
            gr,
            ns,
            (Arc::new(o), Some(before)),
            EventType::Deleted,
            rv,
        );
    }
}

fn crd_group_resource(crd: &Value) -> Option<GroupResource> {
    let spec = crd.get("spec")?;
    Some(GroupResource {
        group: spec.get("group")?.as_str()?.to_owned(),
        resource: spec.get("names")?.get("plural")?.as_str()?.to_owned(),
    })
}
