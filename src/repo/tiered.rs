//! The local store in front of the remote tier (`remote`): what the
//! pipeline sees as one [`Storage`] when `remote_storage` is set.
//!
//! Reads go local first, then remote; a remote hit is copied into the local
//! store, so the next build on this machine reads it locally. A unit's
//! fragment keys are asked for together ([`Storage::prefetch`]): one round
//! trip, and what the server holds lands in the local store in one pack
//! write. Writes go to both; the remote's are queued for its background
//! writer. Removing, listing and eviction are local only (the server's
//! own memory policy evicts there).

use std::collections::HashSet;
use std::sync::Mutex;

use super::remote::Remote;
use super::storage::{Entry, FragmentDigest, Lookup, Storage, StoreError};
use super::store::Store;

pub struct Tiered<'a> {
    pub local: &'a Store,
    pub remote: &'a Remote,
    /// Keys the remote was asked for and did not have (not asked again).
    absent: Mutex<HashSet<FragmentDigest>>,
}

impl<'a> Tiered<'a> {
    pub fn new(local: &'a Store, remote: &'a Remote) -> Tiered<'a> {
        Tiered {
            local,
            remote,
            absent: Mutex::new(HashSet::new()),
        }
    }

    fn absent(&self) -> std::sync::MutexGuard<'_, HashSet<FragmentDigest>> {
        self.absent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the remote for `keys`; copies the hits into the local store.
    fn fetch(&self, keys: &[FragmentDigest]) -> Vec<Option<Entry>> {
        let found = self.remote.get_many(keys);
        let mut hits = Vec::new();
        let mut absent = self.absent();
        for (key, entry) in keys.iter().zip(&found) {
            match entry {
                Some(e) => hits.push((*key, e.clone())),
                None => {
                    absent.insert(*key);
                }
            }
        }
        drop(absent);
        if !hits.is_empty() {
            // A failed copy costs a remote read next time, nothing else.
            let _ = self.local.put_many(&hits);
        }
        found
    }
}

impl Storage for Tiered<'_> {
    fn get(&self, key: &FragmentDigest) -> Result<Lookup, StoreError> {
        let local = self.local.get(key);
        if let Ok(Lookup::Hit(_)) = local {
            return local;
        }
        if !self.remote.is_on() || self.absent().contains(key) {
            return local;
        }
        match self.fetch(std::slice::from_ref(key)).pop().flatten() {
            Some(entry) => Ok(Lookup::Hit(entry)),
            None => local,
        }
    }

    fn get_local(&self, key: &FragmentDigest) -> Result<Lookup, StoreError> {
        self.local.get(key)
    }

    fn prefetch(&self, keys: &[FragmentDigest]) {
        if !self.remote.is_on() {
            return;
        }
        let wanted: Vec<FragmentDigest> = {
            let absent = self.absent();
            let mut seen = HashSet::new();
            keys.iter()
                .filter(|k| !absent.contains(k) && seen.insert(**k) && !self.local.contains(k))
                .copied()
                .collect()
        };
        if !wanted.is_empty() {
            self.fetch(&wanted);
        }
    }

    fn put(&self, key: &FragmentDigest, entry: &Entry) -> Result<u64, StoreError> {
        let written = self.local.put(key, entry);
        self.remote.queue(vec![(*key, entry.clone())]);
        written
    }

    fn put_many(&self, items: &[(FragmentDigest, Entry)]) -> Result<u64, StoreError> {
        let written = self.local.put_many(items);
        self.remote.queue(items.to_vec());
        written
    }

    fn remove(&self, key: &FragmentDigest) -> Result<(), StoreError> {
        self.local.remove(key)
    }
}
