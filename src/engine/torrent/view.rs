//! What the front ends see of a torrent: its list row and, for the torrent on screen, the
//! detail view (peers, files, pieces, trackers, peer sources). Built from the torrent's
//! state when the session publishes (at most 20 times a second, only for torrents that
//! had an input or are live); a rebuilt row equal to the last one is shared, so a quiet
//! torrent never makes the snapshot change.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use super::Torrent;
use crate::api::{
    FileRow, PauseCause, PeerFlags, PeerRow, PeerSource, PieceState, SourceCount, TorrentDetail,
    TorrentRow, TorrentState,
};
use crate::engine::link::peer::PeerInfo;
use crate::engine::rate::RateMeter;
use crate::lock::MutexExt;
use crate::piece::Bitfield;

/// The last row built for a torrent: a rebuilt row equal to it is the same `Arc` (nothing
/// changed for the session to publish); a different one gets the next revision.
#[derive(Debug, Default)]
pub struct RowCache {
    rev: u64,
    last: Option<Arc<TorrentRow>>,
}

impl RowCache {
    /// The revision of the last row (0 before the first).
    pub fn rev(&self) -> u64 {
        self.rev
    }

    /// `row` (built with [`RowCache::rev`]) as the one to show: the previous `Arc` when
    /// equal, else a new one with the next revision.
    pub fn offer(&mut self, row: TorrentRow) -> Arc<TorrentRow> {
        if let Some(old) = &self.last
            && **old == row
        {
            return old.clone();
        }
        self.rev += 1;
        let row = Arc::new(TorrentRow {
            rev: self.rev,
            ..row
        });
        self.last = Some(row.clone());
        row
    }
}

/// The peer sources in the order the General tab lists them.
const SOURCES: [PeerSource; 7] = [
    PeerSource::Tracker,
    PeerSource::Incoming,
    PeerSource::Dht,
    PeerSource::Pex,
    PeerSource::Lsd,
    PeerSource::Magnet,
    PeerSource::Manual,
];

/// Per source: addresses known (`known`) and peers connected now (`connected`); sources
/// with neither are left out unless `in_effect` says the torrent uses them (so the General
/// tab names every source in effect, even before it gives a peer).
pub fn source_counts(
    known: &HashMap<PeerSource, u32>,
    connected: &[PeerRow],
    in_effect: impl Fn(PeerSource) -> bool,
) -> Vec<SourceCount> {
    SOURCES
        .into_iter()
        .map(|source| SourceCount {
            source,
            known: known.get(&source).copied().unwrap_or(0),
            connected: connected.iter().filter(|p| p.source == source).count() as u32,
        })
        .filter(|c| c.known > 0 || c.connected > 0 || in_effect(c.source))
        .collect()
}

/// Each of `count` pieces as the piece map shows it: verified (`have`), being downloaded
/// (`partial`), or missing.
pub fn piece_states(
    count: u32,
    have: &Bitfield,
    partial: impl Iterator<Item = u32>,
) -> Vec<PieceState> {
    let mut pieces: Vec<PieceState> = (0..count)
        .map(|p| {
            if have.get(p) {
                PieceState::Have
            } else {
                PieceState::Missing
            }
        })
        .collect();
    for p in partial {
        if let Some(x) = pieces.get_mut(p as usize) {
            *x = PieceState::Downloading;
        }
    }
    pieces
}

/// One peer's row, its rates sampled on `meters` (down, up) at `now`; `count` pieces in the
/// torrent, `optimistic` when it holds the optimistic unchoke.
pub fn peer_row(
    i: &PeerInfo,
    meters: &mut (RateMeter, RateMeter),
    now: Instant,
    count: u32,
    optimistic: bool,
) -> PeerRow {
    let downloaded = i.downloaded.load(Ordering::Relaxed);
    let uploaded = i.uploaded.load(Ordering::Relaxed);
    let client = i
        .client
        .locked()
        .clone()
        .unwrap_or_else(|| crate::peer::client_name(&i.peer_id));
    PeerRow {
        addr: i.addr,
        client,
        flags: PeerFlags {
            am_choking: i.am_choking.load(Ordering::Relaxed),
            am_interested: i.am_interested.load(Ordering::Relaxed),
            peer_choking: i.peer_choking.load(Ordering::Relaxed),
            peer_interested: i.peer_interested.load(Ordering::Relaxed),
            incoming: !i.outgoing,
            encrypted: i.mse == Some(crate::peer::mse::Method::Rc4),
            obfuscated: i.mse == Some(crate::peer::mse::Method::Plaintext),
            utp: i.utp,
            snubbed: i.snubbed.load(Ordering::Relaxed),
            optimistic,
        },
        progress: if count == 0 {
            1.0
        } else {
            i.pieces.load(Ordering::Relaxed) as f32 / count as f32
        },
        down_rate: meters.0.sample(downloaded, now),
        up_rate: meters.1.sample(uploaded, now),
        downloaded,
        uploaded,
        source: i.source,
    }
}

