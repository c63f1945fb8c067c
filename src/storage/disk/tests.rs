//! Unit tests of the disk threads: writes, hashing, upload reads, unchecked pieces.

use super::super::StorageErrorKind;
use super::*;
use crate::storage::StorageMode;

fn torrent(
    mode: StorageMode,
    dir: &std::path::Path,
    payload: &[u8],
    plen: u32,
) -> (
    Arc<TorrentDisk>,
    tokio::sync::mpsc::UnboundedReceiver<DiskEvent>,
) {
    let storage = Storage::with_options(
        dir,
        vec![
            ("a".into(), 0, 40_000, false),
            ("b".into(), 40_000, payload.len() as u64 - 40_000, false),
        ],
        payload.len() as u64,
        crate::storage::StorageOptions {
            mode,
            ..Default::default()
        },
    )
    .unwrap();
    let hashes: Vec<[u8; 20]> = payload
        .chunks(plen as usize)
        .map(|c| Sha1::digest(c).into())
        .collect();
    let geometry = Geometry::new(payload.len() as u64, plen, hashes.len() as u32).unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (
        Arc::new(TorrentDisk {
            key: 1,
            storage,
            unchecked: HaveBits::new(geometry.piece_count()),
            geometry,
            hashes: crate::piece::PieceHashes::v1(hashes),
            sink: Arc::new(move |e| {
                let _ = tx.send(e);
            }),
        }),
        rx,
    )
}

async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<DiskEvent>) -> DiskEvent {
    tokio::time::timeout(std::time::Duration::from_secs(20), rx.recv())
        .await
        .expect("a disk event within 20 s")
        .expect("the channel is open")
}

fn block_data(t: &TorrentDisk, payload: &[u8], b: BlockRef) -> Bytes {
    let start = (t.piece_offset(b.piece) + u64::from(b.begin)) as usize;
    Bytes::copy_from_slice(&payload[start..start + b.length as usize])
}

fn blocks_of(t: &TorrentDisk, p: u32) -> Vec<BlockRef> {
    t.geometry.blocks(p).collect()
}

async fn in_order_out_of_order_and_corrupt_pieces(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let payload: Vec<u8> = (0..150_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let plen = 4 * BLOCK_SIZE;
    let (t, mut rx) = torrent(mode, dir.path(), &payload, plen);
    let pool = DiskPool::new(2, 1 << 20);
    let send = |p: u32, order: Vec<usize>, corrupt: bool| {
        let blocks = blocks_of(&t, p);
        let t = t.clone();
        let payload = payload.clone();
        let pool = &pool;
        async move {
            for i in order {
                let b = blocks[i];
                let start = (t.piece_offset(p) + u64::from(b.begin)) as usize;
                let mut d = payload[start..start + b.length as usize].to_vec();
                if corrupt && i == 0 {
                    d[5] ^= 1;
                }
                pool.write(&t, p, b.begin, Bytes::from(d)).await;
            }
        }
    };
    send(0, vec![0, 1, 2, 3], false).await; // in order
    send(1, vec![3, 1, 0, 2], false).await; // scrambled: read-back path
    send(2, vec![0, 1], true).await; // last piece (150000-131072 = 18928 bytes: 2 blocks), corrupt
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(format!("{:?}", rx.recv().await.unwrap()));
    }
    got.sort();
    assert_eq!(
        got,
        vec!["PieceFailed(2)", "PieceVerified(0)", "PieceVerified(1)"]
    );
    // re-download of the failed piece verifies
    send(2, vec![1, 0], false).await;
    assert!(matches!(
        rx.recv().await.unwrap(),
        DiskEvent::PieceVerified(2)
    ));
    let mut on_disk = std::fs::read(dir.path().join("a")).unwrap();
    on_disk.extend(std::fs::read(dir.path().join("b")).unwrap());
    assert_eq!(on_disk, payload);

    // reads for upload come back in order and match
    let (rtx, rrx) = std::sync::mpsc::channel();
    let want = blocks_of(&t, 1);
    pool.read_for_upload(
        &t,
        want.clone(),
        Vec::new(),
        Box::new(move |r| rtx.send(r).unwrap()),
    );
    let r = rrx.recv().unwrap();
    assert_eq!(r.read().count(), want.len());
    for (b, data) in r.read() {
        let start = (t.piece_offset(b.piece) + u64::from(b.begin)) as usize;
        assert_eq!(data, &payload[start..start + b.length as usize]);
    }
}

