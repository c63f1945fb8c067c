use std::path::PathBuf;

use super::*;
use crate::api::{
    Category, FilePriority, FileRow, PeerFlags, PeerRow, PeerSource, PieceState, TorrentState,
    TrackerRow, TrackerStatus,
};

fn row(id: u64, rev: u64) -> Arc<TorrentRow> {
    Arc::new(TorrentRow {
        id: TorrentId(id),
        rev,
        name: format!("debian-12.{id}-amd64-netinst.iso"),
        info_hash: format!("{id:040x}"),
        size: 660 << 20,
        done: rev * 1000,
        pieces_total: 2640,
        state: TorrentState::Downloading,
        down_rate: rev * 10,
        save_path: PathBuf::from("/srv/torrents/downloads"),
        added_at: 1_780_000_000 + id,
        ..TorrentRow::default()
    })
}

fn detail(id: u64, peers: usize, have: usize) -> Arc<TorrentDetail> {
    let mut pieces = vec![PieceState::Have; have];
    pieces.resize(2640, PieceState::Missing);
    Arc::new(TorrentDetail {
        id: TorrentId(id),
        info_hash: format!("{id:040x}"),
        save_path: PathBuf::from("/srv/torrents/downloads"),
        piece_length: 256 << 10,
        peers: (0..peers)
            .map(|i| PeerRow {
                addr: format!("127.0.0.{}:6881", i + 2).parse().unwrap(),
                client: "libtorrent 2.0".into(),
                flags: PeerFlags::default(),
                progress: 0.5,
                down_rate: 1000 * i as u64,
                up_rate: 0,
                downloaded: 0,
                uploaded: 0,
                source: PeerSource::Tracker,
            })
            .collect(),
        files: vec![FileRow {
            path: "a.iso".into(),
            changed: None,
            size: 660 << 20,
            done: 0,
            priority: FilePriority::Normal,
            piece_range: (0, 0),
        }],
        trackers: vec![TrackerRow {
            url: "http://t.example/announce".into(),
            tier: 0,
            status: TrackerStatus::Working,
            message: None,
            last_announce: None,
            next_announce: None,
            seeds: Some(3),
            leechers: Some(1),
            downloaded: None,
            peers: 4,
            announce_url: "http://t.example/announce".into(),
        }],
        pieces: pieces.into(),
        ..TorrentDetail::default()
    })
}

fn snap(seq: u64, rows: Vec<Arc<TorrentRow>>, detail: Option<Arc<TorrentDetail>>) -> Arc<Snapshot> {
    Arc::new(Snapshot {
        seq,
        global: GlobalStats {
            down_rate: seq,
            listen_port: 6881,
            ..GlobalStats::default()
        },
        rows: rows.into(),
        detail,
    })
}

/// Encode `s` after what `enc` sent, through postcard as on the wire, decode it; returns
/// the frame's size in bytes and the decoded snapshot.
fn through(enc: &mut Encoder, dec: &mut Decoder, s: &Arc<Snapshot>) -> (usize, Arc<Snapshot>) {
    let frame = enc.frame(s);
    let bytes = postcard::to_stdvec(&frame).unwrap();
    let back: SnapshotFrame = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back, frame);
    let got = dec.apply(back).unwrap();
    assert_eq!(*got, **s, "the decoded snapshot is the engine's");
    (bytes.len(), got)
}

#[test]
fn one_changed_row_of_a_hundred_is_all_that_travels() {
    let rows: Vec<_> = (1..=100).map(|i| row(i, 1)).collect();
    let (mut enc, mut dec) = (Encoder::new(), Decoder::new());
    let (first_len, first) = through(&mut enc, &mut dec, &snap(1, rows.clone(), None));
    let mut next = rows.clone();
    next[41] = row(42, 2);
    let (len, second) = through(&mut enc, &mut dec, &snap(2, next.clone(), None));
    println!("100 torrents: first frame {first_len} bytes, one row changed {len} bytes");
    assert!(
        len < 300,
        "one row and the figures, not the list: {len} bytes"
    );
    assert!(first_len > 30 * len, "{first_len} vs {len}");
    // the unchanged rows are the decoder's own, shared as the engine shares them
    assert!(Arc::ptr_eq(&first.rows[0], &second.rows[0]));
    assert!(!Arc::ptr_eq(&first.rows[41], &second.rows[41]));
    // nothing changed but the figures: the row list itself is shared
    let (len, third) = through(&mut enc, &mut dec, &snap(3, next.clone(), None));
    // the session's figures (rates, counts) and its settings (default folder, goals, queue)
    assert!(len < 64, "{len}");
    assert!(Arc::ptr_eq(&second.rows, &third.rows));
    // a snapshot the same as the last one sent: the figures do not travel either
    let again = Arc::new(Snapshot {
        seq: 4,
        ..(*snap(3, next, None)).clone()
    });
    let frame = enc.frame(&again);
    assert!(frame.global.is_none() && frame.rows.is_empty() && frame.ids.is_none());
}

