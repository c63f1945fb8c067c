//! The storage façade's tests: every concept through [`Storage`], once per I/O mode.

use super::handle::{FileId, Handle};
use super::*;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

fn new_st(
    mode: StorageMode,
    root: &Path,
    files: impl IntoIterator<Item = FileSpec>,
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

fn layout() -> Vec<FileSpec> {
    vec![
        ("t/a.bin".into(), 0, 10_000, false),
        ("t/.pad/6384".into(), 10_000, 6_384, true),
        ("t/empty".into(), 16_384, 0, false),
        ("t/sub/b.bin".into(), 16_384, 20_000, false),
        ("t/c.bin".into(), 36_384, 5, false),
    ]
}

fn writes_span_files_and_skip_pads(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
    st.create_files().unwrap();
    assert!(dir.path().join("t/empty").exists());
    assert!(!dir.path().join("t/.pad").exists());
    let data: Vec<u8> = (0..36_389u32).map(|i| (i % 251) as u8).collect();
    // write in odd-sized chunks crossing every boundary
    let mut off = 0;
    for chunk in data.chunks(7_001) {
        st.write_at(off, chunk).unwrap();
        off += chunk.len() as u64;
    }
    let a = std::fs::read(dir.path().join("t/a.bin")).unwrap();
    assert_eq!(a, data[..10_000]);
    let b = std::fs::read(dir.path().join("t/sub/b.bin")).unwrap();
    assert_eq!(b, data[16_384..36_384]);
    let c = std::fs::read(dir.path().join("t/c.bin")).unwrap();
    assert_eq!(c, data[36_384..]);
    let mut back = vec![1u8; 36_389];
    st.read_at(0, &mut back).unwrap();
    assert_eq!(&back[..10_000], &data[..10_000]);
    assert!(
        back[10_000..16_384].iter().all(|&x| x == 0),
        "pad reads as zeros"
    );
    assert_eq!(&back[16_384..], &data[16_384..]);
}

fn skipped_files_are_not_created_and_their_bytes_move_in_when_wanted(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    // pieces of 16384: piece 0 = a (10000) + pad; piece 1..: b (20000) spans 1 and 2,
    // c (5) in piece 2
    let st = new_st(mode, dir.path(), layout(), 36_389)
        .unwrap()
        .with_part_file(
            dir.path().join(".t.parts"),
            crate::piece::Geometry::new(36_389, 16_384, 3).unwrap(),
        );
    st.create_files().unwrap();
    std::fs::remove_file(dir.path().join("t/c.bin")).unwrap();
    st.set_skipped(4, true).unwrap(); // c.bin
    assert!(st.in_part_file(4));
    let data: Vec<u8> = (0..36_389u32).map(|i| (i % 251) as u8).collect();
    st.write_at(0, &data[..16_384]).unwrap();
    st.write_at(16_384, &data[16_384..32_768]).unwrap();
    st.write_at(32_768, &data[32_768..]).unwrap(); // b's tail + c
    assert!(
        !dir.path().join("t/c.bin").exists(),
        "a skipped file is not created"
    );
    assert!(dir.path().join(".t.parts").exists());
    let mut back = vec![0u8; 36_389 - 32_768];
    st.read_at(32_768, &mut back).unwrap();
    assert_eq!(
        back,
        data[32_768..],
        "its bytes read back from the part file"
    );
    st.verify_files_present().unwrap();
    // wanted again: the bytes move into the file, the part file goes
    st.set_skipped(4, false).unwrap();
    assert!(!st.in_part_file(4));
    assert_eq!(
        std::fs::read(dir.path().join("t/c.bin")).unwrap(),
        data[36_384..]
    );
    assert!(!dir.path().join(".t.parts").exists());
    st.read_at(32_768, &mut back).unwrap();
    assert_eq!(back, data[32_768..]);
    // skipping a file that exists leaves it where it is
    st.set_skipped(3, true).unwrap();
    assert!(!st.in_part_file(3));
}

/// Issue 16: a piece of 512 MiB whose share of a skipped file (3 MiB here, more than the
/// 1 MiB step) moves from the part file into the file when it is wanted again, byte-exact,
/// through a bounded buffer (never the whole share or piece).
fn a_huge_pieces_share_moves_into_its_file_in_steps(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    const PIECE: u32 = 512 << 20;
    let (a, c) = (100_000u64, 3 << 20);
    let files: Vec<FileSpec> = vec![
        ("t/a.bin".into(), 0, a, false),
        ("t/c.bin".into(), a, c, false),
    ];
    let st = new_st(mode, dir.path(), files, a + c)
        .unwrap()
        .with_part_file(
            dir.path().join(".t.parts"),
            crate::piece::Geometry::new(a + c, PIECE, 1).unwrap(),
        );
    st.set_skipped(1, true).unwrap();
    let data: Vec<u8> = (0..a + c).map(|i| (i * 7 % 253) as u8).collect();
    for (i, chunk) in data.chunks(16_384).enumerate() {
        st.write_at(i as u64 * 16_384, chunk).unwrap();
    }
    assert!(!dir.path().join("t/c.bin").exists());
    st.set_skipped(1, false).unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("t/c.bin")).unwrap(),
        data[a as usize..]
    );
    assert_eq!(
        std::fs::read(dir.path().join("t/a.bin")).unwrap(),
        data[..a as usize]
    );
}