async fn write_error_is_reported_not_panicked(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let payload = vec![1u8; 50_000];
    let (t, mut rx) = torrent(mode, dir.path(), &payload, BLOCK_SIZE);
    // make "a" a directory so opening it as a file fails
    std::fs::create_dir(dir.path().join("a")).unwrap();
    let pool = DiskPool::new(1, 1 << 20);
    pool.write(&t, 0, 0, Bytes::from(vec![1u8; BLOCK_SIZE as usize]))
        .await;
    // reported at once, then as the piece's result
    let DiskEvent::Error(e) = next(&mut rx).await else {
        panic!("expected an error")
    };
    assert!(!e.piece_done && e.piece == 0, "{e}");
    assert!(e.to_string().starts_with("piece 0: "), "{e}");
    let DiskEvent::Error(e) = next(&mut rx).await else {
        panic!("expected an error")
    };
    assert!(e.piece_done && e.piece == 0, "{e}");
}

fn payload() -> Vec<u8> {
    (0..150_000u32).map(|i| (i * 13 % 251) as u8).collect()
}

async fn deleted_download_folder_is_never_verified(mode: StorageMode) {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("dl");
    let payload = payload();
    let plen = 2 * BLOCK_SIZE;
    let (t, mut rx) = torrent(mode, &root, &payload, plen);
    t.storage.create_files().unwrap();
    let pool = DiskPool::new(2, 1 << 20);
    for b in blocks_of(&t, 0) {
        pool.write(&t, 0, b.begin, block_data(&t, &payload, b))
            .await;
    }
    assert!(matches!(next(&mut rx).await, DiskEvent::PieceVerified(0)));
    std::fs::remove_dir_all(&root).unwrap();
    // the handles are open: the writes succeed into unlinked files, the hash matches
    for b in blocks_of(&t, 2) {
        pool.write(&t, 2, b.begin, block_data(&t, &payload, b))
            .await;
    }
    let DiskEvent::Error(e) = next(&mut rx).await else {
        panic!("a deleted file must not verify")
    };
    assert_eq!((e.piece, e.piece_done), (2, true));
    assert_eq!(e.error.kind(), StorageErrorKind::FileDeleted, "{e}");
    assert_eq!(e.error.path(), Some(root.join("b").as_path()));
    let e = t.storage.verify_files_present().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
    // after close_all (resume), writes fail instead of recreating the folder
    t.storage.close_all();
    for b in blocks_of(&t, 3) {
        pool.write(&t, 3, b.begin, block_data(&t, &payload, b))
            .await;
    }
    let DiskEvent::Error(e) = next(&mut rx).await else {
        panic!("expected an error")
    };
    assert_eq!(e.error.kind(), StorageErrorKind::NotFound, "{e}");
    assert!(!e.piece_done);
    let DiskEvent::Error(e) = next(&mut rx).await else {
        panic!("expected an error")
    };
    assert!(e.piece_done && e.piece == 3);
    assert!(!root.exists());
}

fn failed_read_back_breaks_only_that_piece(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let payload = payload();
    let plen = 2 * BLOCK_SIZE;
    let (t, mut rx) = torrent(mode, dir.path(), &payload, plen);
    let mut w = Worker::default();
    let p0 = blocks_of(&t, 0);
    // piece 0's second block arrives first (kept for read-back)...
    w.write(&t, 0, p0[1].begin, &block_data(&t, &payload, p0[1]));
    // ...someone truncates the file...
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("a"))
        .unwrap()
        .set_len(0)
        .unwrap();
    // ...piece 2 (in file b) goes on, in order
    for b in blocks_of(&t, 2) {
        w.write(&t, 2, b.begin, &block_data(&t, &payload, b));
    }
    // the first block makes the prefix reach the second, whose read-back now fails
    w.write(&t, 0, p0[0].begin, &block_data(&t, &payload, p0[0]));
    assert!(matches!(
        rx.try_recv().unwrap(),
        DiskEvent::PieceVerified(2)
    ));
    if mode == StorageMode::Mmap {
        // mmap mode refuses the write itself (the mapping is past the file's end now)
        let DiskEvent::Error(e) = rx.try_recv().unwrap() else {
            panic!("expected an error")
        };
        assert_eq!((e.piece, e.piece_done), (0, false));
        assert_eq!(e.error.kind(), StorageErrorKind::Truncated, "{e}");
    }
    let DiskEvent::Error(e) = rx.try_recv().unwrap() else {
        panic!("expected an error")
    };
    assert_eq!((e.piece, e.piece_done), (0, true));
    assert_eq!(e.error.kind(), StorageErrorKind::Truncated, "{e}");
    assert!(rx.try_recv().is_err(), "one result per piece");
    assert!(w.pieces.is_empty());
    // Truncated needs a re-check: resuming starts with close_all (mmap mode keeps
    // refusing a file cut under it until then)
    t.storage.close_all();
    // the piece fetched again verifies
    for b in blocks_of(&t, 0) {
        w.write(&t, 0, b.begin, &block_data(&t, &payload, b));
    }
    assert!(matches!(
        rx.try_recv().unwrap(),
        DiskEvent::PieceVerified(0)
    ));
}

