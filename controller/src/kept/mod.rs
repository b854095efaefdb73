//! Compact records of watched objects: what the controllers read of each, kept instead of the
//! object. A fleet's generated objects number in the hundreds of thousands and repeat the same
//! long label keys and values (trigger, cluster, source), which each decoded object would
//! hold in its own strings and its own B-tree nodes; a record shares them (see [`intern`]).

pub mod config_map;
pub mod profile;
pub mod symbols;

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::sync::Arc;

use kube::api::ObjectMeta;
use kube::runtime::reflector::{Lookup, ObjectRef};

use crate::memo::{Digest, hasher};
pub use symbols::intern;

/// Labels (or annotations), however they are kept: an object's, or a map of them.
pub trait Labelled {
    /// The value of `key`.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labelled for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<T: Labelled> Labelled for Option<T> {
    fn label(&self, key: &str) -> Option<&str> {
        self.as_ref()?.label(key)
    }
}

impl<T: Labelled + ?Sized> Labelled for &T {
    fn label(&self, key: &str) -> Option<&str> {
        (**self).label(key)
    }
}

/// What the controllers read of an object's metadata, however it is kept.
pub trait Meta: Labelled {
    /// Its name (empty if none).
    fn name(&self) -> &str;
    /// Its namespace, if namespaced.
    fn namespace(&self) -> Option<&str>;
    /// Its resourceVersion.
    fn resource_version(&self) -> Option<&str>;
    /// Its generation.
    fn generation(&self) -> Option<i64>;
    /// Its labels, ordered by key.
    fn labels(&self) -> impl Iterator<Item = (&str, &str)>;
    /// Its annotations.
    fn annotations(&self) -> impl Labelled + '_;
}

impl Meta for ObjectMeta {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    fn generation(&self) -> Option<i64> {
        self.generation
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        (self.labels.iter().flatten()).map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn annotations(&self) -> impl Labelled + '_ {
        self.annotations.as_ref()
    }
}

impl Labelled for ObjectMeta {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.label(key)
    }
}

/// `value` as JSON text, shared with every equal text kept: a generated profile's spec and
/// the copies its ClusterSummaries record are one string. Writing the API types as JSON
/// cannot fail; were it to, the empty text would not decode, and whoever reads it back fails
/// (and retries) rather than reading an empty value.
pub fn shared_json(value: &impl serde::Serialize) -> Arc<str> {
    intern(&serde_json::to_string(value).unwrap_or_default())
}

/// An object or a record, and its metadata.
pub trait HasMeta {
    /// How its metadata is kept.
    type Meta: Meta;
    /// Its metadata.
    fn metadata(&self) -> &Self::Meta;
}

impl<K: kube::Resource> HasMeta for K {
    type Meta = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        self.meta()
    }
}

/// A digest of the labels of `meta` (no labels and empty labels are the same).
pub fn labels_digest(meta: &impl Meta) -> Digest {
    let mut hasher = hasher();
    for (key, value) in meta.labels() {
        hasher.write(key.as_bytes());
        hasher.write_u8(0xff);
        hasher.write(value.as_bytes());
        hasher.write_u8(0xff);
    }
    hasher.finish()
}

/// A ConfigMap's data: pairs ordered by key, the keys shared (see [`intern`]), each value its
/// own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Texts(Box<[(Arc<str>, Box<str>)]>);

impl Texts {
    /// The pairs of `map`.
    pub fn new(map: Option<BTreeMap<String, String>>) -> Self {
        let pairs = map.into_iter().flatten();
        Texts(pairs.map(|(k, v)| (intern(&k), v.into())).collect())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let found = self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key)).ok()?;
        Some(self.0[found].1.as_ref())
    }

    /// The pairs, ordered by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))
    }

    /// The pairs as a map of owned strings, as the API types hold them.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }
}

/// Labels or annotations ordered by key, each pair one shared string `key\0value` (a key is
/// a qualified name, which holds no NUL). Generated objects repeat the same pairs (trigger,
/// cluster, source, the source's annotations): a pair is one pointer in each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Labels(Box<[Arc<str>]>);

/// Between a pair's key and value.
const SEPARATOR: char = '\0';

/// A pair's key and value.
fn split(pair: &str) -> (&str, &str) {
    pair.split_once(SEPARATOR).unwrap_or((pair, ""))
}

impl Labels {
    /// The pairs of `map`.
    pub fn new(map: Option<BTreeMap<String, String>>) -> Self {
        let mut pair = String::new();
        let pairs = map.into_iter().flatten().map(|(key, value)| {
            pair.clear();
            pair.push_str(&key);
            pair.push(SEPARATOR);
            pair.push_str(&value);
            intern(&pair)
        });
        Labels(pairs.collect())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let found = self
            .0
            .binary_search_by(|pair| split(pair).0.cmp(key))
            .ok()?;
        Some(split(&self.0[found]).1)
    }

    /// The pairs, ordered by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|pair| split(pair))
    }

    /// The pairs as a map of owned strings, as the API types hold them.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }
}