fn out_of_range_is_an_error(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
    assert!(matches!(
        st.write_at(36_389, b"x"),
        Err(StorageError::OutOfRange { .. })
    ));
    assert!(matches!(
        st.write_at(u64::MAX, b"x"),
        Err(StorageError::OutOfRange { .. })
    ));
    let mut b = [0u8; 2];
    assert!(matches!(
        st.read_at(36_388, &mut b),
        Err(StorageError::OutOfRange { .. })
    ));
}

fn missing_file_reads_as_missing_data(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
    let mut b = [0u8; 10];
    let e = st.read_at(0, &mut b).unwrap_err();
    assert!(e.is_missing_data(), "{e}");
    assert!(
        !dir.path().join("t/a.bin").exists(),
        "reading never creates files"
    );
    assert!(!st.any_data_present());
}

#[test]
fn unsafe_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["../x", "/etc/passwd", "a/../../x", "", "./a/../.."] {
        let r = Storage::new(dir.path(), vec![(PathBuf::from(bad), 0, 1, false)], 1);
        assert!(matches!(r, Err(StorageError::UnsafePath(_))), "{bad:?}");
    }
}

fn symlinked_directory_escaping_root_is_refused(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("t")).unwrap();
    let st = new_st(mode, dir.path(), vec![("t/evil".into(), 0, 4, false)], 4).unwrap();
    assert!(matches!(
        st.write_at(0, b"evil"),
        Err(StorageError::Escapes { .. })
    ));
    assert!(!outside.path().join("evil").exists());
}

fn symlinked_file_is_not_followed(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim");
    std::fs::write(&target, b"keep").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("f")).unwrap();
    let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
    assert!(st.write_at(0, b"evil").is_err());
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
}

fn existing_longer_file_is_not_truncated(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), vec![7u8; 100]).unwrap();
    let st = new_st(mode, dir.path(), vec![("f".into(), 0, 10, false)], 10).unwrap();
    st.create_files().unwrap();
    assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 100);
    assert!(st.any_data_present());
}

fn euid_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Cache a read-only handle for file `i`, as the fallback open does after the
/// read-write open failed with `why`.
fn force_read_only(st: &Storage, i: usize, why: i32) {
    let slot = &st.files()[i];
    let file = File::open(&slot.path).unwrap();
    let meta = file.metadata().unwrap();
    st.opener.forget(slot);
    st.opener.install(
        slot,
        Handle::new(
            file,
            Some(io::Error::from_raw_os_error(why)),
            FileId::of(&meta),
        ),
    );
}