async fn truncated_file_fails_only_its_pieces_for_upload(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let payload = payload();
    let plen = 2 * BLOCK_SIZE; // 5 pieces; a = 0..40000, b = 40000..150000
    let (t, _rx) = torrent(mode, dir.path(), &payload, plen);
    std::fs::write(dir.path().join("a"), &payload[..40_000]).unwrap();
    std::fs::write(dir.path().join("b"), &payload[40_000..]).unwrap();
    let pool = DiskPool::new(1, 1 << 20);
    let read = |blocks: Vec<BlockRef>| {
        let (tx, rx) = std::sync::mpsc::channel();
        pool.read_for_upload(
            &t,
            blocks,
            Vec::new(),
            Box::new(move |r| tx.send(r).unwrap()),
        );
        rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap()
    };
    let all: Vec<BlockRef> = (0..5).flat_map(|p| blocks_of(&t, p)).collect();
    let r = read(all.clone());
    assert!(r.failed.is_empty());
    assert_eq!(r.read().count(), all.len());
    // file b cut to payload byte 70000: pieces 2 (65536..), 3, 4 are gone
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("b"))
        .unwrap()
        .set_len(30_000)
        .unwrap();
    // interleave pieces and add hostile blocks
    let mut ask: Vec<BlockRef> = Vec::new();
    for i in 0..2 {
        for p in [4, 0, 2, 1, 3] {
            ask.push(blocks_of(&t, p)[i]);
        }
    }
    ask.push(BlockRef {
        piece: 1,
        begin: 0,
        length: u32::MAX,
    });
    ask.push(BlockRef {
        piece: 99,
        begin: 0,
        length: 16_384,
    });
    let r = read(ask.clone());
    let served: Vec<BlockRef> = r.read().map(|(b, _)| b).collect();
    let want: Vec<BlockRef> = ask
        .iter()
        .copied()
        .filter(|b| b.piece < 2 && b.length == BLOCK_SIZE)
        .collect();
    assert_eq!(served.len(), 4, "{served:?}");
    assert_eq!(served, want);
    for (b, data) in r.read() {
        assert_eq!(data, &block_data(&t, &payload, b)[..]);
    }
    let failed: Vec<(u32, StorageErrorKind)> =
        r.failed.iter().map(|(p, e)| (*p, e.kind())).collect();
    use StorageErrorKind as K;
    assert_eq!(
        failed,
        vec![(4, K::Truncated), (2, K::Truncated), (3, K::Truncated)]
    );
    assert_eq!(
        r.refused,
        ask[10..].to_vec(),
        "hostile blocks are refused, not read"
    );
    for (_, e) in &r.failed[..3] {
        assert_eq!(e.path(), Some(dir.path().join("b").as_path()), "{e}");
    }
}