#[test]
fn added_removed_and_reordered_torrents_send_the_ids() {
    let (mut enc, mut dec) = (Encoder::new(), Decoder::new());
    through(
        &mut enc,
        &mut dec,
        &snap(1, vec![row(1, 1), row(2, 1), row(3, 1)], None),
    );
    // a new torrent: the ids and only its row
    let s2 = snap(2, vec![row(1, 1), row(2, 1), row(3, 1), row(4, 1)], None);
    let mut probe = Encoder {
        last: Some(snap(1, vec![row(1, 1), row(2, 1), row(3, 1)], None)),
    };
    let f = probe.frame(&s2);
    assert_eq!(f.rows.iter().map(|r| r.id.0).collect::<Vec<_>>(), [4]);
    assert_eq!(f.ids.as_ref().map(Vec::len), Some(4));
    through(&mut enc, &mut dec, &s2);
    // one removed, two swapped, one changed
    through(
        &mut enc,
        &mut dec,
        &snap(3, vec![row(3, 1), row(1, 2), row(4, 1)], None),
    );
    through(&mut enc, &mut dec, &snap(4, Vec::new(), None));
    through(&mut enc, &mut dec, &snap(5, vec![row(9, 1)], None));
}

#[test]
fn the_detail_sends_only_its_parts_that_changed() {
    let rows = vec![row(1, 1), row(2, 1)];
    let (mut enc, mut dec) = (Encoder::new(), Decoder::new());
    through(&mut enc, &mut dec, &snap(1, rows.clone(), None));
    let (full, _) = through(
        &mut enc,
        &mut dec,
        &snap(2, rows.clone(), Some(detail(1, 20, 100))),
    );
    // the peers' rates moved; files, trackers, pieces did not
    let d = detail(1, 21, 100);
    let s = snap(3, rows.clone(), Some(d));
    let frame = enc.frame(&s);
    let DetailFrame::Changed { kept, .. } = &frame.detail else {
        panic!("{:?}", frame.detail);
    };
    assert_eq!(
        *kept,
        KEEP_FILES | KEEP_TRACKERS | KEEP_PIECES | KEEP_SOURCES
    );
    enc.last = Some(snap(2, rows.clone(), Some(detail(1, 20, 100))));
    let (peers_only, _) = through(&mut enc, &mut dec, &s);
    // pieces came in: only the piece map's runs and the figures
    let (pieces, _) = through(
        &mut enc,
        &mut dec,
        &snap(4, rows.clone(), Some(detail(1, 21, 900))),
    );
    println!("detail: whole {full} bytes, peers changed {peers_only}, pieces changed {pieces}");
    assert!(
        pieces < 200,
        "the runs and the fixed fields, no peers: {pieces}"
    );
    // the same detail again, then another torrent's, then none
    through(
        &mut enc,
        &mut dec,
        &snap(5, rows.clone(), Some(detail(1, 21, 900))),
    );
    through(
        &mut enc,
        &mut dec,
        &snap(6, rows.clone(), Some(detail(2, 3, 5))),
    );
    through(&mut enc, &mut dec, &snap(7, rows, None));
}

#[test]
fn categories_and_tags_travel_when_they_change() {
    let (mut enc, mut dec) = (Encoder::new(), Decoder::new());
    let mut s = (*snap(1, vec![row(1, 1)], None)).clone();
    s.global.tags = vec!["hd".to_owned()].into();
    through(&mut enc, &mut dec, &Arc::new(s.clone()));
    s.seq = 2;
    s.global.categories = vec![CategoryInfo {
        category: Category {
            name: "tv".into(),
            ..Category::default()
        },
        save_path: "/srv/tv".into(),
        download_path: None,
    }]
    .into();
    let frame = enc.frame(&Arc::new(s.clone()));
    let g = frame.global.as_ref().unwrap();
    assert!(g.categories.is_some() && g.tags.is_none(), "{g:?}");
    enc.reset();
    dec.expect_whole();
    through(&mut enc, &mut dec, &Arc::new(s));
}

#[test]
fn a_difference_that_does_not_fit_is_refused_and_a_whole_snapshot_mends_it() {
    let (mut enc, mut dec) = (Encoder::new(), Decoder::new());
    // a difference before any whole snapshot
    let mut other = Encoder::new();
    other.frame(&snap(1, vec![row(1, 1)], None));
    let stray = other.frame(&snap(2, vec![row(1, 2)], None));
    assert!(dec.apply(stray).is_err());
    let (_, got) = through(&mut enc, &mut dec, &snap(1, vec![row(1, 1)], None));
    // a row the copy never had, with no ids; kept detail parts of a torrent not shown
    let bad = SnapshotFrame {
        seq: 9,
        ids: Some(vec![TorrentId(1), TorrentId(5)]),
        ..SnapshotFrame::default()
    };
    assert!(dec.apply(bad).is_err());
    let bad = SnapshotFrame {
        seq: 9,
        detail: DetailFrame::Changed {
            detail: Box::new((*detail(1, 1, 1)).clone()),
            kept: KEEP_PEERS,
        },
        ..SnapshotFrame::default()
    };
    assert!(dec.apply(bad).is_err());
    assert!(Arc::ptr_eq(dec.current(), &got), "nothing changed");
    // the client asks again: a whole one
    dec.expect_whole();
    enc.reset();
    through(
        &mut enc,
        &mut dec,
        &snap(10, vec![row(1, 3), row(2, 1)], Some(detail(2, 2, 2))),
    );
}
