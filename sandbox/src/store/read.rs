//! Reading the store: gets, lists (paged, selected) and watches (from history or now).

use super::*;

impl Store {
    /// Get one object.
    pub fn get(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Arc<Value>> {
        self.lock().stored(info, ns, name)
    }

    /// List objects of a resource, in one namespace or all (`ns = None`).
    pub fn list(&self, info: &ResourceInfo, ns: Option<&str>, q: &ListQuery) -> Result<ListResult> {
        let keys = paging::Keys {
            namespace: ns,
            namespaced: info.namespaced,
        };
        let (start, at) = match &q.continue_token {
            Some(t) => {
                let token = keys.decode(t)?;
                (Some(token.after), token.rv)
            }
            None => (None, q.at),
        };
        let st = self.lock();
        let gr = info.group_resource();
        let snapshot = match at {
            Some(rv) => st
                .as_of(&gr, rv)
                .map_err(|too_old| match (&start, too_old) {
                    (Some(after), true) => Error::ContinueExpired {
                        token: keys.encode(-1, after),
                    },
                    (None, true) => Error::Expired(
                        "The resourceVersion for the provided list is too old.".into(),
                    ),
                    (_, false) => Error::Storage(
                        "etcdserver: mvcc: required revision is a future revision".into(),
                    ),
                })?,
            None => None,
        };
        let listed_at = at.unwrap_or(st.rv);
        let mut items = Vec::new();
        let mut next = None;
        let mut remaining = None;
        if let Some(objs) = snapshot.as_ref().or_else(|| st.objects.get(&gr)) {
            use std::ops::Bound::{Excluded, Included, Unbounded};
            let lower = match (&start, ns) {
                (Some(k), _) => Excluded(k.clone()),
                (None, Some(n)) => Included((n.to_owned(), String::new())),
                (None, None) => Unbounded,
            };
            let mut iter = objs
                .range((lower, Unbounded))
                .take_while(|((ons, _), _)| ns.is_none_or(|n| n == ons))
                .filter(|(_, o)| {
                    q.fields
                        .pinned_name()
                        .is_none_or(|n| meta_str(o, "name") == n)
                        && q.labels.matches(o)
                        && q.fields.matches(o)
                });
            for (key, obj) in iter.by_ref() {
                items.push(obj.clone());
                if q.limit > 0 && items.len() == q.limit {
                    next = Some(key.clone());
                    break;
                }
            }
            if next.is_some() {
                let rest = iter.count();
                if rest == 0 {
                    next = None;
                } else if q.labels.is_empty() && q.fields.is_empty() {
                    // kube-apiserver counts what remains only for unfiltered lists.
                    remaining = Some(rest);
                }
            }
        }
        Ok(ListResult {
            items,
            resource_version: listed_at,
            continue_token: next.map(|key| keys.encode(listed_at as i64, &key)),
            remaining,
        })
    }

    /// Start a watch: returns the events to replay and a receiver of later ones, with no gap.
    pub fn watch(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        from: WatchFrom,
    ) -> Result<WatchStart> {
        let st = self.lock();
        let gr = info.group_resource();
        let rx = self.tx.subscribe();
        let in_ns = |e: &Event| ns.is_none_or(|n| n == e.namespace);
        let replay = match from {
            WatchFrom::Now => st
                .objects
                .get(&gr)
                .map(|m| {
                    m.iter()
                        .filter(|((ons, _), _)| ns.is_none_or(|n| n == ons))
                        .map(|((ons, _), o)| {
                            Arc::new(Event {
                                rv: st.rv,
                                kind: EventType::Added,
                                gr: gr.clone(),
                                namespace: ons.clone(),
                                object: o.clone(),
                                previous: None,
                                line: OnceLock::new(),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            WatchFrom::After(rv) => {
                let oldest = st.history.front().map(|e| e.rv).unwrap_or(st.rv + 1);
                if rv + 1 < oldest && rv < st.rv {
                    return Err(Error::Expired(format!(
                        "too old resource version: {rv} ({})",
                        oldest.saturating_sub(1)
                    )));
                }
                let start = st.history.partition_point(|e| e.rv <= rv);
                st.history
                    .range(start..)
                    .filter(|e| e.gr == gr && in_ns(e))
                    .cloned()
                    .collect()
            }
        };
        Ok((replay, rx, st.rv))
    }

    /// Objects of every resource in a namespace (namespace controller).
    pub fn namespace_contents(&self, ns: &str) -> Vec<(Arc<ResourceInfo>, String)> {
        let st = self.lock();
        let mut out = Vec::new();
        for info in st.registry.all() {
            if !info.namespaced
                || out.iter().any(|(i, _): &(Arc<ResourceInfo>, String)| {
                    i.group_resource() == info.group_resource()
                })
            {
                continue;
            }
            if let Some(objs) = st.objects.get(&info.group_resource()) {
                let range = objs.range((ns.to_owned(), String::new())..);
                for ((ons, name), _) in range {
                    if ons != ns {
                        break;
                    }
                    out.push((info.clone(), name.clone()));
                }
            }
        }
        out
    }

    /// Every object of every resource, with its resource (garbage collector scans).
    pub fn all_objects(&self) -> Vec<(Arc<ResourceInfo>, Arc<Value>)> {
        let st = self.lock();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for info in st.registry.all() {
            if !seen.insert(info.group_resource()) {
                continue;
            }
            if let Some(objs) = st.objects.get(&info.group_resource()) {
                out.extend(objs.values().map(|o| (info.clone(), o.clone())));
            }
        }
        out
    }
}
