//! Storage v2 through the library API, in both storage modes: the session-wide handle cap
//! under a low `RLIMIT_NOFILE` (no `EMFILE` however many files), files truncated under a
//! memory map (an error, never `SIGBUS`), lazy creation, and re-checks that report pieces
//! as they go.
//!
//! The tests that could kill their process (a file descriptor limit, `SIGBUS`) run their
//! body in a child process: the test binary runs itself with `--exact NAME` and
//! `RAT_STORAGE_CHILD=1`, so a crash is a failed test, not a dead test run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use ratorrent::piece::{BLOCK_SIZE, BlockRef, Geometry, PieceHashes};
use ratorrent::storage::check::check_report_with;
use ratorrent::storage::disk::{DiskPool, TorrentDisk};
use ratorrent::storage::{
    FileSpec, HandleCache, Preallocate, Storage, StorageErrorKind, StorageMode, StorageOptions,
};
use sha1::{Digest, Sha1};

const MODES: [StorageMode; 2] = [StorageMode::File, StorageMode::Mmap];

/// Run test `name`'s body in a child process; true when this process is that child.
fn child_or_run(name: &str) -> bool {
    if std::env::var_os("RAT_STORAGE_CHILD").is_some() {
        return true;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("RAT_STORAGE_CHILD", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child {name} failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 passed"),
        "the child ran no test:\n{stdout}"
    );
    false
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn opts(mode: StorageMode, handles: &HandleCache) -> StorageOptions {
    StorageOptions {
        mode,
        preallocate: Preallocate::Sparse,
        handles: handles.clone(),
    }
}

/// `n` files of `len` bytes each under `t{t}/`.
fn many_files(t: usize, n: u64, len: u64) -> Vec<FileSpec> {
    (0..n)
        .map(|i| (PathBuf::from(format!("t{t}/f{i:03}")), i * len, len, false))
        .collect()
}

fn set_nofile(soft: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointers to rlimit structs for the calls.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = soft;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

#[test]
fn more_files_than_the_cap_across_storages_never_run_out_of_descriptors() {
    if !child_or_run("more_files_than_the_cap_across_storages_never_run_out_of_descriptors") {
        return;
    }
    // 6 torrents x 40 files = 240 files under a limit of 64 descriptors
    set_nofile(64);
    let (torrents, files, len) = (6usize, 40u64, 3_000u64);
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        // a cache bigger than the limit: the OS refuses at some point (the test is real)
        let big = HandleCache::new(10_000);
        let stores: Vec<Storage> = (0..torrents)
            .map(|t| {
                Storage::with_options(
                    dir.path(),
                    many_files(t, files, len),
                    files * len,
                    opts(mode, &big),
                )
                .unwrap()
            })
            .collect();
        stores[0].prepare_root().unwrap();
        let mut emfile = None;
        'fill: for st in &stores {
            for i in 0..files {
                if let Err(e) = st.write_at(i * len, b"x") {
                    emfile = Some(e);
                    break 'fill;
                }
            }
        }
        let e = emfile.expect("240 open files under a limit of 64");
        assert!(e.to_string().contains("os error 24"), "{mode}: {e}");
        drop(stores);
        assert_eq!(big.open_count(), 0);

        // the session's cap of 16: every file written and read back, three times over
        let cache = HandleCache::new(16);
        let stores: Vec<Storage> = (0..torrents)
            .map(|t| {
                Storage::with_options(
                    dir.path(),
                    many_files(t, files, len),
                    files * len,
                    opts(mode, &cache),
                )
                .unwrap()
            })
            .collect();
        for round in 0..3u32 {
            for (t, st) in stores.iter().enumerate() {
                for i in 0..files {
                    let data = pattern(len as usize, (t as u32) << 16 | i as u32);
                    if round == 0 {
                        st.write_at(i * len, &data).unwrap();
                    }
                    let mut back = vec![0u8; len as usize];
                    st.read_at(i * len, &mut back)
                        .unwrap_or_else(|e| panic!("{mode} round {round}: {e}"));
                    assert_eq!(back, data);
                }
            }
        }
        assert!(cache.open_count() <= 16, "{}", cache.open_count());
        assert!(cache.evicted_total() > 400, "{}", cache.evicted_total());
        for st in &stores {
            st.verify_files_present().unwrap();
        }
        // concurrent readers on few handles: eviction never closes a handle in use
        std::thread::scope(|s| {
            for (t, st) in stores.iter().enumerate() {
                s.spawn(move || {
                    for i in (0..files).rev() {
                        let mut back = vec![0u8; len as usize];
                        st.read_at(i * len, &mut back).unwrap();
                        assert_eq!(back, pattern(len as usize, (t as u32) << 16 | i as u32));
                    }
                });
            }
        });
    }
}

#[test]
fn a_file_truncated_under_a_mapping_is_an_error_not_sigbus() {
    if !child_or_run("a_file_truncated_under_a_mapping_is_an_error_not_sigbus") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plen = 4 * BLOCK_SIZE;
    let total = 40 * plen as usize;
    let payload = pattern(total, 5);
    std::fs::write(dir.path().join("f"), &payload).unwrap();
    let hashes = PieceHashes::v1(
        payload
            .chunks(plen as usize)
            .map(|c| Sha1::digest(c).into())
            .collect(),
    );
    let cache = HandleCache::new(16);
    let st = Storage::with_options(
        dir.path(),
        vec![("f".into(), 0, total as u64, false)],
        total as u64,
        opts(StorageMode::Mmap, &cache),
    )
    .unwrap();
    let geo = Geometry::new(total as u64, plen, 40).unwrap();
    let r = check_report_with(
        &st,
        geo,
        &hashes,
        2,
        &AtomicU32::new(0),
        &AtomicBool::new(false),
        |_, _| {},
    );
    assert!(r.have.is_full());
    // seeding: the file is mapped and read
    let t = Arc::new(TorrentDisk {
        key: 1,
        storage: st,
        geometry: geo,
        hashes: hashes.clone(),
        unchecked: ratorrent::piece::HaveBits::new(geo.piece_count()),
        sink: Arc::new(|_| {}),
    });
    let pool = DiskPool::new(1, 1 << 20);
    let read = |pieces: std::ops::Range<u32>| {
        let blocks: Vec<BlockRef> = pieces.flat_map(|p| geo.blocks(p)).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.read_for_upload(
            &t,
            blocks,
            Vec::new(),
            Box::new(move |r| tx.send(r).unwrap()),
        );
        rx.recv().unwrap()
    };
    assert!(read(0..40).failed.is_empty());
    // another program cuts the file to half while it is mapped
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("f"))
        .unwrap()
        .set_len(total as u64 / 2 + 100)
        .unwrap();
    let r = read(15..25);
    let failed: Vec<u32> = r.failed.iter().map(|(p, _)| *p).collect();
    assert_eq!(failed, (20..25).collect::<Vec<_>>());
    for (_, e) in &r.failed {
        assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
    }
    assert_eq!(
        r.read().count(),
        5 * 4,
        "the pieces before the cut are served"
    );
    let mut b = vec![0u8; plen as usize];
    let e = t.storage.read_at(geo.piece_offset(39), &mut b).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
    // a re-check reports what is left
    let r = check_report_with(
        &t.storage,
        geo,
        &hashes,
        2,
        &AtomicU32::new(0),
        &AtomicBool::new(false),
        |_, _| {},
    );
    assert_eq!(
        r.have.ones().collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
}

#[test]
fn adding_and_checking_create_nothing_then_writes_create_only_their_files() {
    for mode in MODES {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("downloads");
        let cache = HandleCache::new(16);
        let files: Vec<FileSpec> = vec![
            ("t/a".into(), 0, 100_000, false),
            ("t/empty".into(), 100_000, 0, false),
            ("t/sub/b".into(), 100_000, 100_000, false),
        ];
        let st = Storage::with_options(&root, files, 200_000, opts(mode, &cache))
            .unwrap()
            .with_part_file(
                root.join(".t.parts"),
                ratorrent::piece::Geometry::new(200_000, 16_384, 13).unwrap(),
            );
        let payload = pattern(200_000, 1);
        let hashes = PieceHashes::v1(
            payload
                .chunks(16_384)
                .map(|c| Sha1::digest(c).into())
                .collect(),
        );
        let geo = Geometry::new(200_000, 16_384, 13).unwrap();
        assert!(!st.any_data_present());
        let r = check_report_with(
            &st,
            geo,
            &hashes,
            2,
            &AtomicU32::new(0),
            &AtomicBool::new(false),
            |_, _| {},
        );
        assert_eq!(r.have.count(), 0);
        st.verify_files_present().unwrap_err();
        assert!(!root.exists(), "{mode}: checking created something");
        st.prepare_root().unwrap();
        st.write_at(150_000, &payload[150_000..151_000]).unwrap();
        let mut found: Vec<String> = walk(&root);
        found.sort();
        assert_eq!(found, vec!["t/sub/b"], "{mode}");
        st.write_at(0, &payload[..100_000]).unwrap();
        st.write_at(100_000, &payload[100_000..]).unwrap();
        st.create_empty_files().unwrap();
        st.verify_files_present().unwrap();
        let mut found = walk(&root);
        found.sort();
        assert_eq!(found, vec!["t/a", "t/empty", "t/sub/b"], "{mode}");
        let seen = Mutex::new(0u32);
        let r = check_report_with(
            &st,
            geo,
            &hashes,
            2,
            &AtomicU32::new(0),
            &AtomicBool::new(false),
            |_, ok| {
                if ok {
                    *seen.lock().unwrap() += 1;
                }
            },
        );
        assert!(r.have.is_full());
        assert_eq!(*seen.lock().unwrap(), 13);
    }
}

/// Regular files under `root`, relative.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[test]
fn a_long_recheck_reports_pieces_as_it_goes_and_can_be_cancelled() {
    // 48 MiB in 16 MiB pieces on /dev/shm: pieces larger than a check unit
    for mode in MODES {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
        let plen = 16u32 << 20;
        let total = 3 * plen as usize - 12_345;
        let payload = pattern(total, 9);
        std::fs::write(dir.path().join("f"), &payload).unwrap();
        let hashes = PieceHashes::v1(
            payload
                .chunks(plen as usize)
                .map(|c| Sha1::digest(c).into())
                .collect(),
        );
        drop(payload);
        let cache = HandleCache::new(16);
        let st = Storage::with_options(
            dir.path(),
            vec![("f".into(), 0, total as u64, false)],
            total as u64,
            opts(mode, &cache),
        )
        .unwrap();
        let geo = Geometry::new(total as u64, plen, 3).unwrap();
        let progress = AtomicU32::new(0);
        let order = Mutex::new(Vec::new());
        let r = check_report_with(
            &st,
            geo,
            &hashes,
            2,
            &progress,
            &AtomicBool::new(false),
            |p, ok| {
                // reported before it is counted
                assert!(progress.load(Ordering::Relaxed) < 3);
                order.lock().unwrap().push((p, ok));
            },
        );
        assert!(r.have.is_full() && r.finished, "{mode}");
        let mut order = order.into_inner().unwrap();
        order.sort();
        assert_eq!(order, vec![(0, true), (1, true), (2, true)]);
        // cancelled after the first piece: not finished, nothing wrong reported
        let cancel = AtomicBool::new(false);
        let r = check_report_with(&st, geo, &hashes, 1, &AtomicU32::new(0), &cancel, |_, _| {
            cancel.store(true, Ordering::Relaxed);
        });
        assert!(!r.finished, "{mode}");
        assert_eq!(r.have.count(), 1, "{mode}");
    }
}
