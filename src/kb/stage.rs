//! Staged, atomic writes: build in memory, embed, then one commit.
//!
//! `build_*` turn input into [`Document`]s without touching anything;
//! [`Kb::prepare`] embeds them (cancellable, off the async runtime);
//! [`Kb::commit`] is the only write and is never cancelled once started.

use crate::cancel::Cancel;
use crate::index::{ChunkId, Visibility};
use crate::kb::chunker::{Chunker, ChunkerConfig};
use crate::store::{Actor, LookupField, Metadata, NewChunk};

use super::{index_doc, Kb, KbError, Result};

/// One chunk ready to embed and store.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Stored (displayed) text.
    pub text: String,
    /// Text to embed and BM25-index (header + breadcrumb + text).
    pub embed_text: String,
    pub meta: Metadata,
}

/// Which existing chunks a commit supersedes, deleted in the same commit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReplaceBy {
    Source(String),
    FilePath(String),
}

/// Documents with their vectors, ready for [`Kb::commit`].
#[derive(Debug, Clone, Default)]
pub struct Prepared(pub(crate) Vec<NewChunk>);

impl Prepared {
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Jarvis's own metadata keys: callers' metadata can never override them.
pub const OWN_FIELDS: &[&str] = &[
    "doc_type",
    "visibility",
    "source",
    "file_path",
    "content_hash",
    "meta_schema",
    "chunk_index",
    "section",
];

/// Section-aware chunking of `content` into documents. `caller_meta` is
/// spread first and `own_meta` (doc_type, visibility, source, …) after, so
/// a collision is always won by Jarvis's own fields.
pub fn build_text_documents(
    content: &str,
    caller_meta: &Metadata,
    own_meta: &Metadata,
    embed_header: &str,
    chunking: ChunkerConfig,
) -> Result<Vec<Document>> {
    check_visibility(own_meta)?;
    let chunker = Chunker::new(chunking)?;
    let date_added = now_iso();
    let mut out = Vec::new();
    for c in chunker.chunk(content, embed_header) {
        let mut meta = Metadata::new();
        for (k, v) in caller_meta {
            if !OWN_FIELDS.contains(&k.as_str()) {
                meta.insert(k.clone(), v.clone());
            }
        }
        meta.entry("date_added".to_string())
            .or_insert_with(|| date_added.clone().into());
        for (k, v) in own_meta {
            meta.insert(k.clone(), v.clone());
        }
        meta.insert("chunk_index".into(), c.chunk_index.into());
        meta.insert("section".into(), c.section.clone().into());
        out.push(Document {
            text: c.text,
            embed_text: c.embed_text,
            meta,
        });
    }
    Ok(out)
}

/// Every chunk must say whether it is public or private: a document without
/// a valid `visibility` is refused rather than stored (it would read as
/// private, but a caller that forgot the field has a bug worth surfacing).
pub(crate) fn check_visibility(meta: &Metadata) -> Result<()> {
    match meta.get("visibility") {
        Some(serde_json::Value::String(v)) if Visibility::parse(v).is_some() => Ok(()),
        other => Err(KbError::NoVisibility {
            found: other.map(|v| v.to_string()),
        }),
    }
}

pub fn now_iso() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl Kb {
    pub fn chunker_config(&self) -> ChunkerConfig {
        ChunkerConfig {
            chunk_size: self.settings.chunk_size,
            chunk_overlap: self.settings.chunk_overlap,
        }
    }

    /// Embed staged documents. Checks `cancel` between batches; nothing
    /// is written.
    pub fn prepare(&self, docs: Vec<Document>, cancel: &Cancel) -> Result<Prepared> {
        self.check_model()?;
        docs.iter().try_for_each(|d| check_visibility(&d.meta))?;
        if docs.is_empty() {
            return Ok(Prepared(Vec::new()));
        }
        let texts: Vec<&str> = docs.iter().map(|d| d.embed_text.as_str()).collect();
        let vectors = self.embed_for_write(&texts, cancel)?;
        self.prepare_with_vectors(docs, vectors)
    }

    /// Embed a write's texts one batch per hold of the embedder, stepping
    /// aside for waiting searches between batches: a search never waits
    /// for a whole note (or group of notes) to embed, only for the batch in
    /// progress. The batches are the ones one call would make (longest
    /// texts first, batch size as configured), so the vectors are too.
    fn embed_for_write(&self, texts: &[&str], cancel: &Cancel) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut done = 0;
        while done < order.len() {
            self.let_queries_pass();
            let mut embedder = self.embedder()?;
            let idx = &order[done..(done + embedder.batch_size()).min(order.len())];
            let batch: Vec<&str> = idx.iter().map(|&i| texts[i]).collect();
            let vectors = embedder
                .embed_documents_cancellable(&batch, &|| cancel.is_cancelled())
                .map_err(|e| match e {
                    crate::embed::EmbedError::Cancelled => KbError::Cancelled,
                    other => other.into(),
                })?;
            drop(embedder);
            for (&i, v) in idx.iter().zip(vectors) {
                out[i] = v;
            }
            done += idx.len();
        }
        Ok(out)
    }

