use super::*;

fn record(name: &str, added_at: u64) -> TorrentRecord {
    TorrentRecord {
        name: name.into(),
        save_dir: "/data".into(),
        added_at,
        completed_at: None,
        paused: false,
        seed: true,
        error: None,
        total_length: 100_000,
        piece_length: 32_768,
        piece_count: 4,
        payload_size: 100_000,
        trackers: vec![vec!["http://t/announce".into()]],
        private: false,
        multi_file: false,
        files: vec![(100_000, false)],
        have: vec![0b1010_0000],
        file_stats: vec![Some((100_000, 1_700_000_000, 5))],
        file_prio: vec![],
        downloaded: 5,
        uploaded: 7,
        down_limit: 0,
        up_limit: 0,
        magnet: None,
        peers: vec![],
        added_seq: 0,
        goals: Default::default(),
        manage: Default::default(),
        activity: Default::default(),
        display_name: None,
        web_seeds: None,
        info_hash_v2: None,
    }
}

#[test]
fn magnet_records_and_format_1_records() {
    // a magnet link still fetching its metadata: no geometry
    let mut m = record("m", 2);
    m.total_length = 0;
    m.piece_length = 0;
    m.piece_count = 0;
    m.payload_size = 0;
    m.files.clear();
    m.have.clear();
    m.file_stats.clear();
    m.magnet = Some("magnet:?xt=urn:btih:0101010101010101010101010101010101010101".into());
    assert_eq!(TorrentRecord::decode(&m.encode()).unwrap(), m);
    // pieces in a magnet record: damaged
    let mut bad = record("b", 3);
    bad.magnet = m.magnet.clone();
    assert!(TorrentRecord::decode(&bad.encode()).is_err());
    // format 2 (no kept peers nor sequence) still reads
    let mut v2 = vec![2u8];
    v2 = postcard::to_extend(&m, v2).unwrap();
    v2 = postcard::to_extend(&m.magnet, v2).unwrap();
    assert_eq!(TorrentRecord::decode(&v2).unwrap(), m);
    // format 1 (no magnet field) still reads
    let r = record("old", 4);
    let mut v1 = vec![1u8];
    v1 = postcard::to_extend(&r, v1).unwrap();
    assert_eq!(TorrentRecord::decode(&v1).unwrap(), r);
}

#[test]
fn format_4_records_read_with_default_management_and_format_5_keeps_it() {
    let mut r = record("g", 5);
    r.goals.seeded_secs = 99;
    let mut v4 = vec![4u8];
    v4 = postcard::to_extend(&r, v4).unwrap();
    v4 = postcard::to_extend(&r.magnet, v4).unwrap();
    v4 = postcard::to_extend(&(&r.peers, r.added_seq), v4).unwrap();
    v4 = postcard::to_extend(&r.goals, v4).unwrap();
    let back = TorrentRecord::decode(&v4).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.manage, ManageRecord::default());
    assert_eq!(
        back.manage.queue_pos, None,
        "older records have no queue place"
    );
    r.manage = ManageRecord {
        queue_pos: Some(12),
        forced: true,
        category: "films/4k".into(),
        tags: vec!["cross-seed".into(), "a b".into()],
        auto_managed: true,
        final_dir: Some("/srv/films".into()),
        sequential: true,
        first_last: true,
        unverified: vec![0b0101_0000],
    };
    assert_eq!(TorrentRecord::decode(&r.encode()).unwrap(), r);
    // format 5 (no activity) still reads, with none counted
    let mut v5 = vec![5u8];
    v5 = postcard::to_extend(&r, v5).unwrap();
    v5 = postcard::to_extend(&r.magnet, v5).unwrap();
    v5 = postcard::to_extend(&(&r.peers, r.added_seq), v5).unwrap();
    v5 = postcard::to_extend(&r.goals, v5).unwrap();
    v5 = postcard::to_extend(&r.manage, v5).unwrap();
    assert_eq!(TorrentRecord::decode(&v5).unwrap(), r);
    // format 6 keeps the inactive seeding time
    r.activity.inactive_secs = 4_321;
    assert_eq!(TorrentRecord::decode(&r.encode()).unwrap(), r);
    // format 6 (no name given after the activity, no web seeds, no v2 hash) still reads,
    // with none
    let mut v6 = r.encode();
    assert_eq!(v6.pop(), Some(0), "a None is one byte: the v2 info hash");
    assert_eq!(v6.pop(), Some(0), "the web seeds");
    assert_eq!(v6.pop(), Some(0), "and the name given");
    v6[0] = 6;
    assert_eq!(TorrentRecord::decode(&v6).unwrap(), r);
    assert_eq!(TorrentRecord::decode(&v6).unwrap().web_seeds, None);
    // format 7 keeps a name given (and knows no web seeds)
    r.display_name = Some("My Show".into());
    let mut v7 = r.encode();
    assert_eq!(v7.pop(), Some(0), "no v2 info hash");
    assert_eq!(v7.pop(), Some(0), "no web seeds known");
    v7[0] = 7;
    assert_eq!(TorrentRecord::decode(&v7).unwrap(), r);
    assert_eq!(TorrentRecord::decode(&r.encode()).unwrap(), r);
    // format 8 (web seeds after the name, as main wrote it; no v2 info hash) still reads
    r.web_seeds = Some(vec!["http://127.0.0.1:8/a b/".into(), "https://h/f".into()]);
    let mut v8 = r.encode();
    assert_eq!(v8.pop(), Some(0), "no v2 info hash");
    v8[0] = 8;
    assert_eq!(TorrentRecord::decode(&v8).unwrap(), r);
    // format 9 keeps the v2 info hash of a v2-only or hybrid torrent (BEP 52) after them
    r.info_hash_v2 = Some([0xab; 32]);
    assert_eq!(TorrentRecord::decode(&r.encode()).unwrap(), r);
    // and the web seeds known to be none, or not known
    r.web_seeds = Some(Vec::new());
    assert_eq!(TorrentRecord::decode(&r.encode()).unwrap(), r);
    r.web_seeds = None;
    assert_eq!(TorrentRecord::decode(&r.encode()).unwrap(), r);
    r.info_hash_v2 = None;
    r.display_name = None;
    r.activity = ActivityRecord::default();
    // unchecked pieces of another length than the bitfield: damaged
    r.manage.unverified = vec![0, 0];
    assert!(matches!(
        TorrentRecord::decode(&r.encode()),
        Err(RecordError::Damaged(_))
    ));
}

