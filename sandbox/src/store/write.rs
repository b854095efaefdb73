//! Writing the store: create, update, modify and server-side apply, with the checks and
//! merges kube-apiserver runs before storing.

use super::*;

/// Whether objects `a` and `b` have equal members, those named in `skip` aside (compared in
/// place: the objects compared on every write can be megabytes).
fn equal_but(a: &Value, b: &Value, skip: &[&str]) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let kept = |m: &serde_json::Map<String, Value>| {
        m.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .count()
    };
    kept(a) == kept(b)
        && a.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .all(|(k, v)| b.get(k) == Some(v))
}

/// Everything but metadata and status, for generation bumps.
fn spec_differs(a: &Value, b: &Value) -> bool {
    !equal_but(a, b, &["metadata", "status"])
}

/// Whether a write changes nothing: same content and same field ownership (managedFields
/// timestamps and entry order aside), so a new manager sharing a value is still recorded,
/// while an apply that only moves its own entry is not persisted.
fn same_content(a: &Value, b: &Value) -> bool {
    let none = Value::Object(serde_json::Map::new());
    let ma = a.get("metadata").unwrap_or(&none);
    let mb = b.get("metadata").unwrap_or(&none);
    equal_but(a, b, &["metadata"])
        && equal_but(ma, mb, &["managedFields"])
        && same_owners(ma.get("managedFields"), mb.get("managedFields"))
}

/// Whether two `managedFields` hold the same entries, in any order and at any time.
fn same_owners(a: Option<&Value>, b: Option<&Value>) -> bool {
    let (Some(Value::Array(a)), Some(Value::Array(b))) = (a, b) else {
        return a == b;
    };
    fn sorted(entries: &[Value]) -> Vec<&Value> {
        let mut sorted: Vec<&Value> = entries.iter().collect();
        sorted.sort_by_key(|e| {
            ["manager", "operation", "subresource", "apiVersion"]
                .map(|k| e.get(k).and_then(Value::as_str).unwrap_or_default())
        });
        sorted
    }
    a.len() == b.len()
        && sorted(a)
            .into_iter()
            .zip(sorted(b))
            .all(|(x, y)| equal_but(x, y, &["time"]))
}

