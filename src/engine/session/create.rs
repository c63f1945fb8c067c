//! A torrent made of a file or folder and seeded at once ([`AddSource::Create`], the TUI's
//! create dialog): hashed on a blocking thread (every core, [`TorrentBuilder`]), written
//! beside the data (or where asked, never over an existing file), then added like any
//! .torrent file with its data where it is, seeding without a check (each piece is still
//! hashed before it is first sent). The event log says what was made, or why not.

use super::Session;
use crate::api::{AddError, AddRequest, AddSource, CreateSource, EventKind, EventLevel, TorrentId};
use crate::engine::ctx::{AddReply, SessionEvent};
use crate::metainfo::{Metainfo, TorrentBuilder};

impl Session {
    /// Make the torrent `c` describes off the session's task, then add it
    /// ([`SessionEvent::Created`], [`Session::add_created`]); `reply` gets the answer then.
    pub(super) fn create(&mut self, c: CreateSource, req: AddRequest, reply: Option<AddReply>) {
        let ctx = self.ctx.clone();
        let output = c.output_path();
        self.log.push(
            None,
            EventLevel::Info,
            EventKind::Added,
            format!("creating {} of {}…", output.display(), c.path.display()),
        );
        tokio::task::spawn_blocking(move || {
            let result = make(&c, &output).map(|bytes| (bytes, output));
            ctx.send(SessionEvent::Created {
                request: req,
                reply,
                result,
            });
        });
    }

    /// Add the torrent just made for `req`: seeding from where its data is.
    pub(super) fn add_created(
        &mut self,
        mut req: AddRequest,
        result: Result<(Vec<u8>, std::path::PathBuf), String>,
    ) -> Result<TorrentId, AddError> {
        let AddSource::Create(c) = &req.source else {
            return Err(AddError::Invalid("not a torrent to create".into()));
        };
        let what = c.path.display().to_string();
        let (bytes, written) = result
            .map_err(|e| AddError::Invalid(format!("cannot create a torrent of {what}: {e}")))?;
        let meta = Metainfo::from_bytes(&bytes).map_err(|e| {
            AddError::Invalid(format!("{what}: the torrent made does not read back: {e}"))
        })?;
        if req.download_dir.is_none() {
            req.download_dir = c.path.parent().map(std::path::Path::to_path_buf);
        }
        req.skip_check = true;
        self.log.push(
            None,
            EventLevel::Info,
            EventKind::Added,
            format!(
                "created {} ({} pieces); seeding {what}",
                written.display(),
                meta.piece_count()
            ),
        );
        req.source = AddSource::File(written.clone());
        self.add_metainfo(meta, &bytes, &written.display().to_string(), req)
    }
}

/// Hash and write the torrent `c` describes to `output` (refused when it exists).
fn make(c: &CreateSource, output: &std::path::Path) -> Result<Vec<u8>, String> {
    if output.exists() {
        return Err(format!("{} exists; choose another file", output.display()));
    }
    let mut b = TorrentBuilder::new(&c.path)
        .version(c.version)
        .private(c.private);
    for tier in &c.trackers {
        b = b.announce_tier(tier.clone());
    }
    let bytes = b.build().map_err(|e| e.to_string())?;
    crate::atomic_write::write(output, &bytes, crate::atomic_write::Durability::Synced)
        .map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    Ok(bytes)
}
