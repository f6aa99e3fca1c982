//! The bulk path of [`Store::commit`]: writing a commit's new records,
//! vectors, lookups and map entries as tables through fjall's ingestion,
//! and undoing what an unfinished one left (see the `next_id` rule in the
//! store's module docs). Must not: make a record visible — only the batch
//! that advances `next_id` does that. (Map entries are visible once
//! ingested; that is why an unfinished commit sends both maps back to a
//! rebuild from the committed chunks.)

use fjall::{Keyspace, PersistMode};

use super::{be, embed_key, read_u64, Store, StoreError, NEXT_ID};

impl Store {
    /// Write `items` (sorted by key, keys not yet in use) into `ks` as
    /// new tables, fsynced before this returns.
    pub(super) fn ingest(&self, ks: &Keyspace, items: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), StoreError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut ing = ks.start_ingestion()?;
        for (k, v) in items {
            ing.write(k, v)?;
        }
        ing.finish()?;
        Ok(())
    }

    /// Undo a bulk commit that failed in this process: what an open would
    /// do after a crash at the same point.
    pub(super) fn repair_unfinished_commit(&self) -> Result<(), StoreError> {
        self.drop_unfinished_commit()?;
        self.ensure_files_map()?;
        self.ensure_docs_map()?;
        self.ensure_log()
    }

    /// Delete the ingested records of a bulk commit that did not finish
    /// (ids at or above `next_id`; see the module docs), and unmark both
    /// maps so that they are rebuilt from the committed chunks: that
    /// commit's ingested entries overwrote theirs in place.
    pub(super) fn drop_unfinished_commit(&self) -> Result<(), StoreError> {
        let h = self.h()?;
        let next = self.meta_u64(NEXT_ID)?.max(1);
        let mut keys: Vec<_> = h.chunks.range(be(next)..).map(|g| g.key()).collect::<Result<_, _>>()?;
        let records = keys.len();
        for gen in self.generations_present()? {
            for g in h.embeds.range(embed_key(gen, next)..=embed_key(gen, u64::MAX)) {
                keys.push(g.key()?);
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        let vectors = keys.len() - records;
        let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
        for (i, k) in keys.into_iter().enumerate() {
            if i < records {
                b.remove(&h.chunks, k);
            } else {
                b.remove(&h.embeds, k);
            }
        }
        // Lookups are ingested last, so orphans among them imply orphan
        // records: only then is the whole keyspace worth a scan.
        let mut lookups = 0;
        for g in h.by_key.iter() {
            let k = g.key()?;
            let id = k.len().checked_sub(8).and_then(|at| k.get(at..)).and_then(read_u64);
            if id.is_some_and(|id| id >= next) {
                b.remove(&h.by_key, k);
                lookups += 1;
            }
        }
        // Its events, ingested after the records (so never without them),
        // and the log's running state, overwritten in place like the maps.
        let next_event = self.meta_u64(super::events::NEXT_EVENT)?.max(1);
        for g in h.events.range(be(next_event)..) {
            b.remove(&h.events, g.key()?);
        }
        // In the same batch: a crash after it must still rebuild the maps.
        b.remove(&h.meta, super::files::FILES_MAP);
        b.remove(&h.meta, super::docs::DOCS_MAP);
        b.remove(&h.meta, super::history::LOGSTATE);
        b.commit()?;
        tracing::warn!(
            records,
            vectors,
            lookups,
            "removed the records of a bulk commit that did not finish; rebuilding the per-file map and the per-document summary"
        );
        Ok(())
    }
}
