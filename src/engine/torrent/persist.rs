//! A torrent and its record in the state store ([`TorrentRecord`]): the record to write at a
//! checkpoint, a torrent listed again from its record at start-up (its metainfo loaded
//! only when needed), and the mark that says the record changed since the last
//! checkpoint.

use std::sync::Arc;

use super::info::Info;
use super::state::{Input, Lifecycle};
use super::summary::Summary;
use super::wanted::Wanted;
use super::{Env, Torrent};
use crate::api::{EventKind, EventLevel, TorrentError, TorrentErrorKind, TorrentId};
use crate::metainfo::{InfoHash, Magnet};
use crate::piece::Bitfield;
use crate::state::{FileStat, TorrentRecord};
use crate::storage::disk::TorrentDisk;

impl Torrent {
    /// A torrent restored from the state store: listed at once, its metainfo loaded when
    /// needed. `trusted`: the files on disk still match the record (sizes and times), so its
    /// verified pieces count without a check. Not started (the session resumes it unless
    /// the record says paused or failed).
    pub fn restore(
        id: TorrentId,
        info_hash: InfoHash,
        r: &TorrentRecord,
        upload_slots: usize,
    ) -> Torrent {
        let mut sum = summary_of(info_hash, r);
        let link = r.magnet.as_deref().and_then(|l| Magnet::parse(l).ok());
        if let Some(link) = &link
            && sum.trackers.is_empty()
        {
            // BEP 12: each tracker of a magnet link is a tier of its own (a record keeps
            // them so, edited or not; one without any falls back on the link's)
            sum.trackers = link.trackers.iter().map(|u| vec![u.clone()]).collect();
        }
        let mut t = Torrent::blank(id, sum, r.save_dir.clone(), r.seed, upload_slots);
        t.kept_peers = r.peers.clone();
        t.added_seq = r.added_seq;
        if let Some(link) = link {
            // a record written before the peers were kept: the link's
            for k in super::sources::kept_of(&link) {
                if !t.kept_peers.iter().any(|p| p.addr == k.addr) {
                    t.kept_peers.push(k);
                }
            }
            t.info = Info::Magnet(link);
        }
        t.added_at = r.added_at;
        t.goals.limits = crate::api::ShareLimits {
            ratio: r.goals.ratio(),
            seeding_minutes: r.goals.seeding_minutes,
            inactive_minutes: r.goals.inactive_minutes,
        }
        .sanitized();
        t.goals.seeded_before = r.goals.seeded_secs;
        t.goals.inactive_before = r.activity.inactive_secs;
        // a goal's stop holds only a torrent that stays paused (the user's pause)
        t.goals.stopped = r.goals.stopped.clone().filter(|_| r.paused);
        t.manage = r.manage.clone();
        t.display_name = r.display_name.clone();
        t.completed_at = r.completed_at;
        t.carried = (r.downloaded, r.uploaded, 0);
        t.limits.download.set_rate(r.down_limit);
        t.limits.upload.set_rate(r.up_limit);
        t.file_stats = r.file_stats.clone();
        t.wanted = Wanted::from_levels(&r.file_prio, &t.sum);
        t.have = Bitfield::from_payload(&r.have, r.piece_count)
            .unwrap_or_else(|_| Bitfield::new(r.piece_count));
        // unchecked pieces are had ones: a mark on another (a damaged record) is dropped
        t.manage.unverified = super::unchecked::within(&r.manage.unverified, &t.have);
        t.life = match &r.error {
            Some((kind, message)) => Lifecycle::Error(TorrentError {
                kind: error_kind_of(*kind),
                message: message.clone(),
            }),
            None => Lifecycle::Restoring { paused: r.paused },
        };
        t.persist_dirty = false;
        t
    }

