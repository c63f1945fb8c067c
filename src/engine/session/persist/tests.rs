use super::*;

fn ih(b: u8) -> InfoHash {
    InfoHash([b; 20])
}

/// A magnet link's record: no files, no pieces.
fn record(name: &str, added_at: u64) -> TorrentRecord {
    TorrentRecord {
        name: name.into(),
        save_dir: "/data".into(),
        added_at,
        completed_at: None,
        paused: false,
        seed: true,
        error: None,
        total_length: 0,
        piece_length: 0,
        piece_count: 0,
        payload_size: 0,
        trackers: vec![],
        private: false,
        multi_file: false,
        files: vec![],
        have: vec![],
        file_stats: vec![],
        file_prio: vec![],
        downloaded: 0,
        uploaded: 0,
        down_limit: 0,
        up_limit: 0,
        magnet: Some(format!("magnet:?xt=urn:btih:{}", "01".repeat(20))),
        peers: Vec::new(),
        added_seq: 0,
        goals: Default::default(),
        manage: Default::default(),
        activity: Default::default(),
        display_name: None,
        web_seeds: None,
        info_hash_v2: None,
    }
}

fn limits(download: u64) -> SessionLimits {
    SessionLimits {
        download,
        upload: 0,
        config_download: 0,
        config_upload: 0,
        alt_speed: download == 1 << 20,
    }
}

fn job(id: u64, name: &str) -> RecordJob {
    RecordJob {
        id: TorrentId(id),
        info_hash: ih(id as u8),
        record: record(name, id),
        disk: None,
    }
}

#[test]
fn without_a_store_nothing_is_kept_or_written() {
    let mut p = Persist::new(None);
    assert!(!p.is_on());
    assert!(!p.removed(ih(1)), "no checkpoint wanted");
    assert!(!p.limits_set());
    assert!(p.batch(vec![job(1, "a")], limits(5)).is_none());
    assert!(!p.busy());
}

#[test]
fn a_batch_carries_deletes_and_live_limits_once_and_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = StateStore::open(dir.path()).unwrap();
    let mut p = Persist::new(Some(Arc::new(store)));
    // nothing changed: no batch, nothing in flight
    assert!(p.batch(vec![], limits(1)).is_none());
    assert!(!p.busy());
    assert!(p.removed(ih(7)));
    assert!(p.removed(ih(8)));
    // removed and added again before the checkpoint: its delete is dropped
    p.listed(&ih(8));
    assert!(p.limits_set());
    let b = p.batch(vec![], limits(3)).unwrap();
    assert!(p.busy());
    assert_eq!(b.deleted, [ih(7)]);
    assert_eq!(b.limits.map(|l| l.download), Some(3));
    // a write of the limits that failed: they go with the next batch again
    p.written(true, false);
    assert!(!p.busy());
    let b = p.batch(vec![], limits(4)).unwrap();
    assert!(
        b.deleted.is_empty(),
        "the deletes went with the first batch"
    );
    assert_eq!(b.limits.map(|l| l.download), Some(4));
    p.written(true, true);
    assert!(
        p.batch(vec![], limits(5)).is_none(),
        "written: nothing left"
    );
}

#[test]
fn a_batch_writes_records_deletes_and_limits_in_one_go() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = StateStore::open(dir.path()).unwrap();
        store
            .write(vec![Update::Put(ih(9), Box::new(record("old", 1)))])
            .unwrap();
        let mut p = Persist::new(Some(Arc::new(store)));
        p.removed(ih(9));
        p.limits_set();
        let b = p
            .batch(vec![job(2, "b"), job(3, "c")], limits(1 << 20))
            .unwrap();
        match b.write() {
            SessionEvent::Checkpointed {
                result,
                stats,
                ids,
                limits,
            } => {
                assert_eq!(result, Ok(()));
                assert!(stats.is_empty(), "no storage: nothing synced or measured");
                assert_eq!(ids, [TorrentId(2), TorrentId(3)]);
                assert!(limits);
            }
            other => panic!("{other:?}"),
        }
    }
    let (_store, loaded) = StateStore::open(dir.path()).unwrap();
    let names: Vec<&str> = loaded
        .torrents
        .iter()
        .map(|s| match s {
            Stored::Record(_, r) => r.name.as_str(),
            Stored::NeedsRecheck { .. } => "?",
        })
        .collect();
    assert_eq!(names, ["b", "c"], "the removed one is gone");
    assert_eq!(loaded.session_limits, Some(limits(1 << 20)));
    assert!(loaded.alt_speed, "the switch of alternative speeds is kept");
}

#[test]
fn resume_data_holds_only_for_files_as_recorded() {
    let a = Some((100, 1_700_000_000, 5));
    let b = Some((200, 1_700_000_001, 0));
    // as recorded (a padding file is None on both sides)
    assert_eq!(resume_holds(&[a, None, b], &[a, None, b], true), Ok(()));
    // another size or time
    let touched = Some((200, 1_700_000_002, 0));
    assert_eq!(
        resume_holds(&[a, None, b], &[a, None, touched], true),
        Err(Mismatch::Differs(2))
    );
    assert_eq!(
        resume_holds(&[a, b], &[None, b], true),
        Err(Mismatch::Differs(0)),
        "a file that went away"
    );
    // nothing recorded: holds only when nothing was verified and nothing exists yet
    assert_eq!(resume_holds(&[], &[None, None], false), Ok(()));
    assert_eq!(
        resume_holds(&[], &[None, None], true),
        Err(Mismatch::NotRecorded)
    );
    assert_eq!(
        resume_holds(&[], &[a, None], false),
        Err(Mismatch::NotRecorded)
    );
}

#[tokio::test]
async fn a_torrent_whose_files_cannot_be_listed_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = StateStore::open(dir.path()).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = SessionCtx::new(crate::config::engine::EngineConfig::default(), 0, tx);
    let job = ValidateJob {
        id: TorrentId(4),
        info_hash: ih(4),
        save_dir: dir.path().to_path_buf(),
        stats: vec![],
        had_pieces: false,
        paused: true,
        verified: None,
    };
    // no .torrent copy in the store
    validate_resume(&store, vec![job], &ctx);
    match rx.recv().await.unwrap() {
        SessionEvent::Validated {
            torrent,
            trusted,
            paused,
            why,
            missing,
        } => {
            assert!(missing.is_none());
            assert_eq!(torrent, TorrentId(4));
            assert!(!trusted);
            assert!(paused);
            assert!(!why.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // a counter of validations in flight: true for the last one only
    let mut p = Persist::default();
    p.validating(2);
    assert!(!p.validated());
    assert!(p.validated());
    assert!(!p.validated(), "none left");
}
