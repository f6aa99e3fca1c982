//! Recovery: bringing the derived indexes (BM25, the int8 copy, the arroy
//! trees) up to the store's sequence number on open — by replaying the
//! store's journal, or by rebuilding from the store when the journal cannot
//! cover the gap or an index claims to be ahead of the truth — and pruning
//! the journal once every index has caught up.
//! In a running process too: a change that reached the store but not every
//! index (a full disk between the two) marks the knowledge base `behind`,
//! and the next write, vault refresh or idle search catches the indexes up
//! first ([`Kb::settle`]), so no later commit stamps an index past a change
//! it lacks.
//! Must not: write to the store's documents (only the journal is pruned) or
//! move an index past the store's sequence number.

use super::*;

impl Kb {
    /// Bring each derived index up to the store's sequence number by
    /// replaying the journal, or rebuild it when the journal cannot cover
    /// the gap (or the index claims to be ahead of the truth).
    pub fn catch_up(&self) -> Result<()> {
        let _w = self.write_lock();
        self.catch_up_locked()
    }

    /// Bring the indexes up to the store after a change that reached only
    /// the store (see `behind`); a no-op otherwise. Takes the write lock.
    pub fn settle(&self) -> Result<()> {
        let _w = self.write_lock();
        self.settle_locked()
    }

    /// [`Kb::settle`] from a search: only when no write runs (a search
    /// never waits for one, and that write settles first anyway). A
    /// failure is the next write's to report.
    pub(crate) fn settle_if_idle(&self) {
        if !self.behind.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if let Ok(_w) = self.write.try_lock() {
            if let Err(e) = self.settle_locked() {
                tracing::warn!(error = %e, "the indexes still cannot catch up with the store");
            }
        }
    }