/// The first and last piece holding bytes of file `span` (a file of 0 bytes: the piece
/// where it starts, twice).
pub fn piece_range(span: &crate::piece::FileSpan, geo: &crate::piece::Geometry) -> (u32, u32) {
    let r = span.pieces(geo);
    if r.is_empty() {
        let p =
            u32::try_from(span.offset / u64::from(geo.piece_length().max(1))).unwrap_or(u32::MAX);
        (p, p)
    } else {
        (r.start, r.end - 1)
    }
}

/// The row message of a magnet link fetching its info dictionary: `have` of `total`
/// metadata pieces (0: size unknown yet) from `peers` peers.
pub fn fetch_message(have: u32, total: u32, peers: usize) -> String {
    if total == 0 {
        format!("fetching metadata (BEP 9) from {peers} peers")
    } else {
        format!("fetching metadata: {have}/{total} pieces from {peers} peers")
    }
}

impl Torrent {
    /// Whether the row changes by itself (rates, peers, check progress): it is rebuilt at
    /// every publish tick while this is true.
    pub fn is_live(&self) -> bool {
        !self.peers.is_empty()
            || self.web_seeds.running()
            || self.life.check_job().is_some()
            || self.life.move_progress().is_some()
            || self.meters.0.rate() > 0
            || self.meters.1.rate() > 0
    }

    /// The list row: rebuilt from the torrent's state, the previous one shared when equal.
    pub fn row(&mut self, now: Instant) -> Arc<TorrentRow> {
        let row = self.build_row(now);
        self.view.offer(row)
    }

    fn build_row(&mut self, now: Instant) -> TorrentRow {
        let n = self.sum.piece_count();
        let (downloaded, uploaded, _) = self.totals();
        let mut down_rate = self.meters.0.sample(downloaded, now);
        let mut up_rate = self.meters.1.sample(uploaded, now);
        let state = self.life.ui_state();
        if !state.is_active() {
            down_rate = 0;
            up_rate = 0;
        }
        let left = self.bytes_left();
        let (size, mut done) = if self.wanted.skips_any() {
            // the wanted files only, byte-exact
            let have = self.verified();
            self.wanted
                .wanted_files(&self.sum)
                .fold((0, 0), |(s, d), f| {
                    (s + f.length, d + self.sum.file_done(f, &have))
                })
        } else {
            (self.sum.payload_size, self.sum.payload_done(left))
        };
        let mut have = self.have_count();
        if let Some(m) = self.life.move_progress() {
            done = m.moved().min(size);
        }
        if let Some(c) = self.life.check_job() {
            let checked = c.checked().min(n);
            done = (u64::from(checked) * size) / u64::from(n.max(1));
            have = checked;
        }
        let seeds = self
            .peers
            .iter()
            .filter(|(_, p)| p.info.pieces.load(Ordering::Relaxed) == n && n > 0)
            .count() as u32;
        let eta_secs =
            (state == TorrentState::Downloading && down_rate > 0).then(|| left / down_rate);
        let (swarm_seeds, swarm_leechers) = self.trackers.swarm();
        let fetching = self.life.fetch().map(|f| f.get());
        let goal = self
            .goal_stopped()
            .filter(|_| state == TorrentState::Paused);
        let message = if let Some(g) = self.life.guard() {
            Some(format!("paused: {g}"))
        } else if let Some(g) = goal {
            Some(format!("stopped: {g} (seeding goal; raise it to seed on)"))
        } else if let Some(f) = fetching {
            Some(fetch_message(
                f.have.load(Ordering::Relaxed),
                f.total.load(Ordering::Relaxed),
                self.peers.len(),
            ))
        } else if let Some(m) = self
            .goal_throttle_message()
            .filter(|_| state == TorrentState::Seeding)
        {
            Some(m)
        } else if self.life.is_running() {
            self.sources_headline()
        } else {
            None
        };
        TorrentRow {
            id: self.id,
            rev: self.view.rev(),
            name: self
                .display_name
                .clone()
                .unwrap_or_else(|| self.sum.name.clone()),
            info_hash: self.sum.info_hash.to_hex(),
            size,
            done,
            pieces_have: have,
            pieces_total: n,
            state,
            error: self.life.error().cloned(),
            down_rate,
            up_rate,
            eta_secs,
            seeds,
            peers: self.peers.len() as u32,
            web_seeds: self.web_seeds.active(),
            swarm_seeds,
            swarm_leechers,
            downloaded,
            uploaded,
            added_at: self.added_at,
            down_limit: self.limits.download.rate(),
            up_limit: self.own_upload_limit(),
            message,
            has_trackers: self.trackers.any_supported(),
            paused_by: self
                .life
                .guard()
                .map(|g| PauseCause::DiskGuard(g.to_string()))
                .or_else(|| goal.map(|g| PauseCause::Goal(g.to_string()))),
            save_path: self.save_dir.clone(),
            queue_pos: self.queue_rank(),
            forced: self.forced(),
            category: self.manage.category.clone(),
            tags: self.manage.tags.clone(),
            auto_managed: self.manage.auto_managed,
            total_size: self.sum.payload_size,
            content_path: (n > 0).then(|| self.save_dir.join(&self.sum.name)),
            info_hash_v2: self
                .sum
                .info_hash_v2
                .map(|h| data_encoding::HEXLOWER.encode(&h)),
            private: self.sum.private,
            tracker: self.trackers.current_url().unwrap_or_default().to_owned(),
            completed_at: self.completed_at,
            last_activity: self.last_activity(downloaded + uploaded),
            seeded_secs: self.goals.seeded_before,
            seeding_since: self.goals.seeding_since_unix,
            share_limits: self.share_limits(),
            sequential: self.manage.sequential,
            first_last: self.manage.first_last,
            unchecked: self.unchecked_count(),
            unchecked_failed: self.unchecked_failed,
        }
    }