    /// The resume data checked out against the files on disk: trust the verified pieces
    /// (no check), or forget them (a check finds them again). Then it starts, unless the
    /// record said paused.
    pub fn resume_checked(&mut self, trusted: bool, why: &str, env: &mut Env<'_>) {
        if self.life.error().is_some() {
            // a failed torrent stays failed and keeps showing its verified pieces; a
            // resume rechecks them if the files changed since they were recorded
            if !trusted && self.have.count() > 0 {
                self.stale_have = true;
                self.log(
                    env,
                    EventLevel::Info,
                    EventKind::Checked,
                    format!("files changed since the last run ({why}); resuming rechecks them"),
                );
            }
            return;
        }
        if !trusted && self.have.count() > 0 {
            self.log(
                env,
                EventLevel::Info,
                EventKind::Checked,
                format!("files changed since the last run ({why}); rechecking"),
            );
        }
        if !trusted {
            self.have = Bitfield::new(self.sum.piece_count());
            self.forget_unchecked();
        }
        self.input(Input::ResumeData { trusted }, env);
    }

    /// A restored torrent that was to start found a file that holds its verified pieces
    /// missing or short (`e`, "files missing"): it fails before it announces anything,
    /// keeping its verified pieces (shown; resuming rechecks them).
    pub fn restored_files_missing(&mut self, e: TorrentError, env: &mut Env<'_>) {
        self.log(
            env,
            EventLevel::Error,
            EventKind::DiskError,
            e.message.clone(),
        );
        self.input(Input::Failed(e), env);
    }

    /// The record to keep in the state store now (`have`: the verified pieces; the caller
    /// makes sure their bytes are on disk before writing it).
    pub fn record(&self) -> TorrentRecord {
        let (downloaded, uploaded, _) = self.totals();
        let geo = self.sum.geometry;
        TorrentRecord {
            name: self.sum.name.clone(),
            save_dir: self.save_dir.clone(),
            added_at: self.added_at,
            completed_at: self.completed_at,
            // paused by the user (the disk guard's pause is taken again if still needed)
            paused: matches!(
                self.life,
                Lifecycle::Paused { guard: None, .. }
                    | Lifecycle::Restoring { paused: true }
                    | Lifecycle::QueuedForCheck {
                        then_pause: true,
                        ..
                    }
                    | Lifecycle::Checking {
                        then_pause: true,
                        ..
                    }
            ),
            seed: self.seed,
            error: self
                .life
                .error()
                .map(|e| (error_kind_code(e.kind), e.message.clone())),
            total_length: geo.total_length(),
            piece_length: geo.piece_length(),
            piece_count: geo.piece_count(),
            payload_size: self.sum.payload_size,
            trackers: self.sum.trackers.clone(),
            private: self.sum.private,
            multi_file: self.sum.multi_file,
            files: self
                .sum
                .files
                .spans()
                .iter()
                .map(|f| (f.length, f.pad))
                .collect(),
            have: self.verified().as_bytes().to_vec(),
            file_stats: self.file_stats.clone(),
            file_prio: self.wanted.levels(),
            downloaded,
            uploaded,
            down_limit: self.limits.download.rate(),
            // its own: a goal's alternative rate is found again when it seeds
            up_limit: self.own_upload_limit(),
            magnet: self.info.magnet().map(Magnet::to_link),
            peers: self.kept_peers.clone(),
            added_seq: self.added_seq,
            goals: crate::state::GoalRecord {
                ratio_bits: self.goals.limits.ratio.to_bits(),
                seeding_minutes: self.goals.limits.seeding_minutes,
                inactive_minutes: self.goals.limits.inactive_minutes,
                seeded_secs: self.goals.seeded(std::time::Instant::now()).as_secs(),
                stopped: self.goals.stopped.clone(),
            },
            manage: crate::state::ManageRecord {
                unverified: self.unchecked_record(),
                ..self.manage.clone()
            },
            web_seeds: self.sum.web_seeds.clone(),
            activity: crate::state::ActivityRecord {
                inactive_secs: self.goals.inactive(std::time::Instant::now()).as_secs(),
            },
            display_name: self.display_name.clone(),
            info_hash_v2: self.sum.info_hash_v2,
        }
    }

    /// Whether the record changed since the last checkpoint.
    pub fn persist_dirty(&self) -> bool {
        self.persist_dirty
    }

    /// Whether the record changed since the last checkpoint (clears the mark).
    pub fn take_persist_dirty(&mut self) -> bool {
        std::mem::take(&mut self.persist_dirty)
    }

    /// Mark the record as needing a write (a checkpoint failed).
    pub fn mark_persist_dirty(&mut self) {
        self.persist_dirty = true;
    }

