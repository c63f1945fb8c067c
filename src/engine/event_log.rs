//! The engine's event stream: every event goes to the tracing log, to a broadcast channel
//! (a slow reader loses the oldest events, never blocks the engine) and into a bounded
//! history that a front end can ask for when it starts.

use std::collections::VecDeque;
use std::time::SystemTime;

use tokio::sync::broadcast;

use crate::api::{EngineEvent, EventKind, EventLevel, EventReceiver, TorrentId};

/// Events kept for [`crate::api::Command::RecentEvents`].
pub const HISTORY: usize = 1000;

/// The session's event stream.
#[derive(Debug)]
pub struct EventLog {
    tx: broadcast::Sender<EngineEvent>,
    history: VecDeque<EngineEvent>,
    seq: u64,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog::new()
    }
}

impl EventLog {
    /// An empty log.
    pub fn new() -> EventLog {
        let (tx, _) = broadcast::channel(256);
        EventLog {
            tx,
            history: VecDeque::new(),
            seq: 0,
        }
    }

    /// The sending end, for a [`Client`](crate::api::Client) to subscribe through.
    pub fn sender(&self) -> &broadcast::Sender<EngineEvent> {
        &self.tx
    }

    /// A receiver of every event from now on.
    pub fn subscribe(&self) -> EventReceiver {
        self.tx.subscribe()
    }

    /// Record an event. The message is made safe for a terminal first
    /// ([`crate::untrusted::line`]): it goes to the log and to every front end.
    pub fn push(
        &mut self,
        torrent: Option<TorrentId>,
        level: EventLevel,
        kind: EventKind,
        message: String,
    ) {
        // names, paths and tracker texts inside the message are untrusted
        let message = match crate::untrusted::line(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(safe) => safe,
        };
        match level {
            EventLevel::Info => tracing::info!(torrent = ?torrent, ?kind, "{message}"),
            EventLevel::Warn => tracing::warn!(torrent = ?torrent, ?kind, "{message}"),
            EventLevel::Error => tracing::error!(torrent = ?torrent, ?kind, "{message}"),
        }
        self.seq += 1;
        let ev = EngineEvent {
            seq: self.seq,
            at: SystemTime::now(),
            torrent,
            level,
            kind,
            message,
        };
        let _ = self.tx.send(ev.clone());
        if self.history.len() >= HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(ev);
    }

    /// The history, oldest first.
    pub fn recent(&self) -> Vec<EngineEvent> {
        self.history.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_bounded_and_subscribers_see_new_events() {
        let mut log = EventLog::new();
        let mut rx = log.subscribe();
        for i in 0..(HISTORY + 10) {
            log.push(None, EventLevel::Info, EventKind::Added, format!("e{i}"));
        }
        let h = log.recent();
        assert_eq!(h.len(), HISTORY);
        assert_eq!(h[0].message, "e10");
        assert_eq!(h.last().unwrap().seq, (HISTORY + 10) as u64);
        // the channel keeps the newest 256; the oldest are reported as lagged
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
        assert!(rx.try_recv().is_ok());
    }

    #[test]
    fn messages_are_made_safe_for_a_terminal() {
        let mut log = EventLog::new();
        let mut rx = log.subscribe();
        log.push(
            None,
            EventLevel::Warn,
            EventKind::TrackerError,
            "tracker says \x1b[2Jgone\nnow \u{202e}txt".to_owned(),
        );
        let want = "tracker says \u{fffd}[2Jgone now \u{fffd}txt";
        assert_eq!(log.recent()[0].message, want);
        assert_eq!(rx.try_recv().unwrap().message, want);
    }
}
