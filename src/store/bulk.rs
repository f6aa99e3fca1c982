//! The bulk path of [`Store::commit`]: writing a commit's new records,
//! vectors and lookups as tables through fjall's ingestion, and removing
//! what an unfinished one left (see the `next_id` rule in the store's
//! module docs). Must not: commit anything visible — only the batch that
//! advances `next_id` does that.

use fjall::{Keyspace, PersistMode};

use super::{be, embed_key, read_u64, Store, StoreError, NEXT_ID};

impl Store {
    /// Write `items` (sorted by key, keys not yet in use) into `ks` as
    /// new tables, fsynced before this returns.
    pub(super) fn ingest(&self, ks: &Keyspace, items: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), StoreError> {
        let mut ing = ks.start_ingestion()?;
        for (k, v) in items {
            ing.write(k, v)?;
        }
        ing.finish()?;
        Ok(())
    }

    /// Delete the ingested records of a bulk commit that did not finish
    /// (ids at or above `next_id`; see the module docs).
    pub(super) fn drop_unfinished_commit(&self) -> Result<(), StoreError> {
        let next = self.meta_u64(NEXT_ID)?.max(1);
        let mut keys: Vec<_> = self
            .chunks
            .range(be(next)..)
            .map(|g| g.key())
            .collect::<Result<_, _>>()?;
        let records = keys.len();
        for gen in self.generations_present()? {
            for g in self.embeds.range(embed_key(gen, next)..=embed_key(gen, u64::MAX)) {
                keys.push(g.key()?);
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        let vectors = keys.len() - records;
        let mut b = self.db.batch().durability(Some(PersistMode::SyncAll));
        for (i, k) in keys.into_iter().enumerate() {
            if i < records {
                b.remove(&self.chunks, k);
            } else {
                b.remove(&self.embeds, k);
            }
        }
        // Lookups are ingested last, so orphans among them imply orphan
        // records: only then is the whole keyspace worth a scan.
        let mut lookups = 0;
        for g in self.by_key.iter() {
            let k = g.key()?;
            let id = k.len().checked_sub(8).and_then(|at| k.get(at..)).and_then(read_u64);
            if id.is_some_and(|id| id >= next) {
                b.remove(&self.by_key, k);
                lookups += 1;
            }
        }
        b.commit()?;
        tracing::warn!(
            records,
            vectors,
            lookups,
            "removed the records of a bulk commit that did not finish"
        );
        Ok(())
    }
}
