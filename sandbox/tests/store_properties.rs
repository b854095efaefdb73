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
                    .map(|_| json!({})),
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