fn write_to_a_read_only_fallback_handle_names_the_cause_and_the_file(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"seed").unwrap();
    let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
    let path = dir.path().join("f");
    for (why, kind) in [
        (libc::EACCES, StorageErrorKind::PermissionDenied),
        (libc::EPERM, StorageErrorKind::PermissionDenied),
        (libc::EROFS, StorageErrorKind::ReadOnly),
    ] {
        force_read_only(&st, 0, why);
        let e = st.write_at(0, b"evil").unwrap_err();
        assert_eq!(e.kind(), kind, "{e}");
        assert_eq!(e.path(), Some(path.as_path()));
        let msg = e.to_string();
        assert!(!msg.contains("Bad file descriptor"), "{msg}");
        assert!(
            msg.contains(&format!("writing {}", path.display())),
            "{msg}"
        );
        if why == libc::EACCES {
            assert_eq!(
                msg,
                format!(
                    "permission denied writing {} (check the folder's owner and mode)",
                    path.display()
                )
            );
        }
        // reading (seeding) still works, extending is refused the same way
        let mut b = [0u8; 4];
        st.read_at(0, &mut b).unwrap();
        assert_eq!(&b, b"seed");
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"seed");
}

fn read_only_file_by_mode_bits(mode: StorageMode) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"seed").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
    // seeding from a read-only file works for everyone
    let mut b = [0u8; 4];
    st.read_at(0, &mut b).unwrap();
    assert_eq!(&b, b"seed");
    st.create_files().unwrap();
    let w = st.write_at(0, b"evil");
    if euid_is_root() {
        // root ignores mode bits: the fallback path cannot be reached this way (it is
        // covered by write_to_a_read_only_fallback_handle_names_the_cause_and_the_file)
        return;
    }
    let e = w.unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::PermissionDenied, "{e}");
    assert!(
        e.to_string().starts_with("permission denied writing"),
        "{e}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"seed");
}

fn unwritable_folder_reports_permission_denied_creating(mode: StorageMode) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    std::fs::set_permissions(dir.path().join("t"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let st = new_st(mode, dir.path(), vec![("t/new".into(), 0, 4, false)], 4).unwrap();
    let r = st.write_at(0, b"data");
    std::fs::set_permissions(dir.path().join("t"), std::fs::Permissions::from_mode(0o755)).unwrap();
    if euid_is_root() {
        return; // root ignores mode bits
    }
    let e = r.unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::PermissionDenied, "{e}");
    assert!(
        e.to_string().starts_with("permission denied creating"),
        "{e}"
    );
}

fn short_file_is_truncated_data(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), vec![1u8; 6]).unwrap();
    let st = new_st(mode, dir.path(), vec![("f".into(), 0, 10, false)], 10).unwrap();
    let mut b = [0u8; 10];
    let e = st.read_at(0, &mut b).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
    assert!(e.is_missing_data());
    assert!(
        matches!(
            e,
            StorageError::Truncated {
                length: 6,
                needed: 10,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 6);
}

fn deleted_and_replaced_files_are_detected(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let st = new_st(mode, dir.path(), layout(), 36_389).unwrap();
    st.create_files().unwrap();
    st.verify_files_present().unwrap();
    // replaced: another file renamed over b.bin
    let b = dir.path().join("t/sub/b.bin");
    std::fs::write(dir.path().join("other"), vec![0u8; 20_000]).unwrap();
    std::fs::rename(dir.path().join("other"), &b).unwrap();
    let e = st.verify_files_present().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
    assert_eq!(e.path(), Some(b.as_path()));
    assert!(st.verify_range_present(16_384, 10).is_err());
    assert!(st.verify_range_present(0, 10_000).is_ok(), "a.bin is fine");
    // after close_all the file at the path is used
    st.close_all();
    st.verify_files_present().unwrap();
    st.create_files().unwrap(); // opens every file again
    // unlinked
    std::fs::remove_file(dir.path().join("t/c.bin")).unwrap();
    let e = st.verify_files_present().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
    st.close_all();
    let e = st.verify_files_present().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::NotFound, "{e}");
    // restored, but short
    std::fs::write(dir.path().join("t/c.bin"), b"abc").unwrap();
    let e = st.verify_files_present().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
    st.create_files().unwrap();
    st.verify_files_present().unwrap();
}