    /// The storage to sync before a checkpoint records the verified pieces.
    pub fn storage_for_checkpoint(&self) -> Option<Arc<TorrentDisk>> {
        self.life.disk().cloned()
    }

    /// File stats measured by a checkpoint.
    pub fn set_file_stats(&mut self, stats: Vec<FileStat>) {
        self.file_stats = stats;
    }
}

/// The summary kept in record `r` of the torrent `info_hash` (the file offsets follow
/// from the lengths; a record with a damaged geometry gives an empty one).
pub fn summary_of(info_hash: InfoHash, r: &TorrentRecord) -> Summary {
    Summary {
        info_hash,
        info_hash_v2: r.info_hash_v2,
        name: r.name.clone(),
        geometry: r.geometry().unwrap_or_default(),
        payload_size: r.payload_size,
        trackers: r.trackers.clone(),
        private: r.private,
        multi_file: r.multi_file,
        files: r.layout().unwrap_or_default(),
        web_seeds: r.web_seeds.clone(),
    }
}

/// The stored code of an error kind.
pub fn error_kind_code(k: TorrentErrorKind) -> u8 {
    match k {
        TorrentErrorKind::NoSpace => 1,
        TorrentErrorKind::PermissionDenied => 2,
        TorrentErrorKind::ReadOnly => 3,
        TorrentErrorKind::FilesMissing => 4,
        TorrentErrorKind::Storage => 5,
        TorrentErrorKind::Internal => 6,
        TorrentErrorKind::BadMetadata => 7,
        TorrentErrorKind::FolderNotCreated => 8,
    }
}

