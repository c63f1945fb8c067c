//! What the engine tells the model: its events (the session log, errors on the message
//! line), the answers to adds, and adds refused before the UI started.

use super::*;
use crate::api::EventKind;

impl App {
    /// Adds engine events (from the event stream or the history sent at start); events
    /// already seen (by `seq`) are skipped, gaps are counted as lost. Returns whether any
    /// was new.
    pub fn push_events(&mut self, events: impl IntoIterator<Item = EngineEvent>) -> bool {
        self.push_events_from(events, true)
    }

    /// Adds the session log's history, sent once at start: as [`App::push_events`], but
    /// an old answer to an action (a refused peer) does not show on the message line.
    pub fn push_history(&mut self, events: impl IntoIterator<Item = EngineEvent>) -> bool {
        self.push_events_from(events, false)
    }

    fn push_events_from(
        &mut self,
        events: impl IntoIterator<Item = EngineEvent>,
        live: bool,
    ) -> bool {
        let mut any = false;
        for event in events {
            let Some(event) = self.events.push(event) else {
                continue;
            };
            let row = event.torrent.and_then(|id| self.snapshot.row(id));
            if let Some(row) = row
                && self.notice.move_event(
                    row.id,
                    event.level,
                    event.kind,
                    &event.message,
                    &row.save_path,
                )
            {
                any = true;
                continue;
            }
            if event.kind == EventKind::PeerRefused && live {
                // the answer to "add peer": replaces its "peer … added" at once
                let name = event.torrent.and_then(|id| self.snapshot.row(id));
                self.notice
                    .error(event.with_name(name.map(|r| r.name.as_str())));
            } else if event.level == EventLevel::Error {
                self.notice.error_if_quiet(|| {
                    // the engine's torrent events start with the name already
                    let name = event.torrent.and_then(|id| self.snapshot.row(id));
                    let key = self.opts.keymap.hint(Action::SessionLog);
                    format!(
                        "{} ({key}: event log)",
                        event.with_name(name.map(|r| r.name.as_str()))
                    )
                });
            }
            any = true;
        }
        any
    }

    /// Notes that a slow reader lost `n` events from the stream.
    pub fn events_lagged(&mut self, n: u64) {
        self.events.lagged(n);
    }

    /// The engine's answer to an add: selects the new torrent (or the existing one for "already
    /// added") and says so in the message line.
    pub fn add_result(&mut self, result: Result<TorrentId, AddError>) {
        if let Some(batch) = &mut self.add_batch {
            match &result {
                Ok(id) => {
                    batch.added += 1;
                    self.pending_select.get_or_insert(*id);
                }
                Err(AddError::AlreadyAdded { .. }) => batch.already += 1,
                Err(_) => batch.failed += 1,
            }
            if batch.answered() >= batch.expected {
                let batch = self.add_batch.take().unwrap_or_default();
                let key = self.opts.keymap.hint(Action::SessionLog);
                let text = batch.summary(&key);
                if batch.failed > 0 {
                    self.set_error(text);
                } else {
                    self.set_info(text);
                }
            }
            let snapshot = self.snapshot.clone();
            self.selection.invalidate();
            self.set_snapshot_at(snapshot, self.now_secs);
            return;
        }
        // a failed create says its own error; either way the next add is not this one
        let created = self.pending_create.take();
        match result {
            Ok(id) => {
                self.pending_select = Some(id);
                let text = match created {
                    Some(path) => format!("created {}; seeding it", format::clean(&path, false)),
                    None => "torrent added".to_owned(),
                };
                self.set_info(text);
            }
            Err(AddError::AlreadyAdded {
                id, name, merged, ..
            }) => {
                self.pending_select = Some(id);
                let name = format::clean(&name, false);
                self.set_info(match merged {
                    Some(m) => format!("{name} is already added: {m}"),
                    None => format!("{name} is already added: selected it"),
                });
            }
            Err(e) => self.set_error(format!("not added: {e}")),
        }
        // it may be in the current snapshot already
        let snapshot = self.snapshot.clone();
        self.selection.invalidate();
        self.set_snapshot_at(snapshot, self.now_secs);
    }

    /// Adds refused before the UI started (`reasons`, each already in the session log):
    /// the message line says how many and where to read why, the first reason after
    /// that, so the count and the key fit even 80 columns; after the notice shown, if
    /// any (the next key shows it). Nothing for none.
    pub fn adds_failed(&mut self, reasons: &[String]) {
        let Some(first) = reasons.first() else {
            return;
        };
        let n = reasons.len();
        let key = self.opts.keymap.hint(Action::SessionLog);
        // after what is shown (a watch folder that cannot be used): each is read in turn
        self.notice.enqueue(
            format!(
                "{n} torrent{} not added (why: {key}, session log): {}",
                if n == 1 { "" } else { "s" },
                format::clean(first, self.opts.theme.sym.ascii)
            ),
            NoticeLevel::Error,
        );
    }
}

/// The answers to the adds of one dialog submission (a glob matching many files).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AddBatch {
    /// Adds sent.
    pub expected: usize,
    /// Added.
    pub added: usize,
    /// In the session already.
    pub already: usize,
    /// Refused (each with its reason in the session log).
    pub failed: usize,
}

impl AddBatch {
    fn answered(&self) -> usize {
        self.added + self.already + self.failed
    }

    /// One line for all of them, e.g. "added 3 of 5 torrents, 1 already added, 1 not
    /// added (why: e, session log)"; `key` opens the session log.
    fn summary(&self, key: &str) -> String {
        let mut text = if self.added == self.expected {
            format!("added {} torrents", self.added)
        } else {
            format!("added {} of {} torrents", self.added, self.expected)
        };
        if self.already > 0 {
            text.push_str(&format!(", {} already added", self.already));
        }
        if self.failed > 0 {
            text.push_str(&format!(
                ", {} not added (why: {key}, session log)",
                self.failed
            ));
        }
        text
    }
}
