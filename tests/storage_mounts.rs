//! Storage errors from real file systems: a full disk (a 1 MiB tmpfs) and a read-only mount
//! (a read-only bind mount), through the library API of `ratorrent::storage`.
//!
//! These need root (`CAP_SYS_ADMIN`) to mount; CI runs as root. Without it they fail with a
//! message saying so, rather than being skipped silently.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::time::Duration;

use bytes::Bytes;
use common::mounts::Mount;
use ratorrent::piece::{BLOCK_SIZE, Geometry};
use ratorrent::storage::check::check_pieces;
use ratorrent::storage::disk::{DiskEvent, DiskPool, TorrentDisk};
use ratorrent::storage::{
    HandleCache, Preallocate, Storage, StorageError, StorageErrorKind, StorageMode, StorageOptions,
};
use sha1::{Digest, Sha1};

/// A storage in `mode` (sparse files, the process-wide handle cache).
fn storage(
    mode: StorageMode,
    root: &Path,
    files: Vec<(PathBuf, u64, u64, bool)>,
    total: u64,
) -> Result<Storage, StorageError> {
    Storage::with_options(
        root,
        files,
        total,
        StorageOptions {
            mode,
            ..StorageOptions::default()
        },
    )
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(31).wrapping_add(seed) % 251) as u8)
        .collect()
}

#[test]
fn full_disk_is_no_space_naming_the_file() {
    full_disk_is_no_space_naming_the_file_in(StorageMode::File);
}

#[test]
fn full_disk_is_no_space_naming_the_file_mmap() {
    // writing a hole through a mapping on a full disk would be SIGBUS: it must be an error
    full_disk_is_no_space_naming_the_file_in(StorageMode::Mmap);
}

fn full_disk_is_no_space_naming_the_file_in(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let _mnt = Mount::tmpfs(dir.path(), "1m");
    let root = dir.path().join("dl");
    let st = storage(
        mode,
        &root,
        vec![("big.bin".into(), 0, 4 << 20, false)],
        4 << 20,
    )
    .unwrap();
    st.create_files().unwrap(); // sparse: fits
    let chunk = pattern(64 << 10, 1);
    let mut off = 0u64;
    let e = loop {
        match st.write_at(off, &chunk) {
            Ok(()) => off += chunk.len() as u64,
            Err(e) => break e,
        }
        assert!(off < 4 << 20, "a 1 MiB tmpfs took 4 MiB");
    };
    assert_eq!(e.kind(), StorageErrorKind::NoSpace, "{e}");
    let path = root.join("big.bin");
    assert_eq!(e.path(), Some(path.as_path()));
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!(
            "no space left on the disk writing {}",
            path.display()
        )),
        "{msg}"
    );
    assert!(msg.contains("free some disk space"), "{msg}");
    assert!(e.kind().is_recoverable_by_user() && !e.kind().needs_recheck());
    // what was written before is intact
    let mut back = vec![0u8; chunk.len()];
    st.read_at(0, &mut back).unwrap();
    assert_eq!(back, chunk);
}

#[tokio::test]
async fn full_disk_fails_the_piece_and_keeps_verified_pieces() {
    full_disk_fails_the_piece_and_keeps_verified_pieces_in(StorageMode::File).await;
}

#[tokio::test]
async fn full_disk_fails_the_piece_and_keeps_verified_pieces_mmap() {
    full_disk_fails_the_piece_and_keeps_verified_pieces_in(StorageMode::Mmap).await;
}

async fn full_disk_fails_the_piece_and_keeps_verified_pieces_in(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let _mnt = Mount::tmpfs(dir.path(), "1m");
    let root = dir.path().join("dl");
    let plen = 256 * 1024u32;
    let total = 4 << 20;
    let payload = pattern(total, 7);
    let hashes: Vec<[u8; 20]> = payload
        .chunks(plen as usize)
        .map(|c| Sha1::digest(c).into())
        .collect();
    let storage = storage(
        mode,
        &root,
        vec![("big.bin".into(), 0, total as u64, false)],
        total as u64,
    )
    .unwrap();
    storage.create_files().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let geo = Geometry::new(total as u64, plen, hashes.len() as u32).unwrap();
    let t = Arc::new(TorrentDisk {
        key: 1,
        storage,
        geometry: geo,
        hashes: ratorrent::piece::PieceHashes::v1(hashes.clone()),
        unchecked: ratorrent::piece::HaveBits::new(geo.piece_count()),
        sink: Arc::new(move |e| {
            let _ = tx.send(e);
        }),
    });
    let pool = DiskPool::new(2, 1 << 20);
    let mut verified = Vec::new();
    let mut failure = None;
    'pieces: for p in 0..geo.piece_count() {
        for b in geo.blocks(p) {
            let start = (geo.piece_offset(p) + u64::from(b.begin)) as usize;
            let data = Bytes::copy_from_slice(&payload[start..start + b.length as usize]);
            pool.write(&t, p, b.begin, data).await;
        }
        let ev = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("a disk event")
            .unwrap();
        match ev {
            DiskEvent::PieceVerified(v) => verified.push(v),
            DiskEvent::Error(e) => {
                failure = Some(e);
                break 'pieces;
            }
            DiskEvent::PieceFailed(f) => panic!("piece {f} failed its hash"),
            other => panic!("no piece was added without a check: {other:?}"),
        }
    }
    let e = failure.expect("a 1 MiB tmpfs cannot hold 4 MiB");
    assert_eq!(e.error.kind(), StorageErrorKind::NoSpace, "{e}");
    assert!(!e.piece_done, "a write error is reported at once");
    assert!(!verified.contains(&e.piece));
    assert!(
        !verified.is_empty(),
        "some pieces fit before the disk filled"
    );
    assert!(e.to_string().contains(&format!("piece {}", e.piece)), "{e}");
    // the piece's attempt then ends with a final report, not a verification
    let last = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("the piece's final report")
        .unwrap();
    assert!(
        matches!(&last, DiskEvent::Error(d) if d.piece == e.piece && d.piece_done),
        "{last:?}"
    );
    // verified pieces are intact
    for p in verified {
        let mut back = vec![0u8; plen as usize];
        t.storage.read_at(geo.piece_offset(p), &mut back).unwrap();
        assert_eq!(Sha1::digest(&back).as_slice(), hashes[p as usize]);
    }
}