/// The error kind of a stored code (unknown codes: internal).
pub fn error_kind_of(c: u8) -> TorrentErrorKind {
    match c {
        1 => TorrentErrorKind::NoSpace,
        2 => TorrentErrorKind::PermissionDenied,
        3 => TorrentErrorKind::ReadOnly,
        4 => TorrentErrorKind::FilesMissing,
        5 => TorrentErrorKind::Storage,
        7 => TorrentErrorKind::BadMetadata,
        8 => TorrentErrorKind::FolderNotCreated,
        _ => TorrentErrorKind::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of two files (100 + 200 bytes, pieces of 64), pieces 0 and 4 verified.
    fn record() -> TorrentRecord {
        TorrentRecord {
            name: "two files".into(),
            save_dir: "/srv/dl".into(),
            added_at: 1_700_000_000,
            completed_at: None,
            paused: true,
            seed: true,
            error: None,
            total_length: 300,
            piece_length: 64,
            piece_count: 5,
            payload_size: 300,
            trackers: vec![vec!["http://127.0.0.1:1/announce".into()]],
            private: false,
            multi_file: true,
            files: vec![(100, false), (200, false)],
            have: vec![0b1000_1000],
            file_stats: vec![Some((100, 1, 2)), None],
            file_prio: vec![0, 3],
            downloaded: 1_000,
            uploaded: 2_000,
            down_limit: 10_000,
            up_limit: 20_000,
            magnet: None,
            peers: vec![crate::state::KeptPeer {
                addr: "127.0.0.2:6881".parse().unwrap(),
                origin: crate::state::PeerOrigin::Manual,
            }],
            added_seq: 7,
            goals: crate::state::GoalRecord {
                ratio_bits: 2.0f64.to_bits(),
                seeding_minutes: 60,
                inactive_minutes: -1,
                seeded_secs: 3_600,
                stopped: Some("ratio 2.00 reached".into()),
            },
            manage: crate::state::ManageRecord {
                queue_pos: Some(3),
                forced: true,
                category: "tv/hd".into(),
                tags: vec!["x".into(), "y z".into()],
                auto_managed: true,
                final_dir: Some("/srv/done".into()),
                sequential: true,
                first_last: false,
                unverified: vec![0b1000_0000],
            },
            activity: crate::state::ActivityRecord { inactive_secs: 600 },
            display_name: Some("renamed".into()),
            web_seeds: Some(vec!["http://127.0.0.1:8/pub/".into()]),
            info_hash_v2: Some([9; 32]),
        }
    }

    fn restore(r: &TorrentRecord) -> Torrent {
        Torrent::restore(TorrentId(1), InfoHash([1; 20]), r, 4)
    }

    #[test]
    fn a_restored_torrent_writes_back_the_same_record() {
        let r = record();
        let t = restore(&r);
        assert_eq!(t.record(), r);
        assert!(!t.persist_dirty(), "nothing changed since it was read");
        assert_eq!(t.life, Lifecycle::Restoring { paused: true });
        assert_eq!(t.have.count(), 2);
    }

    #[test]
    fn unchecked_marks_count_only_for_had_pieces() {
        // pieces 0, 1 and 4 marked; 0 and 4 had (a damaged record marks one more)
        let mut r = record();
        r.manage.unverified = vec![0b1100_1000];
        let t = restore(&r);
        assert_eq!(t.unchecked_count(), 2);
        assert_eq!(t.record().manage.unverified, vec![0b1000_1000]);
        // bytes of another length: none
        r.manage.unverified = vec![0xff, 0xff];
        assert_eq!(restore(&r).unchecked_count(), 0);
        assert!(restore(&r).record().manage.unverified.is_empty());
    }

    #[test]
    fn the_summary_places_files_one_after_another() {
        let s = summary_of(InfoHash([1; 20]), &record());
        assert_eq!(
            s.files
                .spans()
                .iter()
                .map(|f| (f.offset, f.length))
                .collect::<Vec<_>>(),
            [(0, 100), (100, 200)]
        );
        assert_eq!(s.piece_count(), 5);
        assert_eq!(s.total_length(), 300);
    }

    #[test]
    fn a_failed_torrent_comes_back_failed_with_its_message() {
        let mut r = TorrentRecord {
            error: Some((
                error_kind_code(TorrentErrorKind::NoSpace),
                "disk full".into(),
            )),
            paused: false,
            ..record()
        };
        // a goal's stop holds only a paused torrent
        r.goals.stopped = None;
        let t = restore(&r);
        let e = t.life.error().expect("restored as failed");
        assert_eq!(e.kind, TorrentErrorKind::NoSpace);
        assert_eq!(e.message, "disk full");
        assert_eq!(t.record(), r);
    }

    #[test]
    fn a_magnet_record_comes_back_fetching_with_the_links_trackers() {
        let link = "magnet:?xt=urn:btih:0101010101010101010101010101010101010101\
                    &dn=m&tr=http%3A%2F%2F127.0.0.1%3A1%2Fa&tr=http%3A%2F%2F127.0.0.1%3A2%2Fb";
        let canonical = Magnet::parse(link).unwrap().to_link();
        let r = TorrentRecord {
            total_length: 0,
            piece_length: 0,
            piece_count: 0,
            payload_size: 0,
            files: Vec::new(),
            have: Vec::new(),
            file_stats: Vec::new(),
            file_prio: Vec::new(),
            magnet: Some(canonical.clone()),
            trackers: Vec::new(),
            ..record()
        };
        let t = restore(&r);
        assert!(t.awaiting_metadata());
        assert_eq!(t.sum.trackers.len(), 2, "one tier per tracker of the link");
        // a record's own list (edited trackers) wins over the link's
        let edited = vec![vec!["udp://127.0.0.1:3/x".to_owned()]];
        let t = restore(&TorrentRecord {
            trackers: edited.clone(),
            ..r.clone()
        });
        assert_eq!(t.sum.trackers, edited);
        assert_eq!(t.record().magnet, Some(canonical));
    }

    #[test]
    fn error_kinds_keep_their_codes() {
        for k in [
            TorrentErrorKind::NoSpace,
            TorrentErrorKind::PermissionDenied,
            TorrentErrorKind::ReadOnly,
            TorrentErrorKind::FilesMissing,
            TorrentErrorKind::Storage,
            TorrentErrorKind::Internal,
            TorrentErrorKind::BadMetadata,
            TorrentErrorKind::FolderNotCreated,
        ] {
            assert_eq!(error_kind_of(error_kind_code(k)), k);
        }
        // codes are what records on disk hold: they never change
        assert_eq!(error_kind_code(TorrentErrorKind::NoSpace), 1);
        assert_eq!(error_kind_code(TorrentErrorKind::BadMetadata), 7);
        assert_eq!(error_kind_of(0), TorrentErrorKind::Internal);
        assert_eq!(error_kind_of(200), TorrentErrorKind::Internal);
    }
}