impl Store {
    /// Create an object.
    pub fn create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>> {
        an_object(&obj)?;
        let body_ns = meta_str(&obj, "namespace").to_owned();
        if info.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(Error::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
        let mut name = meta_str(&obj, "name").to_owned();
        if name.is_empty() {
            let prefix = meta_str(&obj, "generateName");
            if prefix.is_empty() {
                return Err(Error::Invalid(format!(
                    "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                    info.kind
                )));
            }
            name = format!("{prefix}{}", meta::name_suffix());
        }
        validate_name(info, &name)?;
        validate_labels(info, &name, &obj)?;
        if is_crd(info) {
            let want = crd_name(&obj);
            if want.as_deref() != Some(name.as_str()) {
                return Err(Error::Invalid(format!(
                    "CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"
                )));
            }
        }
        let mut st = self.lock();
        self.writable()?;
        if info.namespaced {
            check_namespace_writable(&st, info, &name, ns)?;
        }
        let gr = info.group_resource();
        let key = (
            if info.namespaced {
                ns.to_owned()
            } else {
                String::new()
            },
            name.clone(),
        );
        if st
            .objects
            .get(&gr)
            .is_some_and(|m| m.contains(&key.0, &key.1))
        {
            return Err(Error::AlreadyExists(format!(
                "{} \"{name}\" already exists",
                info.qualified()
            )));
        }
        {
            let root = obj
                .as_object_mut()
                .ok_or_else(|| Error::Internal("not an object".into()))?;
            root.insert("apiVersion".into(), Value::String(info.api_version()));
            root.insert("kind".into(), Value::String(info.kind.clone()));
        }
        if info.status
            && info.plural != "namespaces"
            && !opts.applied
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        {
            let md = meta::metadata_mut(&mut obj);
            md.insert("name".into(), Value::String(name.clone()));
            if info.namespaced {
                md.insert("namespace".into(), Value::String(ns.to_owned()));
            } else {
                md.remove("namespace");
            }
            md.insert("uid".into(), Value::String(meta::new_uid()));
            md.insert(
                "creationTimestamp".into(),
                Value::String(meta::now_rfc3339()),
            );
            md.remove("deletionTimestamp");
            md.remove("deletionGracePeriodSeconds");
            md.remove("selfLink");
            if info.generation {
                md.insert("generation".into(), json!(1));
            } else {
                md.remove("generation");
            }
        }
        meta::drop_empty_metadata(&mut obj);
        // Decoded as its type first, as kube-apiserver decodes a body before it defaults
        // and validates it.
        opts.decode(info, &mut obj)?;
        defaults::prepare_create(info, &mut obj);
        defaults::apply(info, &mut obj);
        crate::structural::validate(info, &obj)?;
        crate::validation::builtin(info, None, &obj)?;
        st.allocator.allocate(info, &mut obj);
        if info.plural == "namespaces" && info.group.is_empty() {
            meta::metadata_mut(&mut obj)
                .entry("labels")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .map(|l| {
                    l.insert(
                        "kubernetes.io/metadata.name".into(),
                        Value::String(name.clone()),
                    )
                });
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
        if is_crd(info) {
            obj["status"] = crd_status(&obj);
        }
        if !opts.applied {
            patch::record_update(None, &mut obj, &writer(info, opts));
        }
        if let Some(admit) = &opts.admit {
            (admit.0)(None, &obj)?;
        }
        let obj = self.to_storage(&st, info, obj)?;
        if opts.dry_run {
            return Ok(Arc::new(obj));
        }
        let (_, stored) = commit(&mut st, &self.tx, &gr, key, obj, EventType::Added)?;
        if is_crd(info) {
            st.registry.apply_crd(&stored);
        }
        Ok(stored)
    }

    /// Replace an object (PUT), honouring resourceVersion preconditions and subresources.
    pub fn update(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>> {
        let body_name = meta_str(&obj, "name");
        if !body_name.is_empty() && body_name != name {
            return Err(Error::BadRequest(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        // Custom resources and Services refuse unconditional updates.
        let unconditional = match (info.custom, info.group.as_str(), info.plural.as_str()) {
            (true, _, _) => Some((info.qualified(), "0x0")),
            (false, "", "services") => Some((info.kind.clone(), "\"\"")),
            _ => None,
        };
        let refused = unconditional.filter(|_| meta_str(&obj, "resourceVersion").is_empty());
        self.modify(info, ns, name, opts, |_| match refused {
            Some((subject, value)) => Err(Error::Invalid(format!(
                "{subject} \"{name}\" is invalid: metadata.resourceVersion: Invalid value: {value}: must be specified for an update"
            ))),
            None => Ok(obj),
        })
    }

    /// Read-modify-write under the cluster lock; `f` receives the current object.
    pub fn modify(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &WriteOptions,
        f: impl FnOnce(&Value) -> Result<Value>,
    ) -> Result<Arc<Value>> {
        let mut st = self.lock();
        self.writable()?;
        let gr = info.group_resource();
        let key = (ns.to_owned(), name.to_owned());
        let old = st.stored(info, ns, name)?;
        // Writes at another version than the stored one start from the converted object.
        let old = match self.converted(info, &old)? {
            Some(converted) => Arc::new(converted),
            None => old,
        };
        let new = f(&old)?;
        let new = prepare_update(info, &old, new, opts)?;
        if let Some(admit) = &opts.admit {
            (admit.0)(Some(&old), &new)?;
        }
        if same_content(&old, &new) && !opts.dry_run {
            return Ok(old);
        }
        let new = self.to_storage(&st, info, new)?;
        if opts.dry_run {
            return Ok(Arc::new(new));
        }
        if is_crd(info) {
            st.registry.apply_crd(&new);
        }
        let deleting = !meta_str(&new, "deletionTimestamp").is_empty();
        let ns_pending = info.plural == "namespaces"
            && info.group.is_empty()
            && new
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
        if deleting && finalizers(&new).is_empty() && !ns_pending {
            // The DELETED event carries the last stored state (as etcd's delete does); the
            // writer gets its own.
            remove_object(&mut st, &self.tx, info, &key, (*old).clone());
            return Ok(Arc::new(new));
        }
        let (_, stored) = commit(&mut st, &self.tx, &gr, key, new, EventType::Modified)?;
        Ok(stored)
    }

    /// Server-side apply: create the object if absent (once `authorize_create` allows it, as
    /// kube-apiserver's patch handler asks after it built the object), else apply onto it.
    /// Also says whether it created the object.
    pub fn apply(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        (applied, force): (&Value, bool),
        opts: &WriteOptions,
        authorize_create: impl FnOnce() -> Result<()>,
    ) -> Result<(Arc<Value>, bool)> {
        let body_name = meta_str(applied, "name");
        if !body_name.is_empty() && body_name != name {
            return Err(Error::BadRequest(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let w = writer(info, opts);
        let mut opts = opts.clone();
        opts.applied = true;
        match self.get(info, ns, name) {
            Ok(_) => self
                .modify(info, ns, name, &opts, |old| {
                    patch::apply(Some(old), applied, &w, force)
                })
                .map(|stored| (stored, false)),
            Err(Error::NotFound(_)) if opts.subresource.is_empty() => {
                let mut obj = patch::apply(None, applied, &w, force)?;
                meta::metadata_mut(&mut obj).insert("name".into(), Value::String(name.to_owned()));
                authorize_create()?;
                self.create(info, ns, obj, &opts)
                    .map(|stored| (stored, true))
            }
            Err(e) => Err(e),
        }
    }
}

fn writer<'a>(info: &'a ResourceInfo, opts: &'a WriteOptions) -> Writer<'a> {
    Writer {
        manager: &opts.manager,
        api_version: info.api_version(),
        subresource: &opts.subresource,
        lists: if info.custom {
            crate::fields::Lists::Schema(info.schema.as_ref())
        } else {
            crate::fields::Lists::Builtin
        },
    }
}

fn crd_name(obj: &Value) -> Option<String> {
    let spec = obj.get("spec")?;
    Some(format!(
        "{}.{}",
        spec.get("names")?.get("plural")?.as_str()?,
        spec.get("group")?.as_str()?
    ))
}

fn check_namespace_writable(st: &State, info: &ResourceInfo, name: &str, ns: &str) -> Result<()> {
    let nsobj = st
        .objects
        .get(&namespaces_gr())
        .and_then(|m| m.get("", ns))
        .ok_or_else(|| Error::NotFound(format!("namespaces \"{ns}\" not found")))?;
    if !meta_str(nsobj, "deletionTimestamp").is_empty() {
        return Err(Error::Forbidden(format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            info.qualified()
        )));
    }
    Ok(())
}

/// 400 unless the request's body is a JSON object.
fn an_object(body: &Value) -> Result<()> {
    if body.is_object() {
        return Ok(());
    }
    Err(Error::BadRequest(
        "the body of the request was not an object".into(),
    ))
}

fn prepare_update(
    info: &ResourceInfo,
    old: &Value,
    mut new: Value,
    opts: &WriteOptions,
) -> Result<Value> {
    an_object(&new)?;
    let want = meta_str(&new, "resourceVersion");
    if !want.is_empty() && want != meta_str(old, "resourceVersion") {
        return Err(conflict(info, meta_str(old, "name")));
    }
    if opts.subresource == "status" {
        // Taken from the request, which is dropped for a copy of the stored object.
        let status = new.as_object_mut().and_then(|m| m.remove("status"));
        let managed = new
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove("managedFields"));
        new = old.clone();
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        if opts.applied
            && let Some(mf) = managed
        {
            meta::metadata_mut(&mut new).insert("managedFields".into(), mf);
        }
    } else if info.status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    if let Some(root) = new.as_object_mut() {
        root.insert("apiVersion".into(), Value::String(info.api_version()));
        root.insert("kind".into(), Value::String(info.kind.clone()));
    }
    let old_fins = finalizers(old);
    let deleting = !meta_str(old, "deletionTimestamp").is_empty();
    let added: Vec<String> = finalizers(&new)
        .into_iter()
        .filter(|f| !old_fins.contains(f))
        .collect();
    validate_labels(info, meta_str(old, "name"), &new)?;
    if deleting && !added.is_empty() {
        let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
        return Err(Error::Invalid(format!(
            "{} \"{}\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            qualified_kind(info),
            meta_str(old, "name"),
            quoted.join(", ")
        )));
    }
    {
        let old_md = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let md = meta::metadata_mut(&mut new);
        for k in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ] {
            match old_md.get(k) {
                Some(v) => md.insert(k.into(), v.clone()),
                None => md.remove(k),
            };
        }
        md.remove("selfLink");
    }
    opts.decode(info, &mut new)?;
    defaults::apply(info, &mut new);
    defaults::prepare_update(info, old, &mut new);
    crate::structural::validate(info, &new)?;
    crate::validation::builtin(info, Some(old), &new)?;
    defaults::keep_allocated(info, old, &mut new).map_err(Error::Invalid)?;
    if info.generation && spec_differs(old, &new) {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(0);
        new["metadata"]["generation"] = json!(g + 1);
    }
    if is_crd(info) {
        new["status"] = crd_status_after(old.get("status"), &new);
    }
    meta::drop_empty_metadata(&mut new);
    if !opts.applied {
        patch::record_update(Some(old), &mut new, &writer(info, opts));
    }
    Ok(new)
}