/// Skip hash check: an upload read hashes a piece taken without a check before it
/// serves a block of it; a good piece is served and unmarked, a corrupt one is never
/// served (also not by a later read) until it is written again and verified.
#[tokio::test]
async fn unchecked_pieces_are_hashed_before_their_first_upload() {
    let dir = tempfile::tempdir().unwrap();
    let payload = payload();
    let plen = 2 * BLOCK_SIZE; // 5 pieces
    let (t, mut rx) = torrent(StorageMode::File, dir.path(), &payload, plen);
    let mut bad = payload.clone();
    bad[70_000] ^= 0xff; // piece 2 (65536..98304)
    std::fs::write(dir.path().join("a"), &bad[..40_000]).unwrap();
    std::fs::write(dir.path().join("b"), &bad[40_000..]).unwrap();
    for p in 0..5 {
        t.unchecked.set(p);
    }
    let pool = DiskPool::new(1, 1 << 20);
    let read = |blocks: Vec<BlockRef>| {
        let (tx, rx) = std::sync::mpsc::channel();
        pool.read_for_upload(
            &t,
            blocks,
            Vec::new(),
            Box::new(move |r| tx.send(r).unwrap()),
        );
        rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap()
    };
    // one block of piece 1, both of piece 2
    let mut ask = vec![blocks_of(&t, 1)[1]];
    ask.extend(blocks_of(&t, 2));
    let r = read(ask.clone());
    assert_eq!(r.corrupt, vec![2]);
    assert!(r.failed.is_empty());
    let served: Vec<BlockRef> = r.read().map(|(b, _)| b).collect();
    assert_eq!(served, vec![ask[0]], "nothing of the corrupt piece");
    for (b, data) in r.read() {
        assert_eq!(data, &block_data(&t, &payload, b)[..]);
    }
    assert!(matches!(
        next(&mut rx).await,
        DiskEvent::UncheckedVerified(1)
    ));
    assert!(matches!(next(&mut rx).await, DiskEvent::UncheckedFailed(2)));
    assert!(!t.unchecked.get(1), "verified: unmarked");
    assert!(
        t.unchecked.get(2),
        "still unchecked: a later read must not send it"
    );
    assert_eq!(t.unchecked.count(), 4);
    // a later read of the corrupt piece: still nothing sent
    let r = read(blocks_of(&t, 2));
    assert_eq!((r.corrupt.clone(), r.read().count()), (vec![2], 0));
    assert!(matches!(next(&mut rx).await, DiskEvent::UncheckedFailed(2)));
    // downloaded again: verified, unmarked, served
    for b in blocks_of(&t, 2) {
        pool.write(&t, 2, b.begin, block_data(&t, &payload, b))
            .await;
    }
    assert!(matches!(next(&mut rx).await, DiskEvent::PieceVerified(2)));
    assert!(!t.unchecked.get(2));
    let r = read(blocks_of(&t, 2));
    assert!(r.corrupt.is_empty());
    assert_eq!(r.read().count(), 2);
    for (b, data) in r.read() {
        assert_eq!(data, &block_data(&t, &payload, b)[..]);
    }
    // an unchecked piece cut short on disk cannot be hashed: unreadable, not corrupt
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("b"))
        .unwrap()
        .set_len(100_000)
        .unwrap();
    let r = read(blocks_of(&t, 4));
    assert!(r.corrupt.is_empty());
    assert_eq!(r.failed.len(), 1);
    assert_eq!(r.failed[0].0, 4);
    assert_eq!(r.read().count(), 0);
}

#[test]
fn a_huge_thread_count_is_capped_not_a_panic() {
    let pool = DiskPool::new(4_000_000_000, usize::MAX);
    assert_eq!(pool.threads(), MAX_DISK_THREADS);
    assert_eq!(DiskPool::new(0, 0).threads(), 1);
}

async fn inline_pool_does_the_same_work(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let payload = payload();
    let plen = 2 * BLOCK_SIZE;
    let (t, mut rx) = torrent(mode, dir.path(), &payload, plen);
    let pool = DiskPool::with_shards(vec![Shard::Inline(Mutex::new(Worker::default()))], 0);
    assert_eq!(pool.threads(), 0);
    for b in blocks_of(&t, 4).into_iter().rev() {
        pool.write(&t, 4, b.begin, block_data(&t, &payload, b))
            .await;
    }
    assert!(matches!(next(&mut rx).await, DiskEvent::PieceVerified(4)));
    let (tx, rrx) = std::sync::mpsc::channel();
    pool.read_for_upload(
        &t,
        blocks_of(&t, 4),
        Vec::new(),
        Box::new(move |r| tx.send(r).unwrap()),
    );
    let r = rrx.recv().unwrap();
    assert!(r.failed.is_empty() && r.read().count() == 2);
    pool.forget(t.key);
}

// each test once per storage mode
mod file_mode {
    #[test]
    fn failed_read_back_breaks_only_that_piece() {
        super::failed_read_back_breaks_only_that_piece(super::StorageMode::File)
    }
    #[tokio::test]
    async fn in_order_out_of_order_and_corrupt_pieces() {
        super::in_order_out_of_order_and_corrupt_pieces(super::StorageMode::File).await
    }
    #[tokio::test]
    async fn write_error_is_reported_not_panicked() {
        super::write_error_is_reported_not_panicked(super::StorageMode::File).await
    }
    #[tokio::test]
    async fn deleted_download_folder_is_never_verified() {
        super::deleted_download_folder_is_never_verified(super::StorageMode::File).await
    }
    #[tokio::test]
    async fn truncated_file_fails_only_its_pieces_for_upload() {
        super::truncated_file_fails_only_its_pieces_for_upload(super::StorageMode::File).await
    }
    #[tokio::test]
    async fn inline_pool_does_the_same_work() {
        super::inline_pool_does_the_same_work(super::StorageMode::File).await
    }
}
mod mmap_mode {
    #[test]
    fn failed_read_back_breaks_only_that_piece() {
        super::failed_read_back_breaks_only_that_piece(super::StorageMode::Mmap)
    }
    #[tokio::test]
    async fn in_order_out_of_order_and_corrupt_pieces() {
        super::in_order_out_of_order_and_corrupt_pieces(super::StorageMode::Mmap).await
    }
    #[tokio::test]
    async fn write_error_is_reported_not_panicked() {
        super::write_error_is_reported_not_panicked(super::StorageMode::Mmap).await
    }
    #[tokio::test]
    async fn deleted_download_folder_is_never_verified() {
        super::deleted_download_folder_is_never_verified(super::StorageMode::Mmap).await
    }
    #[tokio::test]
    async fn truncated_file_fails_only_its_pieces_for_upload() {
        super::truncated_file_fails_only_its_pieces_for_upload(super::StorageMode::Mmap).await
    }
    #[tokio::test]
    async fn inline_pool_does_the_same_work() {
        super::inline_pool_does_the_same_work(super::StorageMode::Mmap).await
    }
}