fn deleted_download_folder_is_reported_not_recreated(mode: StorageMode) {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("dl");
    let st = new_st(mode, &root, layout(), 36_389).unwrap();
    st.create_files().unwrap();
    st.write_at(0, &[5u8; 100]).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    // open handles keep writing into unlinked files: that alone cannot be noticed...
    st.write_at(100, &[5u8; 100]).unwrap();
    // ...but it is when checking
    let e = st.verify_files_present().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
    // once the handles are dropped, I/O fails instead of starting a new, empty folder
    st.close_all();
    let e = st.write_at(0, &[5u8; 100]).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::NotFound, "{e}");
    assert_eq!(e.path(), Some(root.as_path()), "{e}");
    assert!(!root.exists());
    let mut b = [0u8; 10];
    let e = st.read_at(0, &mut b).unwrap_err();
    assert!(e.is_missing_data(), "{e}");
    assert!(!root.exists());
}

fn first_write_cuts_an_oversized_file_to_its_length(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), vec![7u8; 100]).unwrap();
    let st = new_st(mode, dir.path(), vec![("f".into(), 0, 10, false)], 10).unwrap();
    // reading does not touch it
    let mut b = [0u8; 10];
    st.read_at(0, &mut b).unwrap();
    assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 100);
    st.write_at(2, b"ab").unwrap();
    let got = std::fs::read(dir.path().join("f")).unwrap();
    assert_eq!(got, b"\x07\x07ab\x07\x07\x07\x07\x07\x07");
}

#[test]
fn impossible_layouts_are_refused_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let bad: Vec<(Vec<FileSpec>, u64)> = vec![
        (
            vec![("a".into(), 0, 10, false), ("b".into(), 5, 10, false)],
            15,
        ),
        (
            vec![("a".into(), 0, 10, false), ("b".into(), 12, 10, false)],
            22,
        ),
        (vec![("a".into(), 1, 10, false)], 11),
        (vec![("a".into(), 0, 10, false)], 11),
        (
            vec![
                ("a".into(), 0, u64::MAX, false),
                ("b".into(), u64::MAX, 2, false),
            ],
            1,
        ),
        (vec![("a".into(), u64::MAX, 2, false)], 1),
    ];
    for (files, total) in bad {
        let r = Storage::new(dir.path(), files.clone(), total);
        assert!(
            matches!(r, Err(StorageError::BadLayout { .. })),
            "{files:?} {total}"
        );
        assert_eq!(r.unwrap_err().kind(), StorageErrorKind::Refused);
    }
    Storage::new(dir.path(), Vec::new(), 0).unwrap();
}

fn symlinked_folder_deep_in_the_path_creates_nothing_outside(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("t")).unwrap();
    let st = new_st(
        mode,
        dir.path(),
        vec![("t/sub/deeper/evil".into(), 0, 4, false)],
        4,
    )
    .unwrap();
    let e = st.write_at(0, b"evil").unwrap_err();
    assert!(matches!(e, StorageError::Escapes { .. }), "{e}");
    assert!(st.create_files().is_err());
    assert!(!outside.path().join("sub").exists());
    // reading through it is refused too (no serving files from outside)
    std::fs::create_dir_all(outside.path().join("sub/deeper")).unwrap();
    std::fs::write(outside.path().join("sub/deeper/evil"), b"priv").unwrap();
    let mut b = [0u8; 4];
    let e = st.read_at(0, &mut b).unwrap_err();
    assert!(matches!(e, StorageError::Escapes { .. }), "{e}");
}

