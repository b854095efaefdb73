//! What a list of one kind in one cluster found, by owner. After a start no pair of profile
//! and summary has a record of what it deployed, so each one's first cleanup looks through
//! its kinds for stale objects: one list per kind and cluster serves them all for a while,
//! instead of one list per pair (1,000 profiles in a cluster read a million objects).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::deploy::Key;
use super::metadata::{Owner, owning_pair};
use super::targets::Target;

/// How long a listing answers for its kind and cluster. The deployer's own writes are added
/// to it as they happen; another writer's object of the same owner made meanwhile is not seen
/// (as with any list, only for longer).
pub const LISTING_TTL: Duration = Duration::from_secs(10);

/// The profile and summary annotation an object's ownership names.
pub type Pair = (String, String);

/// A target and a kind (`Kind.version.group`).
type Place = (Target, String);

/// Listings by target and kind, and how many writes the deployer made in each.
#[derive(Debug, Default)]
pub struct Listings {
    listings: BTreeMap<Place, Listing>,
    writes: BTreeMap<Place, u64>,
}

/// What one list found.
#[derive(Debug)]
struct Listing {
    at: Instant,
    owners: BTreeMap<Pair, BTreeSet<Key>>,
}

impl Listing {
    fn owned(&self, owner: &Owner) -> BTreeSet<Key> {
        let mut owned = BTreeSet::new();
        for (profile, summary) in owner.pairs() {
            if let Some(keys) = self.owners.get(&(profile.to_owned(), summary.to_owned())) {
                owned.extend(keys.iter().cloned());
            }
        }
        owned
    }
}

/// The pair an object's annotations name as its owner, when a ClusterProfile owns it.
pub fn owner_of(metadata: &ObjectMeta) -> Option<Pair> {
    let annotations = metadata.annotations.as_ref()?;
    owning_pair(|key| annotations.get(key).map(String::as_str))
        .map(|(profile, summary)| (profile.to_owned(), summary.to_owned()))
}

impl Listings {
    /// The objects `owner` owns of `kind` in `target` as a listing younger than
    /// [`LISTING_TTL`] at `now` found them; `None` without such a listing.
    pub fn owned(
        &self,
        (target, kind): (&Target, &str),
        owner: &Owner,
        now: Instant,
    ) -> Option<BTreeSet<Key>> {
        let listing = self.listings.get(&(target.clone(), kind.to_owned()))?;
        (now.saturating_duration_since(listing.at) < LISTING_TTL).then(|| listing.owned(owner))
    }

    /// How many writes the deployer made of `kind` in `target`: read before a list, it tells
    /// [`Listings::keep`] whether one may have landed after the list's snapshot.
    pub fn writes(&self, (target, kind): (&Target, &str)) -> u64 {
        let place = (target.clone(), kind.to_owned());
        self.writes.get(&place).copied().unwrap_or_default()
    }

    /// What a list of `kind` in `target`, sent at `at` after `writes` writes there, found:
    /// each object's key and the pair that owns it. Returns what `owner` owns; keeps the
    /// listing for the pairs after it unless the deployer wrote there while it was on its
    /// way (that write may be missing from it).
    pub fn keep(
        &mut self,
        place: (Target, String),
        found: impl IntoIterator<Item = (Key, Option<Pair>)>,
        (at, writes): (Instant, u64),
        owner: &Owner,
    ) -> BTreeSet<Key> {
        let mut owners: BTreeMap<Pair, BTreeSet<Key>> = BTreeMap::new();
        for (key, pair) in found {
            if let Some(pair) = pair {
                owners.entry(pair).or_default().insert(key);
            }
        }
        let listing = Listing { at, owners };
        let owned = listing.owned(owner);
        self.forget_older(at);
        if self.writes((&place.0, &place.1)) == writes {
            self.listings.insert(place, listing);
        }
        owned
    }