impl Labelled for Labels {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// An object's uid: the 16 bytes of the UUID the API server assigns (its text would take an
/// allocation of 48 in each record), else the text as given.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Uid {
    Uuid([u8; 16]),
    Text(Box<str>),
}

impl Uid {
    fn new(text: String) -> Self {
        match uuid_bytes(&text) {
            Some(bytes) => Uid::Uuid(bytes),
            None => Uid::Text(text.into()),
        }
    }

    fn text(&self) -> String {
        match self {
            Uid::Uuid(bytes) => {
                let hex = data_encoding::HEXLOWER.encode(bytes);
                let parts = [
                    &hex[..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..],
                ];
                parts.join("-")
            }
            Uid::Text(text) => text.to_string(),
        }
    }
}

/// The bytes of `text` when it is a UUID as the API server writes one (lowercase hex in
/// groups of 8-4-4-4-12), so that it reads back the same.
fn uuid_bytes(text: &str) -> Option<[u8; 16]> {
    let groups: Vec<&str> = text.split('-').collect();
    let lengths = groups.iter().map(|group| group.len());
    if !lengths.eq([8, 4, 4, 4, 12]) {
        return None;
    }
    let hex = groups.concat();
    let bytes = data_encoding::HEXLOWER.decode(hex.as_bytes()).ok()?;
    bytes.try_into().ok()
}

/// The metadata a record keeps: place, versions, labels and annotations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptMeta {
    name: Box<str>,
    namespace: Option<Arc<str>>,
    resource_version: Option<Box<str>>,
    uid: Option<Uid>,
    generation: Option<i64>,
    deleting: bool,
    labels: Labels,
    annotations: Labels,
}

impl From<ObjectMeta> for KeptMeta {
    fn from(meta: ObjectMeta) -> Self {
        KeptMeta {
            name: meta.name.unwrap_or_default().into(),
            namespace: meta.namespace.as_deref().map(intern),
            resource_version: meta.resource_version.map(Into::into),
            uid: meta.uid.map(Uid::new),
            generation: meta.generation,
            deleting: meta.deletion_timestamp.is_some(),
            labels: Labels::new(meta.labels),
            annotations: Labels::new(meta.annotations),
        }
    }
}

impl KeptMeta {
    /// Its uid.
    pub fn uid(&self) -> Option<String> {
        self.uid.as_ref().map(Uid::text)
    }

    /// Its annotations.
    pub fn annotations(&self) -> &Labels {
        &self.annotations
    }

    /// Whether it is being deleted (it has a deletionTimestamp).
    pub fn deleting(&self) -> bool {
        self.deleting
    }

    /// The metadata as the API types hold it (no managedFields, owners or timestamps: a
    /// record does not keep them; see [`KeptMeta::deleting`]).
    pub fn to_object_meta(&self) -> ObjectMeta {
        let map = |pairs: BTreeMap<String, String>| (!pairs.is_empty()).then_some(pairs);
        ObjectMeta {
            name: Some(self.name.to_string()),
            namespace: self.namespace.as_deref().map(str::to_owned),
            resource_version: self.resource_version.as_deref().map(str::to_owned),
            uid: self.uid(),
            generation: self.generation,
            labels: map(self.labels.to_map()),
            annotations: map(self.annotations.to_map()),
            ..ObjectMeta::default()
        }
    }
}

impl Meta for KeptMeta {
    fn name(&self) -> &str {
        &self.name
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    fn generation(&self) -> Option<i64> {
        self.generation
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels.iter()
    }

    fn annotations(&self) -> impl Labelled + '_ {
        &self.annotations
    }
}

impl Labelled for KeptMeta {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }
}

/// The key of a record in a reflector store: its place. kube's own key copies the record's
/// resourceVersion and uid in too, which no one reads of a store's keys (and a fleet's stores
/// hold hundreds of thousands).
pub fn store_key<K: Lookup<DynamicType = ()>>(name: &str, namespace: Option<&str>) -> ObjectRef<K> {
    let key = ObjectRef::new(name);
    match namespace {
        Some(namespace) => key.within(namespace),
        None => key,
    }
}

