//! Property test: random writes with watchers attached. RVs strictly increase, and every
//! watcher sees every event exactly once, in order, matching a replay from the start.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use serde_json::json;
use std::sync::Arc;
use sveltos_events_sandbox::Store;
use sveltos_events_sandbox::store::{DeleteOptions, WatchFrom, WriteOptions};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[tokio::test]
async fn random_writes_are_seen_by_every_watcher_once_in_order() {
    for seed in [1u64, 7, 42, 1234, 99_991] {
        let store = Arc::new(Store::new());
        let info = store.resolve("", "v1", "configmaps").unwrap();
        let start_rv = store.resource_version();
        let mut watchers: Vec<_> = (0..3)
            .map(|_| {
                store
                    .watch(&info, None, WatchFrom::After(start_rv))
                    .unwrap()
                    .1
            })
            .collect();
        let mut rng = Rng(seed);
        let opts = WriteOptions {
            manager: "prop".into(),
            ..WriteOptions::default()
        };
        let mut last_rv = start_rv;
        for _ in 0..500 {
            let name = format!("c{}", rng.next() % 20);
            let ns = if rng.next().is_multiple_of(2) {
                "default"
            } else {
                "kube-system"
            };
            let res = match rng.next() % 4 {
                0 => store.create(&info, ns, json!({"metadata": {"name": name}}), &opts),
                1 => store.modify(&info, ns, &name, &opts, |o| {
                    let mut n = o.clone();
                    n["data"] = json!({"v": rng.next().to_string()});
                    Ok(n)
                }),
                2 => store
                    .delete(&info, ns, &name, &DeleteOptions::default())
                    .map(|_| std::sync::Arc::new(json!({}))),
                _ => store.update(
                    &info,
                    ns,
                    &name,
                    json!({"metadata": {"name": name, "resourceVersion": "1"}}),
                    &opts,
                ),
            };
            if res.is_ok() {
                let rv = store.resource_version();
                assert!(rv >= last_rv, "resourceVersion went backwards");
                last_rv = rv;
            }
        }
        let (replay, _, _) = store
            .watch(&info, None, WatchFrom::After(start_rv))
            .unwrap();
        let expected: Vec<u64> = replay.iter().map(|e| e.rv).collect();
        assert!(
            expected.windows(2).all(|w| w[0] < w[1]),
            "seed {seed}: RVs not strictly increasing"
        );
        assert_eq!(expected.last().copied().unwrap_or(start_rv), last_rv);
        for rx in &mut watchers {
            let mut got = Vec::new();
            while let Ok(ev) = rx.try_recv() {
                if ev.gr == info.group_resource() {
                    got.push(ev.rv);
                }
            }
            assert_eq!(got, expected, "seed {seed}");
        }
    }
}

#[tokio::test]
async fn history_is_bounded_by_bytes_and_older_resumptions_expire() {
    let store = Store::new();
    let info = store.resolve("", "v1", "configmaps").unwrap();
    let opts = WriteOptions {
        manager: "big".into(),
        ..WriteOptions::default()
    };
    let start_rv = store.resource_version();
    // 1 MiB a write: the history cannot keep them all.
    let payload = "x".repeat(1 << 20);
    let writes = sveltos_events_sandbox::store::HISTORY_BYTES / (1 << 20) + 8;
    for i in 0..writes {
        let object = json!({"metadata": {"name": format!("big-{i}")}, "data": {"v": payload}});
        store.create(&info, "default", object, &opts).unwrap();
    }
    let expired = store.watch(&info, None, WatchFrom::After(start_rv));
    assert!(
        matches!(
            expired,
            Err(sveltos_events_sandbox::error::Error::Expired(_))
        ),
        "resuming before the kept history must answer 410 Gone"
    );
    // The recent past is still there, and what is kept fits the budget.
    let recent = store.resource_version() - 4;
    let (replay, _, _) = store.watch(&info, None, WatchFrom::After(recent)).unwrap();
    assert_eq!(replay.len(), 4);
}

/// Every page of a list read at a past resourceVersion, by `Exact` or by continue token.
fn list_all_at(
    store: &Store,
    info: &sveltos_events_sandbox::registry::ResourceInfo,
    ns: Option<&str>,
    rv: u64,
    limit: usize,
) -> Vec<(String, String, String)> {
    use sveltos_events_sandbox::store::ListQuery;
    let mut query = ListQuery {
        limit,
        at: Some(rv),
        ..ListQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = store.list(info, ns, &query).unwrap();
        assert_eq!(
            page.resource_version, rv,
            "every page is read at the first one's version"
        );
        seen.extend(page.items.iter().map(|o| {
            (
                o["metadata"]["namespace"].as_str().unwrap().to_owned(),
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o["data"]["v"].as_str().unwrap_or_default().to_owned(),
            )
        }));
        match page.continue_token {
            Some(token) => {
                query.continue_token = Some(token);
                query.at = None;
            }
            None => return seen,
        }
    }
}