fn symlinked_folder_inside_the_download_dir_is_fine(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("t")).unwrap();
    let st = new_st(mode, dir.path(), vec![("t/f".into(), 0, 4, false)], 4).unwrap();
    st.write_at(0, b"good").unwrap();
    assert_eq!(std::fs::read(dir.path().join("real/f")).unwrap(), b"good");
}

fn symlinked_file_is_refused_with_a_clear_kind(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim"), b"keep").unwrap();
    std::os::unix::fs::symlink(outside.path().join("victim"), dir.path().join("f")).unwrap();
    let st = new_st(mode, dir.path(), vec![("f".into(), 0, 4, false)], 4).unwrap();
    let e = st.write_at(0, b"evil").unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Refused, "{e}");
    let mut b = [0u8; 4];
    let e = st.read_at(0, &mut b).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Refused, "{e}");
    assert_eq!(
        std::fs::read(outside.path().join("victim")).unwrap(),
        b"keep"
    );
}

fn opts(mode: StorageMode, handles: &HandleCache, preallocate: Preallocate) -> StorageOptions {
    StorageOptions {
        mode,
        preallocate,
        handles: handles.clone(),
    }
}

fn many_files_keep_working_beyond_the_handle_cap(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let cache = HandleCache::new(8);
    // 3 torrents of 10 files each share a cache of 8 handles
    let stores: Vec<Storage> = (0..3)
        .map(|t| {
            let files =
                (0..10u64).map(|i| (PathBuf::from(format!("t{t}/f{i}")), i * 100, 100, false));
            let st = Storage::with_options(
                dir.path(),
                files,
                1000,
                opts(mode, &cache, Preallocate::Sparse),
            )
            .unwrap();
            st.prepare_root().unwrap();
            st
        })
        .collect();
    let data: Vec<u8> = (0..1000u32).map(|i| (i % 253) as u8).collect();
    for round in 0..3 {
        for st in &stores {
            for i in 0..10 {
                let r = i * 100..i * 100 + 100;
                if round == 0 {
                    st.write_at(r.start as u64, &data[r.clone()]).unwrap();
                }
                let mut b = vec![0u8; 100];
                st.read_at(r.start as u64, &mut b).unwrap();
                assert_eq!(b, data[r]);
                assert!(cache.open_count() <= 8, "{}", cache.open_count());
            }
        }
    }
    assert!(cache.evicted_total() > 0);
    stores[0].verify_files_present().unwrap();
    // a file replaced while its handle was closed by the cache is still caught
    let victim = dir.path().join("t0/f0");
    assert!(stores[0].files()[0].cell.get().is_none(), "f0 was evicted");
    std::fs::remove_file(&victim).unwrap();
    std::fs::write(&victim, &data[..100]).unwrap();
    let e = stores[0].verify_files_present().unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
    let mut b = vec![0u8; 100];
    let e = stores[0].read_at(0, &mut b).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
    // a deleted one is not created again by a write
    std::fs::remove_file(dir.path().join("t0/f1")).unwrap();
    cache.close(&stores[0].files()[1].cell);
    let e = stores[0].write_at(100, &data[..100]).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::FileDeleted, "{e}");
    assert!(!dir.path().join("t0/f1").exists());
    // close_all takes the files as they are now
    stores[0].close_all();
    stores[0].read_at(0, &mut b).unwrap();
    drop(stores);
    assert_eq!(
        cache.open_count(),
        0,
        "dropped storages give their handles back"
    );
}

