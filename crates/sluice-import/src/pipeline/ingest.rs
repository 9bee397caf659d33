//! Steps 5 and 6: the catalog entry in a file of its own, and one atomic ingest of every file.

use sluice::{Db, IngestOptions, SstFileInfo, SstWriter};

use crate::catalog;
use crate::pipeline::commit::CommitLock;
use crate::pipeline::options::FileSummary;
use crate::pipeline::plan::{IndexState, Plan};
use crate::pipeline::Import;
use crate::ImportError;

impl Import {
    /// Step 5: the catalog entry in a file of its own. For a table already there it is the
    /// same entry again: its file overlaps the entry in the Db, so the ingest takes a sequence
    /// number there, and every import into a table moves the newest sequence number of its
    /// entry — which a resume's fingerprint holds (an import into the table since the
    /// checkpoint, or this import already ingested, refuses the resume even when the data
    /// files went in at sequence number 0).
    pub(crate) fn write_catalog(&self, plan: &Plan) -> Result<Option<SstFileInfo>, ImportError> {
        let path = plan.tmp.path.join("catalog.sst");
        let mut w = SstWriter::create(&path, self.final_options())?;
        crate::failpoints::inject_at("import::catalog", &path)?;
        w.put(
            &catalog::table_key(&plan.table.name),
            &catalog::table_value(&plan.table),
        )?;
        Ok(Some(w.finish()?))
    }

    /// Step 6: one atomic ingest of every file, handed over by hard link — once the table is
    /// found as it was when the import began, under the table's commit lock (`commit`).
    /// `committed` runs right after the ingest commits; the two are one step for a signal's
    /// exit ([`crate::pipeline::db::committing`]).
    pub(crate) fn ingest(
        &self,
        db: &Db,
        plan: &Plan,
        indexes: &[IndexState],
        catalog_file: Option<SstFileInfo>,
        committed: impl FnOnce(),
    ) -> Result<Vec<FileSummary>, ImportError> {
        let mut paths = Vec::new();
        let mut names = Vec::new();
        for st in indexes {
            for f in &st.finals {
                paths.push(f.path.clone());
                names.push((st.name.clone(), f.entries, f.file_size));
            }
        }
        if let Some(c) = catalog_file {
            paths.push(c.path.clone());
            names.push(("catalog".to_string(), c.entries, c.file_size));
        }
        if paths.is_empty() {
            committed();
            return Ok(Vec::new());
        }
        crate::failpoints::inject_at("import::ingest", &paths[0])?;
        let primary = primary_files(indexes);
        let (t, created) = (&plan.table, plan.created);
        let since = plan.baseline.precheck(db, t, created, &primary)?;
        let _lock = CommitLock::take(db, t, created);
        plan.baseline
            .check(db, t, created, &primary, since.as_ref())?;
        let placed = crate::pipeline::db::committing(|| {
            let placed = db.ingest(
                &paths,
                &IngestOptions {
                    link_files: true,
                    // The files were written just now by this import's SstWriters (keys in
                    // order, unique, seqno 0, block checksums computed as written): not read
                    // again.
                    verify_checksums: false,
                    verify_keys: false,
                    ..IngestOptions::default()
                },
            )?;
            committed();
            Ok(placed)
        })?;
        Ok(names
            .into_iter()
            .zip(placed)
            .map(|((index, entries, bytes), p)| FileSummary {
                index,
                level: p.level,
                entries,
                bytes,
            })
            .collect())
    }
}

/// The primary index's final files among `indexes` (the keys a commit check reads).
pub(crate) fn primary_files(indexes: &[IndexState]) -> Vec<&std::path::Path> {
    (indexes.iter())
        .filter(|st| st.slot == 0)
        .flat_map(|st| st.finals.iter().map(|f| f.path.as_path()))
        .collect()
}