    /// [`Kb::settle`] for a caller that holds the write lock.
    pub(crate) fn settle_locked(&self) -> Result<()> {
        if !self.behind.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        tracing::info!("catching the indexes up with a change that reached only the store");
        self.catch_up_locked()?;
        self.behind.store(false, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// A change is in the store but an index failed to apply it (a full
    /// disk): say so, drop what BM25 staged, and leave the rest to the next
    /// [`Kb::settle_locked`].
    pub(crate) fn fell_behind(&self, ix: &mut Indexes, e: &KbError, seq: Seq) {
        self.behind.store(true, std::sync::atomic::Ordering::Release);
        if let Err(d) = ix.bm25.discard_uncommitted() {
            tracing::warn!(error = %d, "cannot drop the BM25 index's staged changes yet; the catch-up will");
        }
        tracing::error!(error = %e, seq, "indexes could not apply a committed change; the next write catches them up from the journal");
    }

    fn catch_up_locked(&self) -> Result<()> {
        let target = self.store.seq()?;
        let mut ix = self.indexes();
        let bm25_seq = ix.bm25.committed_seq()?.unwrap_or(0);
        if bm25_seq != target {
            // Whatever a failed commit left staged goes first.
            ix.bm25.discard_uncommitted()?;
            match self.replay_plan(bm25_seq, target)? {
                Some(entries) => {
                    tracing::info!(from = bm25_seq, to = target, "BM25 index catching up from the journal");
                    self.replay_bm25(&mut ix.bm25, &entries)?;
                }
                None => {
                    tracing::warn!(
                        index_seq = bm25_seq,
                        store_seq = target,
                        "rebuilding the BM25 index from the store"
                    );
                    self.rebuild_bm25(&mut ix.bm25)?;
                }
            }
            ix.bm25.commit(target)?;
        }
        if let Some(v) = ix.vectors.as_mut() {
            let vseq = v.committed_seq()?.unwrap_or(0);
            if vseq != target {
                match self.replay_plan(vseq, target)? {
                    Some(entries) => {
                        tracing::info!(from = vseq, to = target, "vector trees catching up from the journal");
                        trees::replay(&self.store, v, &entries)?;
                        v.commit(target)?;
                    }
                    None => {
                        // A full rebuild is the background build's job: the
                        // exact scan answers until it is done.
                        tracing::warn!(
                            index_seq = vseq,
                            store_seq = target,
                            "the vector trees cannot catch up from the journal; rebuilding them in the background"
                        );
                        ix.vectors = None;
                    }
                }
            }
        }
        if let Some(f) = ix.flat.as_mut() {
            // No seq means an empty copy (never built, or distrusted at
            // open): a journal complete from 1 rebuilds it as well as the
            // store does.
            let fseq = f.committed_seq().unwrap_or(0);
            if f.committed_seq() != Some(target) {
                match self.replay_plan(fseq, target)? {
                    Some(entries) => {
                        tracing::info!(
                            from = fseq,
                            to = target,
                            "exact vector index catching up from the journal"
                        );
                        self.replay_flat(f, &entries)?;
                    }
                    None => {
                        tracing::warn!(
                            index_seq = fseq,
                            store_seq = target,
                            "rebuilding the exact vector index from the store"
                        );
                        self.rebuild_flat(f)?;
                    }
                }
                f.commit(target)?;
            }
        }
        self.maybe_start_trees(&ix);
        drop(ix);
        self.prune_journal()
    }

    /// The journal entries (after, target], if complete and contiguous.
    pub(super) fn replay_plan(&self, after: Seq, target: Seq) -> Result<Option<Vec<JournalEntry>>> {
        if after > target {
            return Ok(None);
        }
        let entries = self.store.journal_since(after)?;
        let contiguous = entries.iter().enumerate().all(|(i, e)| e.seq == after + 1 + i as u64);
        let complete = entries.last().map_or(after == target, |e| e.seq == target);
        Ok((contiguous && complete).then_some(entries))
    }

    fn replay_bm25(&self, bm25: &mut Bm25Index, entries: &[JournalEntry]) -> Result<()> {
        let touched = net_touched(entries, true);
        bm25.delete_chunks(&touched.iter().map(|&i| ChunkId(i)).collect::<Vec<_>>());
        let mut docs = Vec::new();
        for id in touched {
            if let Some(rec) = self.store.get(id)? {
                docs.push(index_doc(&rec));
            }
        }
        bm25.add(&docs)?;
        Ok(())
    }

    fn replay_flat(&self, f: &mut FlatIndex, entries: &[JournalEntry]) -> Result<()> {
        let touched = net_touched(entries, false);
        f.delete(&touched.iter().map(|&i| ChunkId(i)).collect::<Vec<_>>());
        let mut items = Vec::new();
        for id in touched {
            if let Some(vec) = self.store.vector(id)? {
                items.push((ChunkId(id), vec));
            }
        }
        f.add(&items)?;
        Ok(())
    }

    fn rebuild_flat(&self, f: &mut FlatIndex) -> Result<()> {
        f.clear();
        let mut batch = Vec::new();
        for id in self.store.all_ids()? {
            if let Some(vec) = self.store.vector(id)? {
                batch.push((ChunkId(id), vec));
            }
            if batch.len() >= 1000 {
                f.add(&batch)?;
                batch.clear();
            }
        }
        f.add(&batch)?;
        Ok(())
    }

    fn rebuild_bm25(&self, bm25: &mut Bm25Index) -> Result<()> {
        bm25.clear()?;
        let mut batch = Vec::new();
        for id in self.store.all_ids()? {
            if let Some(rec) = self.store.get(id)? {
                batch.push(index_doc(&rec));
            }
            if batch.len() >= 1000 {
                bm25.add(&batch)?;
                batch.clear();
            }
        }
        bm25.add(&batch)?;
        Ok(())
    }

    fn prune_journal(&self) -> Result<()> {
        let ix = self.indexes();
        let b = ix.bm25.committed_seq()?.unwrap_or(0);
        let v = match (ix.vectors.as_ref(), ix.flat.as_ref()) {
            (Some(v), Some(f)) => v.committed_seq()?.unwrap_or(0).min(f.committed_seq().unwrap_or(0)),
            (None, Some(f)) => f.committed_seq().unwrap_or(0),
            // Without a vector index (model mismatch) keep the journal: the
            // reindex that fixes it rebuilds from the store anyway.
            _ => return Ok(()),
        };
        self.store.prune_journal(b.min(v))?;
        Ok(())
    }
}

/// Ids whose index entries must be refreshed after `entries`: every added
/// or deleted id, plus (for BM25 only) metadata-updated ids. Deleting then
/// re-adding what the store still holds is idempotent, which is what makes
/// replay safe to repeat after a crash during replay.
pub(super) fn net_touched(entries: &[JournalEntry], with_meta: bool) -> Vec<u64> {
    let mut set = std::collections::BTreeSet::new();
    for e in entries {
        set.extend(e.added.iter().copied());
        set.extend(e.deleted.iter().copied());
        if with_meta {
            set.extend(e.meta_updated.iter().copied());
        }
    }
    set.into_iter().collect()
}
