//! The store's writes beside [`Store::commit`]: metadata-only updates, and
//! an undo's restore of kept chunks. Each is one durable batch with its
//! journal entry, map entries and events, like a commit.
//!
//! Must not: allocate chunk ids (a restore puts back the ids its chunks
//! had, all below `next_id`) or take the bulk path: everything a restore
//! writes must become visible with its batch, and ingested records below
//! `next_id` would be visible before it.

use fjall::{OwnedWriteBatch, PersistMode};

use super::events::{Cause, KeptChunk, LogBatch};
use super::{
    be, check_lookups, decode_embed, docs, embed_key, files, lookup_key, lookups, ChunkId, ChunkRecord, JournalEntry,
    Metadata, Seq, Store, StoreError, NEXT_ID,
};

/// A restored chunk: its record (with embedded text) and vector.
pub type Restored = (ChunkRecord, Vec<f32>);

/// The per-batch change sets a deletion updates.
pub(super) type Sets<'s, 'c> = (
    &'s mut files::FileChanges,
    &'s mut docs::DocChanges,
    &'s mut LogBatch<'c>,
);

impl Store {
    /// Put the deletion of `delete` into batch `b`: records, vectors and
    /// lookups, the maps' changes, and the removal's events (with a kept
    /// copy of each chunk whose document undo may restore). Ids that are
    /// not stored are skipped; the ones deleted are returned.
    pub(super) fn delete_in(
        &self,
        b: &mut OwnedWriteBatch,
        delete: &[ChunkId],
        (files, docs, log): Sets<'_, '_>,
    ) -> Result<Vec<ChunkId>, StoreError> {
        let h = self.h()?;
        let gen = self.generation()?;
        let mut deleted = Vec::with_capacity(delete.len());
        for &id in delete {
            let Some((raw, old)) = self.get_raw(id)? else { continue };
            // A vector missing from a corrupt store is kept as empty: the
            // undo then refuses instead of restoring a chunk without one.
            let kept = match log.keeps(&old.meta) {
                true => Some((
                    gen,
                    h.embeds.get(embed_key(gen, id))?.map_or(Vec::new(), |e| e.to_vec()),
                )),
                false => None,
            };
            log.remove(id, &raw, &old.meta, kept);
            files.leave(id, &old.meta, None);
            docs.change(id, Some(&old.meta), None);
            b.remove(&h.chunks, be(id));
            b.remove(&h.embeds, embed_key(gen, id));
            for (field, value) in lookups(&old.meta) {
                b.remove(&h.by_key, lookup_key(field.tag(), &value, id));
            }
            deleted.push(id);
        }
        Ok(deleted)
    }

    /// Metadata-only update of existing chunks (no new text or vector).
    /// `fields` with a `null` value remove that key.
    pub fn update_metadata(&self, ids: &[ChunkId], fields: &Metadata, cause: &Cause) -> Result<Seq, StoreError> {
        self.update_metadata_many(&[(ids, fields)], cause)
    }