#[test]
fn read_only_mount_seeds_and_refuses_writes_by_name() {
    read_only_mount_seeds_and_refuses_writes_by_name_in(StorageMode::File);
}

#[test]
fn read_only_mount_seeds_and_refuses_writes_by_name_mmap() {
    read_only_mount_seeds_and_refuses_writes_by_name_in(StorageMode::Mmap);
}

fn read_only_mount_seeds_and_refuses_writes_by_name_in(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let ro = dir.path().join("ro");
    std::fs::create_dir_all(src.join("t")).unwrap();
    std::fs::create_dir(&ro).unwrap();
    let payload = pattern(50_000, 3);
    std::fs::write(src.join("t/a.bin"), &payload).unwrap();
    let _mnt = Mount::read_only_bind(&src, &ro);
    let plen = 16_384u32;
    // the torrent: a.bin, then a 10-byte file that is not on the mount
    let mut whole = payload.clone();
    whole.extend([0u8; 10]);
    let all_hashes: Vec<[u8; 20]> = whole
        .chunks(plen as usize)
        .map(|c| Sha1::digest(c).into())
        .collect();
    let st = storage(
        mode,
        &ro,
        vec![
            ("t/a.bin".into(), 0, 50_000, false),
            ("t/missing.bin".into(), 50_000, 10, false),
        ],
        50_010,
    )
    .unwrap();
    // seeding works: reading and checking the data that is there
    let geo = Geometry::new(50_010, plen, all_hashes.len() as u32).unwrap();
    let have = check_pieces(
        &st,
        geo,
        &ratorrent::piece::PieceHashes::v1(all_hashes.clone()),
        2,
        &AtomicU32::new(0),
        &AtomicBool::new(false),
    );
    assert_eq!(have.ones().collect::<Vec<_>>(), vec![0, 1, 2]);
    let mut b = vec![0u8; BLOCK_SIZE as usize];
    st.read_at(0, &mut b).unwrap();
    assert_eq!(b, payload[..BLOCK_SIZE as usize]);
    // writing says read-only and names the file, never "Bad file descriptor"
    let e = st.write_at(0, b"evil").unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::ReadOnly, "{e}");
    let a = ro.join("t/a.bin");
    assert_eq!(e.path(), Some(a.as_path()));
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("read-only file system writing {}", a.display())),
        "{msg}"
    );
    assert!(!msg.contains("Bad file descriptor"), "{msg}");
    // a file that is not there cannot be created either
    let e = st.write_at(50_000, b"x").unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::ReadOnly, "{e}");
    assert!(e.to_string().contains("creating"), "{e}");
    let e = st.create_files().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::ReadOnly, "{e}");
    assert_eq!(std::fs::read(src.join("t/a.bin")).unwrap(), payload);
}

#[test]
fn full_preallocation_on_a_full_disk_fails_at_the_first_write() {
    for mode in [StorageMode::File, StorageMode::Mmap] {
        let dir = tempfile::tempdir().unwrap();
        let _mnt = Mount::tmpfs(dir.path(), "1m");
        let root = dir.path().join("dl");
        let st = Storage::with_options(
            &root,
            vec![("big.bin".into(), 0, 4 << 20, false)],
            4 << 20,
            StorageOptions {
                mode,
                preallocate: Preallocate::Full,
                handles: HandleCache::new(16),
            },
        )
        .unwrap();
        st.prepare_root().unwrap();
        let e = st.write_at(0, b"first block").unwrap_err();
        assert_eq!(e.kind(), StorageErrorKind::NoSpace, "{mode}: {e}");
        assert!(e.to_string().contains("preallocating"), "{e}");
        // the disk is not left full of a half-allocated file
        let small = Storage::with_options(
            &root,
            vec![("small.bin".into(), 0, 100_000, false)],
            100_000,
            StorageOptions {
                mode,
                preallocate: Preallocate::Full,
                handles: HandleCache::new(16),
            },
        )
        .unwrap();
        small.write_at(99_990, b"0123456789").unwrap();
        let mut b = [0u8; 10];
        small.read_at(99_990, &mut b).unwrap();
        assert_eq!(&b, b"0123456789");
    }
}