/// Each configmap's value by namespace and name.
type Contents = std::collections::BTreeMap<(String, String), String>;

#[tokio::test]
async fn a_list_at_a_past_version_shows_the_objects_as_they_were_then() {
    use std::collections::BTreeMap;
    let store = Store::new();
    let info = store.resolve("", "v1", "configmaps").unwrap();
    let opts = WriteOptions {
        manager: "prop".into(),
        ..WriteOptions::default()
    };
    let mut rng = Rng(5);
    // What every configmap held after each write: the truth to compare with.
    let mut truth: Contents = BTreeMap::new();
    let mut past: Vec<(u64, Contents)> = Vec::new();
    for i in 0..400 {
        let name = format!("c{}", rng.next() % 30);
        let ns = if rng.next().is_multiple_of(2) {
            "default"
        } else {
            "kube-system"
        };
        let key = (ns.to_owned(), name.clone());
        let value = format!("{i}");
        let done = match rng.next() % 3 {
            0 => store
                .create(
                    &info,
                    ns,
                    json!({"metadata": {"name": name}, "data": {"v": value}}),
                    &opts,
                )
                .is_ok(),
            1 => store
                .modify(&info, ns, &name, &opts, |o| {
                    let mut n = o.clone();
                    n["data"] = json!({"v": value});
                    Ok(n)
                })
                .is_ok(),
            _ => store
                .delete(&info, ns, &name, &DeleteOptions::default())
                .is_ok(),
        };
        if done {
            if store.get(&info, ns, &name).is_ok() {
                truth.insert(key, value);
            } else {
                truth.remove(&key);
            }
            past.push((store.resource_version(), truth.clone()));
        }
    }
    for (rv, then) in past.iter().step_by(7) {
        for limit in [0, 1, 4] {
            let all = list_all_at(&store, &info, None, *rv, limit);
            let expected: Vec<_> = then
                .iter()
                .map(|((ns, name), v)| (ns.clone(), name.clone(), v.clone()))
                .collect();
            assert_eq!(all, expected, "all namespaces at {rv}, pages of {limit}");
            let default = list_all_at(&store, &info, Some("default"), *rv, limit);
            let expected: Vec<_> = expected
                .into_iter()
                .filter(|(ns, _, _)| ns == "default")
                .collect();
            assert_eq!(
                default, expected,
                "namespace default at {rv}, pages of {limit}"
            );
        }
    }
}

#[tokio::test]
async fn a_list_older_than_the_history_is_gone_and_a_continue_goes_on_at_the_latest() {
    use sveltos_events_sandbox::error::Error;
    use sveltos_events_sandbox::store::ListQuery;
    let store = Store::new();
    let info = store.resolve("", "v1", "configmaps").unwrap();
    let opts = WriteOptions {
        manager: "many".into(),
        ..WriteOptions::default()
    };
    for name in ["a", "b", "c"] {
        store
            .create(&info, "default", json!({"metadata": {"name": name}}), &opts)
            .unwrap();
    }
    let first = store
        .list(
            &info,
            Some("default"),
            &ListQuery {
                limit: 1,
                ..ListQuery::default()
            },
        )
        .unwrap();
    let old = first.resource_version;
    // Enough writes that the history no longer reaches back to the first page.
    for i in 0..sveltos_events_sandbox::store::HISTORY + 1 {
        store
            .modify(&info, "default", "c", &opts, |o| {
                let mut n = o.clone();
                n["data"] = json!({"v": i.to_string()});
                Ok(n)
            })
            .unwrap();
    }
    let exact = store.list(
        &info,
        Some("default"),
        &ListQuery {
            at: Some(old),
            ..ListQuery::default()
        },
    );
    assert!(
        matches!(&exact, Err(Error::Expired(m)) if m == "The resourceVersion for the provided list is too old."),
        "{exact:?}"
    );
    let continued = ListQuery {
        continue_token: first.continue_token.clone(),
        ..ListQuery::default()
    };
    let Err(Error::ContinueExpired { token }) = store.list(&info, Some("default"), &continued)
    else {
        panic!("a continue older than the history must be 410 with a token going on");
    };
    let rest = store
        .list(
            &info,
            Some("default"),
            &ListQuery {
                continue_token: Some(token),
                ..ListQuery::default()
            },
        )
        .unwrap();
    let names: Vec<&str> = rest
        .items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b", "c"]);
    assert_eq!(rest.resource_version, store.resource_version());
    // The latest `c`, written by the last of the writes above.
    let last = sveltos_events_sandbox::store::HISTORY.to_string();
    assert_eq!(rest.items[1]["data"]["v"], last.as_str());
}