    /// Pair documents with vectors computed elsewhere (a cache of a
    /// previous embedding run, or synthetic vectors for a benchmark). The
    /// vectors must come from the configured model's space; only their
    /// count and length can be checked here.
    pub fn prepare_with_vectors(&self, docs: Vec<Document>, vectors: Vec<Vec<f32>>) -> Result<Prepared> {
        self.check_model()?;
        docs.iter().try_for_each(|d| check_visibility(&d.meta))?;
        let dims = self.dims();
        if docs.len() != vectors.len() {
            return Err(KbError::Invalid(format!(
                "{} documents but {} vectors",
                docs.len(),
                vectors.len()
            )));
        }
        if let Some(v) = vectors.iter().find(|v| v.len() != dims) {
            return Err(KbError::Invalid(format!(
                "a vector has {} dimensions; the model's have {dims}",
                v.len()
            )));
        }
        Ok(Prepared(
            docs.into_iter()
                .zip(vectors)
                .map(|(d, vector)| NewChunk {
                    text: d.text,
                    embed_text: d.embed_text,
                    meta: d.meta,
                    vector,
                })
                .collect(),
        ))
    }

    /// The only write: delete what `replace` names and add `prepared`, in
    /// the store (one durable batch) and then in both indexes, all stamped
    /// with the same sequence number. An empty `prepared` with `replace`
    /// still supersedes the old entry. Returns the new chunk ids.
    pub fn commit(&self, prepared: Prepared, replace: Option<&ReplaceBy>, actor: &Actor) -> Result<Vec<ChunkId>> {
        self.check_model()?;
        let _w = self.write_lock();
        let delete = match replace {
            None => Vec::new(),
            Some(ReplaceBy::Source(s)) => self.store.ids_by(LookupField::Source, s)?,
            Some(ReplaceBy::FilePath(p)) => self.store.ids_by(LookupField::FilePath, p)?,
        };
        self.commit_ids(prepared, &delete, actor)
    }

    /// Embed several files' documents in one pass (one embedder call, so
    /// ONNX Runtime sees full batches across file boundaries) and hand back
    /// one [`Prepared`] per group, in order. Checks `cancel` between
    /// batches; nothing is written.
    pub fn prepare_groups(&self, groups: Vec<Vec<Document>>, cancel: &Cancel) -> Result<Vec<Prepared>> {
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        let all = self.prepare(groups.into_iter().flatten().collect(), cancel)?;
        let mut chunks = all.0.into_iter();
        Ok(sizes
            .into_iter()
            .map(|n| Prepared(chunks.by_ref().take(n).collect()))
            .collect())
    }

    /// Several whole documents (files) in ONE commit: each item's `replace`
    /// names what it supersedes, and every deletion and addition lands in
    /// the same store batch and the same index commit — so the vector trees
    /// are built once for the group, and a crash leaves either the whole
    /// group or none of it. Returns each item's new chunk ids, in order.
    ///
    /// Two items may not replace the same key: the old chunks are looked up
    /// before anything is written, so the first item's chunks would survive
    /// the second's replace.
    pub fn commit_many(&self, items: Vec<(Prepared, Option<ReplaceBy>)>, actor: &Actor) -> Result<Vec<Vec<ChunkId>>> {
        self.check_model()?;
        let mut seen = std::collections::BTreeSet::new();
        for (_, r) in &items {
            if let Some(r) = r {
                if !seen.insert(r.clone()) {
                    return Err(KbError::Invalid(format!(
                        "one commit replaces {r:?} twice; commit the two versions separately"
                    )));
                }
            }
        }
        let _w = self.write_lock();
        let mut delete = Vec::new();
        let mut sizes = Vec::with_capacity(items.len());
        let mut chunks = Vec::new();
        for (prepared, replace) in items {
            match replace {
                None => {}
                Some(ReplaceBy::Source(s)) => delete.extend(self.store.ids_by(LookupField::Source, &s)?),
                Some(ReplaceBy::FilePath(p)) => delete.extend(self.store.ids_by(LookupField::FilePath, &p)?),
            }
            sizes.push(prepared.0.len());
            chunks.extend(prepared.0);
        }
        delete.sort_unstable();
        delete.dedup();
        let ids = self.commit_ids(Prepared(chunks), &delete, actor)?;
        let mut ids = ids.into_iter();
        Ok(sizes.into_iter().map(|n| ids.by_ref().take(n).collect()).collect())
    }