fn ih(b: u8) -> InfoHash {
    InfoHash([b; 20])
}

#[test]
fn records_round_trip_and_bad_ones_are_refused_not_panicked() {
    let r = record("a", 1);
    let bytes = r.encode();
    assert_eq!(TorrentRecord::decode(&bytes).unwrap(), r);
    assert_eq!(TorrentRecord::decode(&[]), Err(RecordError::Empty));
    let mut newer = bytes.clone();
    newer[0] = RECORD_FORMAT + 1;
    assert_eq!(
        TorrentRecord::decode(&newer),
        Err(RecordError::Newer(RECORD_FORMAT + 1))
    );
    // every truncation and a run of garbage: an error, never a panic
    for cut in 1..bytes.len() {
        assert!(TorrentRecord::decode(&bytes[..cut]).is_err(), "cut {cut}");
    }
    let mut x = 12345u32;
    for _ in 0..2000 {
        let len = (x % 300) as usize;
        let junk: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let mut j = vec![RECORD_FORMAT];
        j.extend(junk);
        let _ = TorrentRecord::decode(&j);
    }
    // decodes but lies about its shape
    let mut lie = record("b", 2);
    lie.have = vec![0; 9];
    assert!(matches!(
        TorrentRecord::decode(&lie.encode()),
        Err(RecordError::Damaged(_))
    ));
}

#[test]
fn a_record_gives_its_geometry_and_file_layout() {
    let mut r = record("a", 1);
    r.files = vec![(60_000, false), (1_000, true), (39_000, false)];
    r.file_stats = vec![None; 3];
    let geo = r.geometry().unwrap();
    assert_eq!(
        (geo.piece_count(), geo.last_piece_length()),
        (4, 100_000 - 3 * 32_768)
    );
    let layout = r.layout().unwrap();
    assert_eq!(layout.total_length(), 100_000);
    let last = layout.spans()[2];
    assert_eq!(
        (last.offset, last.length, last.pad),
        (61_000, 39_000, false)
    );
    assert!(layout.spans()[1].pad);
    assert_eq!(TorrentRecord::decode(&r.encode()).unwrap(), r);
    // lengths that overflow or do not add up: damaged, not a panic
    let mut huge = record("h", 2);
    huge.files = vec![(u64::MAX, false), (2, false)];
    assert!(huge.layout().is_none());
    assert!(matches!(
        TorrentRecord::decode(&huge.encode()),
        Err(RecordError::Damaged(_))
    ));
    let mut short = record("s", 3);
    short.files = vec![(99_999, false)];
    assert!(TorrentRecord::decode(&short.encode()).is_err());
    let mut no_geo = record("g", 4);
    no_geo.piece_count = 5;
    assert!(no_geo.geometry().is_none());
}