    /// When a payload byte last moved (Unix seconds), given the bytes moved so far: now
    /// when they changed since the last row, else as before (at first: when it completed,
    /// else when it was added).
    fn last_activity(&mut self, moved: u64) -> u64 {
        match self.activity {
            Some((before, at)) if before == moved => at,
            Some(_) => {
                let at = super::now_unix();
                self.activity = Some((moved, at));
                at
            }
            None => {
                let at = self.completed_at.unwrap_or(self.added_at);
                self.activity = Some((moved, at));
                at
            }
        }
    }

    /// The detail view of this torrent.
    pub fn detail(&mut self, now: Instant) -> TorrentDetail {
        let n = self.sum.piece_count();
        let optimistic = self.choker.optimistic();
        let mut peers: Vec<PeerRow> = Vec::with_capacity(self.peers.len());
        for (k, p) in self.peers.iter_mut() {
            let optimistic = optimistic == Some(*k);
            peers.push(peer_row(&p.info, &mut p.meters, now, n, optimistic));
        }
        peers.sort_by_key(|p| p.addr);
        let have = self.verified();
        let pieces = match self.shared() {
            Some(s) => piece_states(n, &have, s.picker().partial_pieces()),
            None => piece_states(n, &have, std::iter::empty()),
        };
        let meta = self.info.resident().cloned();
        let files = match &meta {
            Some(m) => m
                .files
                .iter()
                .zip(self.sum.files.spans())
                .zip(self.wanted.files())
                .filter(|((f, _), _)| !f.pad)
                .map(|((f, span), prio)| FileRow {
                    path: m.path_in_folder(f),
                    changed: f.changes.describe(),
                    size: f.length,
                    done: self.sum.file_done(span, &have),
                    priority: *prio,
                    piece_range: piece_range(span, &self.sum.geometry),
                })
                .collect(),
            None => Vec::new(),
        };
        let (_, _, wasted) = self.totals();
        let mut peer_sources =
            source_counts(&self.book.source_counts(), &peers, |s| self.in_effect(s));
        let web_seeds = self.web_seeds.rows(now);
        if !web_seeds.is_empty() {
            peer_sources.push(SourceCount {
                source: PeerSource::WebSeed,
                known: web_seeds.len() as u32,
                connected: self.web_seeds.active(),
            });
        }
        TorrentDetail {
            // the session fills it in (it holds the `[seeding]` config)
            goals: Default::default(),
            peer_sources,
            given_peers: self.given_peers(),
            id: self.id,
            info_hash: self.sum.info_hash.to_hex(),
            save_path: self.save_dir.clone(),
            name_changed: meta.as_ref().and_then(|m| m.name_changes.describe()),
            comment: meta.as_ref().and_then(|m| m.comment.clone()),
            created_by: meta.as_ref().and_then(|m| m.created_by.clone()),
            creation_date: meta.as_ref().and_then(|m| m.creation_date),
            private: self.sum.private,
            multi_file: self.sum.multi_file,
            piece_length: self.sum.geometry.piece_length(),
            wasted,
            peers,
            files,
            trackers: self.trackers.rows(now, SystemTime::now()),
            pieces: Arc::from(pieces),
            web_seeds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::PeerId;

    fn row(name: &str, rev: u64) -> TorrentRow {
        TorrentRow {
            name: name.into(),
            rev,
            ..TorrentRow::default()
        }
    }

    #[test]
    fn an_unchanged_row_is_the_same_arc_and_a_changed_one_the_next_revision() {
        let mut c = RowCache::default();
        assert_eq!(c.rev(), 0);
        let a = c.offer(row("a", c.rev()));
        assert_eq!(a.rev, 1);
        let again = c.offer(row("a", c.rev()));
        assert!(Arc::ptr_eq(&a, &again), "equal rows share the Arc");
        let b = c.offer(row("b", c.rev()));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!((b.rev, c.rev()), (2, 2));
    }

    #[test]
    fn piece_states_mark_verified_and_partial_pieces() {
        let mut have = Bitfield::new(4);
        have.set(0);
        let s = piece_states(4, &have, [2, 9].into_iter());
        assert_eq!(
            s,
            [
                PieceState::Have,
                PieceState::Missing,
                PieceState::Downloading,
                PieceState::Missing
            ]
        );
    }

    #[test]
    fn source_counts_list_sources_with_known_or_connected_peers_in_order() {
        let known: HashMap<PeerSource, u32> = [(PeerSource::Dht, 3), (PeerSource::Tracker, 5)]
            .into_iter()
            .collect();
        let connected = [
            PeerRow {
                source: PeerSource::Incoming,
                ..peer_row_of(PeerSource::Incoming)
            },
            peer_row_of(PeerSource::Tracker),
        ];
        let c = source_counts(&known, &connected, |_| false);
        let got: Vec<(PeerSource, u32, u32)> =
            c.iter().map(|c| (c.source, c.known, c.connected)).collect();
        assert_eq!(
            got,
            [
                (PeerSource::Tracker, 5, 1),
                (PeerSource::Incoming, 0, 1),
                (PeerSource::Dht, 3, 0)
            ]
        );
    }

    fn peer_row_of(source: PeerSource) -> PeerRow {
        let info = PeerInfo::new(
            "127.0.0.1:6881".parse().unwrap(),
            true,
            PeerId(*b"-RA0001-abcdefghijkl"),
            source,
            0,
        );
        peer_row(&info, &mut Default::default(), Instant::now(), 10, false)
    }

    #[test]
    fn a_peer_row_shows_its_flags_progress_and_counters() {
        let info = PeerInfo::new(
            "127.0.0.1:6881".parse().unwrap(),
            false,
            PeerId(*b"-RA0001-abcdefghijkl"),
            PeerSource::Incoming,
            0,
        );
        info.pieces.store(5, Ordering::Relaxed);
        info.downloaded.store(4_096, Ordering::Relaxed);
        info.peer_interested.store(true, Ordering::Relaxed);
        *info.client.lock().unwrap() = Some("libtorrent/2.0".into());
        let r = peer_row(&info, &mut Default::default(), Instant::now(), 10, true);
        assert_eq!(r.client, "libtorrent/2.0");
        assert!(r.flags.incoming && r.flags.optimistic && r.flags.peer_interested);
        assert!(r.flags.am_choking && !r.flags.am_interested);
        assert_eq!(r.progress, 0.5);
        assert_eq!((r.downloaded, r.uploaded), (4_096, 0));
        // a torrent of no pieces (a magnet link) shows every peer complete
        let r = peer_row(&info, &mut Default::default(), Instant::now(), 0, false);
        assert_eq!(r.progress, 1.0);
    }

    #[test]
    fn the_fetch_message_says_pieces_once_the_size_is_known() {
        assert_eq!(
            fetch_message(0, 0, 3),
            "fetching metadata (BEP 9) from 3 peers"
        );
        assert_eq!(
            fetch_message(2, 5, 1),
            "fetching metadata: 2/5 pieces from 1 peers"
        );
    }
}
