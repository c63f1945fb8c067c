//! The engine events the UI keeps for the session log and a torrent's Log tab: at most
//! [`LOG_CAPACITY`], oldest first, each once (by `seq`), with a count of those lost when the
//! UI read the event stream too slowly or events went missing between the history sent at
//! start and the stream.

use std::collections::VecDeque;

use crate::api::{EngineEvent, TorrentId};

/// Most engine events kept for the log views.
pub const LOG_CAPACITY: usize = 2000;

/// The events kept, oldest first.
#[derive(Debug, Default)]
pub struct EventLog {
    events: VecDeque<EngineEvent>,
    /// `seq` of the newest event taken.
    last_seq: Option<u64>,
    /// Events known to be missing (gaps in `seq`, lag of the stream).
    lost: u64,
}

impl EventLog {
    /// Takes `event` unless one with this or a later `seq` was taken already; a gap in
    /// `seq` counts as lost. When full the oldest event goes. Returns the event kept, or
    /// `None` for one already seen.
    pub fn push(&mut self, event: EngineEvent) -> Option<&EngineEvent> {
        if self.last_seq.is_some_and(|s| event.seq <= s) {
            return None;
        }
        if let Some(last) = self.last_seq {
            self.lost += event.seq.saturating_sub(last + 1);
        }
        self.last_seq = Some(event.seq);
        if self.events.len() == LOG_CAPACITY {
            self.events.pop_front();
        }
        self.events.push_back(event);
        self.events.back()
    }

    /// Notes that a slow reader lost `n` events from the stream.
    pub fn lagged(&mut self, n: u64) {
        self.lost += n;
    }

    /// Events kept, oldest first.
    pub fn all(&self) -> &VecDeque<EngineEvent> {
        &self.events
    }

    /// Events known to be lost.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Events of torrent `id` (none for `None`), oldest first.
    pub fn of_torrent(&self, id: Option<TorrentId>) -> impl Iterator<Item = &EngineEvent> {
        self.events
            .iter()
            .filter(move |e| e.torrent.is_some() && e.torrent == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{EventKind, EventLevel};

    fn event(seq: u64, torrent: Option<u64>) -> EngineEvent {
        EngineEvent {
            seq,
            at: std::time::SystemTime::UNIX_EPOCH,
            torrent: torrent.map(TorrentId),
            level: EventLevel::Info,
            kind: EventKind::StateChanged,
            message: format!("event {seq}"),
        }
    }

    fn seqs(log: &EventLog) -> Vec<u64> {
        log.all().iter().map(|e| e.seq).collect()
    }

    #[test]
    fn each_event_is_kept_once_in_order() {
        let mut log = EventLog::default();
        assert!(log.push(event(1, None)).is_some());
        assert_eq!(log.push(event(2, None)).map(|e| e.seq), Some(2));
        // the history sent at start overlaps the stream
        assert!(log.push(event(2, None)).is_none());
        assert!(log.push(event(1, None)).is_none());
        assert!(log.push(event(3, None)).is_some());
        assert_eq!(seqs(&log), [1, 2, 3]);
        assert_eq!(log.lost(), 0);
    }

    #[test]
    fn gaps_and_lag_count_as_lost() {
        let mut log = EventLog::default();
        log.push(event(5, None));
        assert_eq!(log.lost(), 0, "the first event starts the count");
        log.push(event(9, None));
        assert_eq!(log.lost(), 3, "6, 7 and 8 never came");
        log.lagged(10);
        assert_eq!(log.lost(), 13);
    }

    #[test]
    fn the_oldest_event_goes_when_full() {
        let mut log = EventLog::default();
        for seq in 1..=LOG_CAPACITY as u64 + 5 {
            log.push(event(seq, None));
        }
        assert_eq!(log.all().len(), LOG_CAPACITY);
        assert_eq!(log.all().front().map(|e| e.seq), Some(6));
        assert_eq!(log.lost(), 0, "dropped for room, not lost");
    }

    #[test]
    fn a_torrents_events_are_its_own() {
        let mut log = EventLog::default();
        log.push(event(1, Some(1)));
        log.push(event(2, None));
        log.push(event(3, Some(2)));
        log.push(event(4, Some(1)));
        let of = |id| log.of_torrent(id).map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(of(Some(TorrentId(1))), [1, 4]);
        assert_eq!(of(Some(TorrentId(2))), [3]);
        assert!(of(None).is_empty(), "session events belong to no torrent");
    }
}