#[test]
fn store_keeps_records_in_order_and_rebuilds_from_torrents_when_damaged() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, loaded) = StateStore::open(dir.path()).unwrap();
        assert!(loaded.torrents.is_empty());
        store
            .write(vec![
                Update::Put(ih(2), Box::new(record("second", 20))),
                Update::Put(ih(1), Box::new(record("first", 10))),
                Update::Put(ih(3), Box::new(record("third", 30))),
            ])
            .unwrap();
        store.write(vec![Update::Delete(ih(3))]).unwrap();
        std::fs::write(store.torrent_path(&ih(1)), b"d4:infod4:name1:xee").unwrap();
        // a second process on the same state is refused clearly
        let e = StateStore::open(dir.path()).unwrap_err();
        assert!(matches!(e, StateError::Locked { .. }), "{e}");
        assert!(e.to_string().contains("already running"), "{e}");
    }
    let (store, loaded) = StateStore::open(dir.path()).unwrap();
    let names: Vec<String> = loaded
        .torrents
        .iter()
        .map(|s| match s {
            Stored::Record(_, r) => r.name.clone(),
            Stored::NeedsRecheck { .. } => "?".into(),
        })
        .collect();
    assert_eq!(names, vec!["first", "second"]);
    assert!(loaded.warnings.is_empty());
    drop(store);

    // garbage over the database: moved aside, rebuilt from the kept .torrent files
    let db = dir.path().join("state.redb");
    let len = std::fs::metadata(&db).unwrap().len() as usize;
    std::fs::write(&db, vec![0x5a; len.max(4096)]).unwrap();
    let (_store, loaded) = StateStore::open(dir.path()).unwrap();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].contains("moved to"),
        "{:?}",
        loaded.warnings
    );
    assert!(matches!(
        loaded.torrents.as_slice(),
        [Stored::NeedsRecheck { info_hash, .. }] if *info_hash == ih(1)
    ));
    let aside = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains("damaged"));
    assert!(aside, "the damaged file is kept");
}

#[test]
fn truncated_database_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = StateStore::open(dir.path()).unwrap();
        let updates = (0..50u8)
            .map(|i| Update::Put(ih(i), Box::new(record(&format!("t{i}"), u64::from(i)))))
            .collect();
        store.write(updates).unwrap();
    }
    let db = dir.path().join("state.redb");
    let len = std::fs::metadata(&db).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    // either repaired with what survives, or moved aside: never a panic or an error
    let (_store, loaded) = StateStore::open(dir.path()).unwrap();
    assert!(loaded.torrents.len() <= 50);
}

#[test]
fn a_torrent_removed_and_added_again_in_one_batch_keeps_its_record_and_torrent_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = StateStore::open(dir.path()).unwrap();
    store
        .write(vec![Update::Put(ih(1), Box::new(record("a", 1)))])
        .unwrap();
    store.put_metainfo(&ih(1), b"d4:infod4:name1:aee").unwrap();
    // removed, then added again before the checkpoint: the batch holds both, put last
    store
        .write(vec![
            Update::Put(ih(1), Box::new(record("a again", 2))),
            Update::Delete(ih(1)),
        ])
        .unwrap();
    assert!(
        store.torrent_path(&ih(1)).exists(),
        "the re-added torrent's .torrent copy is kept"
    );
    drop(store);
    let (_store, loaded) = StateStore::open(dir.path()).unwrap();
    assert!(matches!(
        loaded.torrents.as_slice(),
        [Stored::Record(h, r)] if *h == ih(1) && r.name == "a again"
    ));
}

#[test]
fn kept_peers_and_the_added_sequence_round_trip() {
    let mut r = record("p", 5);
    r.peers = vec![
        KeptPeer {
            addr: "127.0.0.1:6881".parse().unwrap(),
            origin: PeerOrigin::Magnet,
        },
        KeptPeer {
            addr: "[::1]:51413".parse().unwrap(),
            origin: PeerOrigin::Manual,
        },
    ];
    r.added_seq = 42;
    let back = TorrentRecord::decode(&r.encode()).unwrap();
    assert_eq!(back.peers, r.peers);
    assert_eq!(back.added_seq, 42);
    // a record cut inside the kept peers is damaged, not read short
    let bytes = r.encode();
    assert!(TorrentRecord::decode(&bytes[..bytes.len() - 2]).is_err());
}

#[test]
fn added_sequence_numbers_only_grow() {
    let a = next_added_seq();
    let b = next_added_seq();
    let c = next_added_seq();
    assert!(a < b && b < c, "{a} {b} {c}");
}

#[test]
fn torrents_added_in_the_same_second_come_back_in_the_order_they_were_added() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = StateStore::open(dir.path()).unwrap();
        // info hashes in the reverse order of adding: the key order must not win
        let mut updates = Vec::new();
        for (i, b) in [9u8, 5, 1].into_iter().enumerate() {
            let mut r = record(&format!("t{i}"), 1_700_000_000);
            r.added_seq = next_added_seq();
            updates.push(Update::Put(ih(b), Box::new(r)));
        }
        store.write(updates).unwrap();
    }
    let (_store, loaded) = StateStore::open(dir.path()).unwrap();
    let names: Vec<String> = loaded
        .torrents
        .iter()
        .map(|s| match s {
            Stored::Record(_, r) => r.name.clone(),
            Stored::NeedsRecheck { why, .. } => panic!("{why}"),
        })
        .collect();
    assert_eq!(names, ["t0", "t1", "t2"]);
}