/// A v2-only and a hybrid torrent (made by the builder) of two files: blocks in any order
/// verify with no read-back on the v2 side; a flipped byte fails its piece; a hybrid whose
/// v1 side matches but whose v2 side does not is never verified.
#[tokio::test]
async fn v2_pieces_verify_from_leaves_hashed_as_blocks_arrive() {
    use crate::metainfo::{MetaVersion, TorrentBuilder};
    let src = tempfile::tempdir().unwrap();
    let top = src.path().join("t");
    std::fs::create_dir(&top).unwrap();
    let a: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let b: Vec<u8> = (0..70_001u32).map(|i| (i * 3 % 241) as u8).collect();
    std::fs::write(top.join("a"), &a).unwrap();
    std::fs::write(top.join("b"), &b).unwrap();
    for version in [MetaVersion::V2, MetaVersion::Hybrid] {
        let (_, meta) = TorrentBuilder::new(&top)
            .version(version)
            .piece_length(65_536)
            .build_meta()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut payload = Vec::new();
        for f in &meta.files {
            match (f.pad, f.path.file_name().and_then(|n| n.to_str())) {
                (true, _) => payload.resize(payload.len() + f.length as usize, 0),
                (false, Some("a")) => payload.extend_from_slice(&a),
                (false, _) => payload.extend_from_slice(&b),
            }
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mk = |hashes: crate::piece::PieceHashes| {
            let tx = tx.clone();
            Arc::new(TorrentDisk {
                key: 7,
                storage: Storage::for_torrent(&meta, dir.path(), Default::default()).unwrap(),
                geometry: meta.geometry(),
                hashes,
                unchecked: HaveBits::new(meta.piece_count()),
                sink: Arc::new(move |e| {
                    let _ = tx.send(e);
                }),
            })
        };
        let t = mk(meta.hashes());
        let pool = DiskPool::new(2, 1 << 20);
        let send = |t: &Arc<TorrentDisk>, p: u32, corrupt: bool| {
            let mut blocks = blocks_of(t, p);
            blocks.reverse(); // last block first: nothing in order
            let t = t.clone();
            let payload = payload.clone();
            let pool = &pool;
            async move {
                for bl in blocks {
                    let mut d = block_data(&t, &payload, bl).to_vec();
                    if corrupt && bl.begin == 0 {
                        d[1] ^= 1;
                    }
                    pool.write(&t, p, bl.begin, Bytes::from(d)).await;
                }
            }
        };
        for p in 0..meta.piece_count() {
            send(&t, p, p == 1).await;
        }
        let mut got = Vec::new();
        for _ in 0..meta.piece_count() {
            got.push(format!("{:?}", next(&mut rx).await));
        }
        got.sort();
        let mut want: Vec<String> = (0..meta.piece_count())
            .map(|p| {
                if p == 1 {
                    "PieceFailed(1)".to_string()
                } else {
                    format!("PieceVerified({p})")
                }
            })
            .collect();
        want.sort();
        assert_eq!(got, want, "{version:?}");
        if version == MetaVersion::Hybrid {
            // the v1 side alone does not make a piece: a wrong v2 hash fails it
            let mut hashes = meta.hashes();
            let v2 = hashes.v2.as_mut().unwrap();
            v2.files[0].layer.as_mut().unwrap()[0][0] ^= 1;
            let t = mk(hashes);
            pool.forget(7);
            send(&t, 0, false).await;
            assert!(matches!(next(&mut rx).await, DiskEvent::PieceFailed(0)));
        }
    }
}