    /// Store-then-indexes commit of explicit deletions and additions. The
    /// caller holds the write lock.
    pub(crate) fn commit_ids(&self, mut prepared: Prepared, delete: &[u64], actor: &Actor) -> Result<Vec<ChunkId>> {
        // A new paper's citation key goes in with it (or the key of the
        // entry it replaces): one batch, never a second write.
        self.stamp_cite_keys(&mut prepared.0, delete)?;
        let vectors: Vec<Vec<f32>> = prepared.0.iter().map(|c| c.vector.clone()).collect();
        // BM25 documents come from what is being committed, not from a
        // re-read: a read error there would drop a document from BM25 while
        // the index is stamped with this seq, and catch-up would never
        // repair it.
        let staged: Vec<(String, String, crate::store::Metadata)> = prepared
            .0
            .iter()
            .map(|c| (c.text.clone(), c.embed_text.clone(), c.meta.clone()))
            .collect();
        self.settle_locked()?;
        let (seq, ids) = self.store.commit(prepared.0, delete, &self.cause(actor))?;
        crate::kb::failpoint("after_store_commit");
        let added = ids
            .iter()
            .zip(staged)
            .zip(vectors)
            .map(|((&id, (text, embed_text, meta)), v)| {
                let rec = crate::store::ChunkRecord {
                    id,
                    text,
                    embed_text,
                    meta,
                };
                (rec, v)
            })
            .collect();
        self.apply_to_indexes(seq, delete, added)?;
        Ok(ids.into_iter().map(ChunkId).collect())
    }

    /// Bring the indexes to store commit `seq`, which deleted `delete` and
    /// added `added` (records with their vectors). The caller holds the
    /// write lock.
    pub(crate) fn apply_to_indexes(
        &self,
        seq: crate::store::Seq,
        delete: &[u64],
        added: Vec<(crate::store::ChunkRecord, Vec<f32>)>,
    ) -> Result<()> {
        let mut ix = self.indexes();
        let deleted: Vec<ChunkId> = delete.iter().map(|&i| ChunkId(i)).collect();
        let docs: Vec<_> = added.iter().map(|(rec, _)| index_doc(rec)).collect();
        let items: Vec<_> = added.into_iter().map(|(rec, v)| (ChunkId(rec.id), v)).collect();
        // Finished trees join before this change, so it reaches them too.
        if let Err(e) = self.install_trees(&mut ix, true) {
            tracing::warn!(error = %e, "cannot install the vector trees yet; the exact scan keeps answering");
        }
        let apply = |ix: &mut super::Indexes| -> Result<()> {
            ix.bm25.delete_chunks(&deleted);
            ix.bm25.add(&docs)?;
            ix.bm25.commit(seq)?;
            crate::kb::failpoint("after_bm25_commit");
            if let Some(f) = ix.flat.as_mut() {
                f.delete(&deleted);
                f.add(&items)?;
                f.commit(seq)?;
            }
            crate::kb::failpoint("after_flat_commit");
            if let Some(v) = ix.vectors.as_mut() {
                v.delete(&deleted);
                v.add(&items)?;
                v.commit(seq)?;
            }
            Ok(())
        };
        if let Err(e) = apply(&mut ix) {
            // The store has the commit; the indexes catch up from the
            // journal before the next write (or on the next open).
            self.fell_behind(&mut ix, &e, seq);
            return Err(e);
        }
        self.maybe_start_trees(&ix);
        Ok(())
    }

    /// Build + prepare + commit for plain text (the seed's `add_texts`).
    pub fn add_texts(
        &self,
        content: &str,
        caller_meta: &Metadata,
        own_meta: &Metadata,
        embed_header: &str,
        replace: Option<&ReplaceBy>,
        actor: &Actor,
    ) -> Result<Vec<ChunkId>> {
        let docs = build_text_documents(content, caller_meta, own_meta, embed_header, self.chunker_config())?;
        let prepared = self.prepare(docs, &Cancel::new())?;
        self.commit(prepared, replace, actor)
    }
}