    /// Several metadata-only updates, each its own fields, in ONE batch and
    /// one journal entry (a backfill of many documents costs one commit; an
    /// undo puts back each group's previous values at once). An id belongs
    /// to one group: each is read from the store, not the batch.
    pub fn update_metadata_many(&self, groups: &[(&[ChunkId], &Metadata)], cause: &Cause) -> Result<Seq, StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let seq = self.seq()? + 1;
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            let mut touched = Vec::new();
            let mut files = files::FileChanges::default();
            let mut docs = docs::DocChanges::default();
            let mut log = LogBatch::new(cause);
            for &(ids, fields) in groups {
                for &id in ids {
                    let Some((old_raw, mut rec)) = self.get_raw(id)? else {
                        continue;
                    };
                    for (field, value) in lookups(&rec.meta) {
                        b.remove(&h.by_key, lookup_key(field.tag(), &value, id));
                    }
                    let old = rec.meta.clone();
                    for (k, v) in fields {
                        if v.is_null() {
                            rec.meta.remove(k);
                        } else {
                            rec.meta.insert(k.clone(), v.clone());
                        }
                    }
                    check_lookups(&rec.meta)?;
                    files.leave(id, &old, Some(&rec.meta));
                    files.write(&rec.meta);
                    docs.change(id, Some(&old), Some(&rec.meta));
                    for (field, value) in lookups(&rec.meta) {
                        b.insert(&h.by_key, lookup_key(field.tag(), &value, id), b"".as_slice());
                    }
                    let json = serde_json::to_vec(&rec).map_err(|e| StoreError::Corrupt {
                        id: id.to_string(),
                        reason: e.to_string(),
                    })?;
                    log.update(id, (&old_raw, &old), (&json, &rec.meta), fields);
                    b.insert(&h.chunks, be(id), json);
                    touched.push(id);
                }
            }
            let entry = JournalEntry {
                seq,
                added: vec![],
                deleted: vec![],
                meta_updated: touched,
            };
            for (k, v) in self.apply_file_changes(&mut b, files)? {
                b.insert(&h.files, k, v);
            }
            for (k, v) in self.apply_doc_changes(&mut b, docs)? {
                b.insert(&h.docs, k, v);
            }
            self.put_journal(&mut b, &entry)?;
            self.write_log(&mut b, log, seq)?.insert(&mut b, &h);
            b.commit()?;
            Ok(seq)
        })
    }

    /// An undo's restore: put `chunks` back exactly as they were stored
    /// (their ids, records and vectors) and delete `delete`, in one batch.
    /// Every chunk must be of the current embedding generation and its id
    /// free. Returns the seq and the restored records (with their embedded
    /// text) and vectors, for the derived indexes.
    pub fn restore(
        &self,
        chunks: Vec<KeptChunk>,
        delete: &[ChunkId],
        cause: &Cause,
    ) -> Result<(Seq, Vec<Restored>), StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let seq = self.seq()? + 1;
            let gen = self.generation()?;
            let next = self.meta_u64(NEXT_ID)?.max(1);
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            let mut files = files::FileChanges::default();
            let mut docs = docs::DocChanges::default();
            let mut log = LogBatch::new(cause);
            let deleted = self.delete_in(&mut b, delete, (&mut files, &mut docs, &mut log))?;
            let mut restored = Vec::with_capacity(chunks.len());
            for c in chunks {
                let unusable = |why: &str| StoreError::Corrupt {
                    id: format!("kept/{}", c.id),
                    reason: why.to_string(),
                };
                if c.gen != gen {
                    return Err(unusable("its vector is of another embedding generation"));
                }
                if c.id >= next || (self.get_bare(c.id)?.is_some() && !deleted.contains(&c.id)) {
                    return Err(unusable("its id is in use"));
                }
                let mut rec: ChunkRecord = serde_json::from_slice(&c.record).map_err(|e| unusable(&e.to_string()))?;
                let (embed_text, vector) = decode_embed(&c.embed).ok_or_else(|| unusable("no vector was kept"))?;
                check_lookups(&rec.meta)?;
                for (field, value) in lookups(&rec.meta) {
                    b.insert(&h.by_key, lookup_key(field.tag(), &value, c.id), b"".as_slice());
                }
                files.write(&rec.meta);
                docs.change(c.id, None, Some(&rec.meta));
                log.add(&c.record, &rec.meta);
                b.insert(&h.chunks, be(c.id), c.record);
                b.insert(&h.embeds, embed_key(gen, c.id), c.embed);
                rec.embed_text = embed_text;
                restored.push((rec, vector));
            }
            let entry = JournalEntry {
                seq,
                added: restored.iter().map(|(r, _)| r.id).collect(),
                deleted,
                meta_updated: vec![],
            };
            for (k, v) in self.apply_file_changes(&mut b, files)? {
                b.insert(&h.files, k, v);
            }
            for (k, v) in self.apply_doc_changes(&mut b, docs)? {
                b.insert(&h.docs, k, v);
            }
            self.put_journal(&mut b, &entry)?;
            self.write_log(&mut b, log, seq)?.insert(&mut b, &h);
            b.commit()?;
            Ok((seq, restored))
        })
    }
}