fn nothing_is_created_until_written_then_the_empty_files(mode: StorageMode) {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("dl");
    let st = new_st(mode, &root, layout(), 36_389).unwrap();
    let mut b = [0u8; 10];
    assert!(st.read_at(0, &mut b).unwrap_err().is_missing_data());
    assert!(!st.any_data_present());
    st.verify_files_present().unwrap_err();
    assert!(!root.exists(), "reading and checking create nothing");
    // no download folder yet: a write does not create it
    let e = st.write_at(0, b"x").unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::NotFound, "{e}");
    assert!(!root.exists());
    st.prepare_root().unwrap();
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        0,
        "only the folder"
    );
    st.write_at(16_384, b"b").unwrap();
    assert!(root.join("t/sub/b.bin").exists());
    assert!(!root.join("t/a.bin").exists() && !root.join("t/c.bin").exists());
    assert!(!root.join("t/empty").exists());
    st.create_empty_files().unwrap();
    assert_eq!(std::fs::metadata(root.join("t/empty")).unwrap().len(), 0);
    assert!(!root.join("t/.pad").exists());
    st.create_empty_files().unwrap(); // idempotent
}

fn full_preallocation_allocates_on_first_write(mode: StorageMode) {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let len = 8u64 << 20;
    let cache = HandleCache::new(16);
    for (pre, want_full) in [(Preallocate::Sparse, false), (Preallocate::Full, true)] {
        let name = format!("{pre:?}");
        let st = Storage::with_options(
            dir.path(),
            vec![(PathBuf::from(&name), 0, len, false)],
            len,
            opts(mode, &cache, pre),
        )
        .unwrap();
        st.write_at(len - 4, b"tail").unwrap();
        let m = std::fs::metadata(dir.path().join(&name)).unwrap();
        assert_eq!(m.len(), len, "{name}");
        let allocated = m.blocks() * 512;
        assert_eq!(
            allocated >= len,
            want_full,
            "{name}: {allocated} bytes allocated"
        );
        let mut b = [0u8; 4];
        st.read_at(len - 4, &mut b).unwrap();
        assert_eq!(&b, b"tail");
        st.read_at(0, &mut b).unwrap();
        assert_eq!(b, [0; 4]);
    }
}

fn truncated_under_the_storage_is_an_error_not_a_crash(mode: StorageMode) {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 249) as u8).collect();
    std::fs::write(dir.path().join("f"), &data).unwrap();
    let st = new_st(
        mode,
        dir.path(),
        vec![("f".into(), 0, 1_000_000, false)],
        1_000_000,
    )
    .unwrap();
    let mut b = vec![0u8; 100_000];
    st.read_at(800_000, &mut b).unwrap(); // mapped now (mmap mode)
    assert_eq!(b, data[800_000..900_000]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("f"))
        .unwrap()
        .set_len(500_000)
        .unwrap();
    let e = st.read_at(800_000, &mut b).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
    let mut seen = 0;
    let mut scratch = Vec::new();
    let e = st
        .read_with(400_000, 200_000, &mut scratch, |s| seen += s.len())
        .unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
    // the part before the cut still reads
    st.read_at(0, &mut b).unwrap();
    assert_eq!(b, data[..100_000]);
    // a write past the new end: mmap mode refuses (its mapping would fault), file
    // mode writes (pwrite extends the file)
    let w = st.write_at(900_000, &[1u8; 10]);
    match mode {
        StorageMode::Mmap => {
            // the first write sizes the file to its length again, so this one works
            w.unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.path().join("f"))
                .unwrap()
                .set_len(500_000)
                .unwrap();
            let e = st.write_at(900_000, &[1u8; 10]).unwrap_err();
            assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
        }
        StorageMode::File => w.unwrap(),
    }
}

/// Each storage test, once per mode.
macro_rules! in_both_modes {
    ($($name:ident),* $(,)?) => {
        mod file_mode {
            $(#[test]
            fn $name() {
                super::$name(super::StorageMode::File)
            })*
        }
        mod mmap_mode {
            $(#[test]
            fn $name() {
                super::$name(super::StorageMode::Mmap)
            })*
        }
    };
}