    /// Notes `key`, just written for `owner`: counted, and added to the listing of its target
    /// and kind if there is one.
    pub fn written(&mut self, key: &Key, owner: &Owner) {
        // Writes go on after a start's cleanups are done: they let go of the listings then.
        self.forget_older(Instant::now());
        let place = (key.0.clone(), key.1.clone());
        if let Some(listing) = self.listings.get_mut(&place) {
            listing
                .owners
                .entry((owner.profile.clone(), owner.summary.clone()))
                .or_default()
                .insert(key.clone());
        }
        *self.writes.entry(place).or_default() += 1;
    }

    /// Lets go of the listings too old to answer at `now`.
    fn forget_older(&mut self, now: Instant) {
        if !self.listings.is_empty() {
            self.listings
                .retain(|_, listing| now.saturating_duration_since(listing.at) < LISTING_TTL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(profile: &str, summary: &str) -> Owner {
        Owner {
            profile: profile.to_owned(),
            tier: 100,
            summary: summary.to_owned(),
            legacy_summary: format!("sveltos-{summary}"),
            deployment_type: "Remote".to_owned(),
            extra_labels: BTreeMap::new(),
            extra_annotations: BTreeMap::new(),
        }
    }

    fn key(name: &str) -> Key {
        (
            Target::Local,
            "NetworkPolicy.v1.networking.k8s.io".to_owned(),
            "default".to_owned(),
            name.to_owned(),
        )
    }

    fn pair(profile: &str, summary: &str) -> Option<Pair> {
        Some((profile.to_owned(), summary.to_owned()))
    }

    #[test]
    fn one_listing_answers_for_every_owner_until_it_is_too_old() {
        let place = (Target::Local, key("x").1);
        let at = Instant::now();
        let mut listings = Listings::default();
        let found = [
            (key("a"), pair("p", "s")),
            (key("b"), pair("p", "sveltos-s")),
            (key("c"), pair("q", "s")),
            (key("d"), None),
        ];
        let owned = listings.keep(place.clone(), found, (at, 0), &owner("q", "s"));
        assert_eq!(owned, BTreeSet::from([key("c")]));
        let look = |listings: &Listings, owner: &Owner, now| {
            listings.owned((&place.0, &place.1), owner, now)
        };
        // An object under the legacy summary name is the owner's too.
        assert_eq!(
            look(&listings, &owner("p", "s"), at),
            Some(BTreeSet::from([key("a"), key("b")]))
        );
        assert_eq!(look(&listings, &owner("r", "s"), at), Some(BTreeSet::new()));
        let other_kind = listings.owned((&Target::Local, "Service.v1."), &owner("p", "s"), at);
        assert_eq!(other_kind, None);
        assert_eq!(look(&listings, &owner("p", "s"), at + LISTING_TTL), None);
    }

    #[test]
    fn the_deployers_own_writes_join_the_listing() {
        let place = (Target::Local, key("x").1);
        let at = Instant::now();
        let mut listings = Listings::default();
        // No listing of the kind: nothing is kept.
        listings.written(&key("early"), &owner("p", "s"));
        let writes = listings.writes((&place.0, &place.1));
        assert_eq!(writes, 1);
        let found = [(key("a"), pair("q", "s"))];
        listings.keep(place.clone(), found.clone(), (at, writes), &owner("p", "s"));
        listings.written(&key("new"), &owner("p", "s"));
        assert_eq!(
            listings.owned((&place.0, &place.1), &owner("p", "s"), at),
            Some(BTreeSet::from([key("new")]))
        );

        // A write while a list was on its way may be missing from it: that list answers for
        // the pair that made it alone.
        let mut listings = Listings::default();
        let writes = listings.writes((&place.0, &place.1));
        listings.written(&key("meanwhile"), &owner("p", "s"));
        let owned = listings.keep(place.clone(), found, (at, writes), &owner("q", "s"));
        assert_eq!(owned, BTreeSet::from([key("a")]));
        assert_eq!(
            listings.owned((&place.0, &place.1), &owner("q", "s"), at),
            None
        );
    }
}
