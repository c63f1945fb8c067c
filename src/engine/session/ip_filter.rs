//! The session's side of the IP filter: read the `ip_filter` file on a blocking thread at
//! start, install it when ready, look at the file's modification time and size every
//! [`EngineConfig::ip_filter_poll`](crate::config::engine::EngineConfig::ip_filter_poll)
//! (30 s) through the deadline queue and read it again when they change. Nothing is
//! scheduled when no filter is configured.

use std::time::Instant;

use super::Session;
use crate::api::{EventKind, EventLevel, TorrentId};
use crate::engine::ctx::SessionEvent;
use crate::engine::ip_filter::{FileStamp, Reload, reload};
use crate::engine::torrent::TimerKey;
use crate::untrusted::line;

/// What the session keeps of the filter file between looks.
#[derive(Debug, Default)]
pub(super) struct FilterWatch {
    /// The file's stamp at the last read.
    stamp: Option<FileStamp>,
    /// A look is running on a blocking thread.
    looking: bool,
    /// The file was read at least once.
    read_once: bool,
    /// The blocked count in the last snapshot.
    pub(super) blocked_shown: u64,
}

impl Session {
    /// Look at the filter file (if one is configured) on a blocking thread; the answer
    /// comes back as [`SessionEvent::IpFilter`].
    pub(super) fn ip_filter_look(&mut self) {
        let Some(path) = self.ctx.config.ip_filter.clone() else {
            return;
        };
        if self.filter.looking {
            return;
        }
        self.filter.looking = true;
        let (last, first) = (self.filter.stamp, !self.filter.read_once);
        let ctx = self.ctx.clone();
        tokio::task::spawn_blocking(move || {
            let r = reload(&path, last, first);
            ctx.send(SessionEvent::IpFilter(r));
        });
    }

    /// A look at the filter file ended: install what was read, say so, look again later.
    pub(super) fn on_ip_filter(&mut self, r: Reload) {
        self.filter.looking = false;
        if let Reload::Loaded {
            path,
            stamp,
            result,
            took,
        } = r
        {
            let again = self.filter.read_once;
            self.filter.read_once = true;
            self.filter.stamp = stamp;
            let shown = path.display().to_string();
            let shown = line(&shown);
            match result {
                Ok(p) => {
                    let ranges = p.filter.len();
                    let mut msg = format!(
                        "ip filter {shown} {}: {ranges} ranges blocked ({} lines",
                        if again { "reloaded" } else { "loaded" },
                        p.lines
                    );
                    if p.allowed > 0 {
                        msg.push_str(&format!(", {} allowed by their access level", p.allowed));
                    }
                    msg.push(')');
                    let level = if let Some((at, text)) = &p.first_malformed {
                        msg.push_str(&format!(
                            "; {} malformed lines skipped, the first at line {at}: {}",
                            p.malformed,
                            line(text)
                        ));
                        EventLevel::Warn
                    } else {
                        EventLevel::Info
                    };
                    tracing::info!(
                        ranges,
                        lines = p.lines,
                        malformed = p.malformed,
                        allowed = p.allowed,
                        bytes = p.filter.memory_bytes(),
                        ms = took.as_millis() as u64,
                        "ip filter {shown} read"
                    );
                    self.log.push(None, level, EventKind::IpFilter, msg);
                    self.ctx.ip_filter.install(Some(p.filter));
                    self.publish_now = true;
                    let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
                    for id in ids {
                        self.with(id, |t, env| t.ip_filter_changed(env));
                    }
                }
                Err(e) => {
                    if !again {
                        // nothing to keep in force: dial and accept without a filter
                        self.ctx.ip_filter.install(None);
                        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
                        for id in ids {
                            self.with(id, |t, env| t.ip_filter_changed(env));
                        }
                    }
                    let keep = if self.ctx.ip_filter.ranges().is_some() {
                        "; the filter read before stays in force"
                    } else {
                        "; no peer is filtered"
                    };
                    tracing::warn!("{e}");
                    self.log.push(
                        None,
                        EventLevel::Error,
                        EventKind::IpFilter,
                        format!("{}{keep}", line(&e.to_string())),
                    );
                }
            }
        }
        let at = Instant::now() + self.ctx.config.ip_filter_poll;
        self.timers.schedule(TimerKey::IpFilter, at);
    }
}
