//! A torrent's side of the `on_added` / `on_complete` programs ([`crate::engine::hooks`]):
//! the values of the placeholders, and starting the program configured for a moment.

use super::{Env, Torrent};
use crate::engine::hooks::{HookVars, HookWhen, command_line};

impl Torrent {
    /// The values of the placeholders for this torrent now: its paths under its save
    /// folder, its file count and payload size (0 for a magnet link still without its
    /// metadata), its category and tags (comma-separated, as qBittorrent gives them), the
    /// current tracker and the info hashes (v2: 64 hex digits, empty for a v1 torrent).
    pub fn hook_vars(&self) -> HookVars {
        let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
        let content = self.save_dir.join(&self.sum.name);
        let hex = self.sum.info_hash.to_hex();
        HookVars {
            name: self.sum.name.clone(),
            category: self.category().to_owned(),
            tags: self.tags().join(","),
            content_path: path(&content),
            root_path: if self.sum.multi_file {
                path(&content)
            } else {
                String::new()
            },
            save_path: path(&self.save_dir),
            file_count: self.sum.files.spans().iter().filter(|f| !f.pad).count(),
            size: self.sum.payload_size,
            tracker: self.trackers.current_url().unwrap_or_default().to_owned(),
            info_hash_v1: hex.clone(),
            info_hash_v2: self
                .sum
                .info_hash_v2
                .map(|h| h.iter().map(|b| format!("{b:02x}")).collect())
                .unwrap_or_default(),
            torrent_id: hex,
        }
    }

    /// Start the program configured for `when` (`on_added` or `on_complete`), if any,
    /// detached: its result reaches this torrent's log later as a `Hook` event.
    pub fn run_hook(&self, when: HookWhen, env: &Env<'_>) {
        let template = match when {
            HookWhen::Added => &env.ctx.config.on_added,
            HookWhen::Completed => &env.ctx.config.on_complete,
        };
        if let Some(argv) = command_line(template, &self.hook_vars()) {
            env.ctx
                .hooks
                .spawn(self.id, self.sum.name.clone(), when, argv);
        }
    }
}