/// Implements kube's `Lookup` for a record type with a `metadata: KeptMeta` field, so that a
/// reflector store can keep it.
macro_rules! lookup {
    ($record:ty, $kind:literal, $group:literal, $version:literal, $plural:literal) => {
        impl $crate::kept::HasMeta for $record {
            type Meta = $crate::kept::KeptMeta;

            fn metadata(&self) -> &$crate::kept::KeptMeta {
                &self.metadata
            }
        }

        impl kube::runtime::reflector::Lookup for $record {
            type DynamicType = ();

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                $kind.into()
            }

            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                $group.into()
            }

            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                $version.into()
            }

            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                $plural.into()
            }

            fn name(&self) -> Option<std::borrow::Cow<'_, str>> {
                Some($crate::kept::Meta::name(&self.metadata).into())
            }

            fn namespace(&self) -> Option<std::borrow::Cow<'_, str>> {
                $crate::kept::Meta::namespace(&self.metadata).map(Into::into)
            }

            fn resource_version(&self) -> Option<std::borrow::Cow<'_, str>> {
                $crate::kept::Meta::resource_version(&self.metadata).map(Into::into)
            }

            fn uid(&self) -> Option<std::borrow::Cow<'_, str>> {
                self.metadata.uid().map(Into::into)
            }

            fn to_object_ref(&self, _: ()) -> kube::runtime::reflector::ObjectRef<Self> {
                let meta = &self.metadata;
                let (name, namespace) = ($crate::kept::Meta::name(meta), meta.namespace.as_deref());
                $crate::kept::store_key(name, namespace)
            }
        }
    };
}
use lookup;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: serde_json::Value) -> ObjectMeta {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn kept_metadata_reads_as_the_objects_did() {
        let object = meta(json!({
            "name": "a", "namespace": "projectsveltos", "resourceVersion": "7", "uid": "u",
            "generation": 3, "labels": {"z": "1", "a": "2", "m": "3"},
            "annotations": {"note": "long text"},
            "managedFields": [{"manager": "m"}]
        }));
        let kept = KeptMeta::from(object.clone());
        assert_eq!(kept.name(), "a");
        assert_eq!(kept.namespace(), Some("projectsveltos"));
        assert_eq!(kept.resource_version(), Some("7"));
        assert_eq!(kept.generation(), Some(3));
        assert_eq!(kept.uid().as_deref(), Some("u"));
        for key in ["a", "m", "z", "b"] {
            assert_eq!(kept.label(key), object.label(key), "{key}");
        }
        assert!(kept.labels().eq(object.labels()));
        assert_eq!(kept.annotations().label("note"), Some("long text"));
        assert_eq!(Meta::annotations(&kept).label("other"), None);
        assert_eq!(labels_digest(&kept), labels_digest(&object));
        let back = kept.to_object_meta();
        assert_eq!(back.labels, object.labels);
        assert_eq!(back.annotations, object.annotations);
        assert_eq!(back.managed_fields, None);
    }

    #[test]
    fn a_uid_reads_back_as_given() {
        let kept = |uid: &str| KeptMeta::from(meta(json!({"name": "a", "uid": uid}))).uid();
        for uid in [
            "a2454b68-ac4e-4380-b771-4da9403d10eb",
            "A2454B68-AC4E-4380-B771-4DA9403D10EB",
            "a2454b68ac4e4380b7714da9403d10eb",
            "a2454b68-ac4e-4380-b771-4da9403d10e",
            "g2454b68-ac4e-4380-b771-4da9403d10eb",
            "",
        ] {
            assert_eq!(kept(uid).as_deref(), Some(uid));
        }
        let record = KeptMeta::from(meta(json!({"uid": "a2454b68-ac4e-4380-b771-4da9403d10eb"})));
        assert!(matches!(record.uid, Some(Uid::Uuid(_))));
        assert_eq!(KeptMeta::from(meta(json!({"name": "a"}))).uid(), None);
    }

    #[test]
    fn a_labels_digest_tells_keys_from_values_and_no_labels_from_empty_ones_not() {
        let digest = |labels: serde_json::Value| labels_digest(&meta(json!({"labels": labels})));
        assert_eq!(digest(json!({})), labels_digest(&ObjectMeta::default()));
        assert_ne!(digest(json!({"ab": "c"})), digest(json!({"a": "bc"})));
        assert_ne!(digest(json!({"a": "b"})), digest(json!({"a": "c"})));
    }

    #[test]
    fn equal_values_kept_as_json_are_one_string() {
        let spec = |tier: u32| json!({"tier": tier, "policyRefs": [{"name": "a"}]});
        let (a, b) = (shared_json(&spec(100)), shared_json(&spec(100)));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&a).unwrap(),
            spec(100)
        );
        assert!(!Arc::ptr_eq(&a, &shared_json(&spec(200))));
    }

    #[test]
    fn records_share_labels_and_annotations() {
        let pairs = json!({"eventtrigger.lib.projectsveltos.io/eventtriggername": "t"});
        let kept = |name| {
            KeptMeta::from(meta(
                json!({"name": name, "labels": pairs, "annotations": pairs}),
            ))
        };
        let (one, two) = (kept("1"), kept("2"));
        assert!(Arc::ptr_eq(&one.labels.0[0], &two.labels.0[0]));
        assert!(Arc::ptr_eq(&one.annotations.0[0], &two.annotations.0[0]));
    }

    #[test]
    fn a_label_value_may_hold_anything_and_an_empty_one_is_still_a_label() {
        let labels = json!({"a": "", "b": "x=y\u{0}z", "c.io/d": "v"});
        let kept = KeptMeta::from(meta(json!({"name": "1", "labels": labels})));
        assert_eq!(kept.label("a"), Some(""));
        assert_eq!(kept.label("b"), Some("x=y\u{0}z"));
        assert_eq!(kept.label("c.io/d"), Some("v"));
        assert_eq!(kept.label("c"), None);
        assert_eq!(
            kept.to_object_meta().labels.unwrap(),
            serde_json::from_value(labels).unwrap()
        );
    }
}