in_both_modes!(
    many_files_keep_working_beyond_the_handle_cap,
    nothing_is_created_until_written_then_the_empty_files,
    full_preallocation_allocates_on_first_write,
    truncated_under_the_storage_is_an_error_not_a_crash,
    writes_span_files_and_skip_pads,
    skipped_files_are_not_created_and_their_bytes_move_in_when_wanted,
    a_huge_pieces_share_moves_into_its_file_in_steps,
    out_of_range_is_an_error,
    missing_file_reads_as_missing_data,
    symlinked_directory_escaping_root_is_refused,
    symlinked_file_is_not_followed,
    existing_longer_file_is_not_truncated,
    write_to_a_read_only_fallback_handle_names_the_cause_and_the_file,
    read_only_file_by_mode_bits,
    unwritable_folder_reports_permission_denied_creating,
    short_file_is_truncated_data,
    deleted_and_replaced_files_are_detected,
    deleted_download_folder_is_reported_not_recreated,
    first_write_cuts_an_oversized_file_to_its_length,
    symlinked_folder_deep_in_the_path_creates_nothing_outside,
    symlinked_folder_inside_the_download_dir_is_fine,
    symlinked_file_is_refused_with_a_clear_kind,
);

/// Files a (0..100), b (100..300), c (300..340) in pieces of 64 bytes.
fn verified_layout() -> (Vec<PathBuf>, Vec<crate::piece::FileSpan>, Geometry) {
    let spans = [(0, 100), (100, 200), (300, 40)]
        .map(|(offset, length)| crate::piece::FileSpan {
            offset,
            length,
            pad: false,
        })
        .to_vec();
    let paths = ["a", "b", "c"].map(PathBuf::from).to_vec();
    (paths, spans, Geometry::new(340, 64, 6).unwrap())
}

#[test]
fn a_file_needs_only_the_bytes_its_verified_pieces_hold() {
    let (_, spans, geo) = verified_layout();
    let mut have = crate::piece::Bitfield::new(6);
    assert_eq!(
        verified_extent(&spans[1], &geo, &have),
        0,
        "nothing verified"
    );
    have.set(0);
    assert_eq!(verified_extent(&spans[0], &geo, &have), 64);
    assert_eq!(verified_extent(&spans[1], &geo, &have), 0);
    have.set(2); // bytes 128..192: b's 28..92
    assert_eq!(verified_extent(&spans[1], &geo, &have), 92);
    have.set(4); // bytes 256..320: b's end and c's first 20 bytes
    assert_eq!(
        verified_extent(&spans[1], &geo, &have),
        200,
        "the whole file"
    );
    assert_eq!(verified_extent(&spans[2], &geo, &have), 20);
}

#[test]
fn stopped_torrent_files_are_checked_for_their_verified_bytes_only() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, spans, geo) = verified_layout();
    let mut have = crate::piece::Bitfield::new(6);
    have.set(0);
    have.set(2);
    let none = |_: usize| false;
    // a holds piece 0, b piece 2 (up to byte 92 of it); c holds nothing verified
    let e = check_verified_files(dir.path(), &paths, &spans, &geo, &have, &none).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains('a'), "{e}");
    std::fs::write(dir.path().join("a"), [0u8; 100]).unwrap();
    std::fs::write(dir.path().join("b"), [0u8; 91]).unwrap();
    let e = check_verified_files(dir.path(), &paths, &spans, &geo, &have, &none).unwrap_err();
    assert_eq!(e.kind(), StorageErrorKind::Truncated, "{e}");
    // a partly written file skipped: never looked at
    let skip_b = |i: usize| i == 1;
    check_verified_files(dir.path(), &paths, &spans, &geo, &have, &skip_b).unwrap();
    std::fs::write(dir.path().join("b"), [0u8; 92]).unwrap();
    check_verified_files(dir.path(), &paths, &spans, &geo, &have, &none).unwrap();
    // a folder where a file should be
    std::fs::remove_file(dir.path().join("a")).unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    assert!(check_verified_files(dir.path(), &paths, &spans, &geo, &have, &none).is_err());
}
