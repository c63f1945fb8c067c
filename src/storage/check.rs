//! Checking data already on disk against the piece hashes (resume, seeding, `ratorrent check`).
//!
//! Checking is read-only: it never creates, extends or truncates a file. A file longer than
//! the torrent says is reported ([`CheckReport::oversized`]) and the piece holding its end
//! is left unverified, since the file as a whole differs from the torrent's; the file is
//! cut to its exact length when the torrent writes that piece
//! ([`super::Storage::write_at`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use sha1::{Digest, Sha1};

use super::{Storage, StorageError};
use crate::piece::{Bitfield, Geometry};

/// What checking the files found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Pieces whose data matches their SHA-1 (and which do not hold the end of an oversized
    /// file). `piece_count` bits.
    pub have: Bitfield,
    /// Files on disk longer than the torrent says, in payload order. The piece holding each
    /// one's last byte is not in `have` (a zero-length file holds no piece). Nothing was
    /// changed: each is cut to its exact length on the torrent's first write to it.
    pub oversized: Vec<PathBuf>,
    /// Files that exist but could not be read (permission denied, I/O error), each once with
    /// its first error, in the order met; their pieces are not in `have`. Missing and short
    /// files are not listed: that is ordinary missing data.
    pub unreadable: Vec<StorageError>,
    /// False when `cancel` stopped the check early (`have` then holds only the pieces
    /// checked so far).
    pub finished: bool,
}

/// Hash every piece of `storage` (laid out as `geo`, expected SHA-1s `hashes`, BEP 3
/// `pieces`) with `threads` threads (contiguous ranges, so reads stay sequential per thread)
/// and return the pieces whose data matches. Missing files or short files simply leave
/// their pieces unset, and so does the piece holding the end of a file longer than the
/// torrent says. `progress` counts pieces checked; `cancel` stops early (the result then
/// has only the pieces checked so far). See [`check_report`] for what else was found.
pub fn check_pieces(
    storage: &Storage,
    geo: Geometry,
    hashes: &[[u8; 20]],
    threads: usize,
    progress: &AtomicU32,
    cancel: &AtomicBool,
) -> Bitfield {
    check_report(storage, geo, hashes, threads, progress, cancel).have
}

/// [`check_pieces`], reporting also the files longer than the torrent says and the files
/// that could not be read. Read-only. Starts with [`Storage::close_all`], so the files at
/// their paths are read, not handles opened before (a re-check after the user restored
/// files sees the restored files). `threads` is clamped to 1..=piece count; one buffer of
/// `piece length` bytes per thread.
pub fn check_report(
    storage: &Storage,
    geo: Geometry,
    hashes: &[[u8; 20]],
    threads: usize,
    progress: &AtomicU32,
    cancel: &AtomicBool,
) -> CheckReport {
    storage.close_all();
    let n = geo.piece_count().min(hashes.len() as u32);
    // the piece holding the last byte of an oversized file cannot match the file on disk
    let mut oversized = Vec::new();
    let mut skip = Bitfield::new(n);
    for f in storage.files().iter().filter(|f| !f.pad) {
        let on_disk =
            std::fs::symlink_metadata(&f.path).map_or(0, |m| if m.is_file() { m.len() } else { 0 });
        if on_disk > f.length {
            oversized.push(f.path.clone());
            if f.length > 0 {
                for p in geo.pieces_of_range(f.offset + f.length - 1, 1) {
                    if p < n {
                        skip.set(p);
                    }
                }
            }
        }
    }
    let threads = (threads.clamp(1, 1024) as u32).min(n.max(1));
    let per = n.div_ceil(threads);
    let skip = &skip;
    let results: Vec<(Vec<u32>, Vec<StorageError>, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (from, to) = (t * per, ((t + 1) * per).min(n));
                s.spawn(move || {
                    let mut ok = Vec::new();
                    let mut errors: Vec<StorageError> = Vec::new();
                    let mut buf = vec![0u8; geo.piece_length() as usize];
                    for p in from..to {
                        if cancel.load(Ordering::Relaxed) {
                            return (ok, errors, false);
                        }
                        if !skip.get(p) {
                            let len = geo.piece_size(p) as usize;
                            let off = geo.piece_offset(p);
                            match storage.read_at(off, &mut buf[..len]) {
                                Ok(()) => {
                                    if Sha1::digest(&buf[..len]).as_slice() == hashes[p as usize] {
                                        ok.push(p);
                                    }
                                }
                                Err(e) if e.is_missing_data() => {}
                                Err(e) => {
                                    if !errors.iter().any(|x| x.path() == e.path()) {
                                        errors.push(e);
                                    }
                                }
                            }
                        }
                        progress.fetch_add(1, Ordering::Relaxed);
                    }
                    (ok, errors, true)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut have = Bitfield::new(n);
    let mut unreadable: Vec<StorageError> = Vec::new();
    let mut finished = true;
    for (ok, errors, done) in results {
        for p in ok {
            have.set(p);
        }
        for e in errors {
            if !unreadable.iter().any(|x| x.path() == e.path()) {
                unreadable.push(e);
            }
        }
        finished &= done;
    }
    CheckReport {
        have,
        oversized,
        unreadable,
        finished,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_good_pieces_and_skips_bad_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
        let plen = 16_384u32;
        let hashes: Vec<[u8; 20]> = payload
            .chunks(plen as usize)
            .map(|c| Sha1::digest(c).into())
            .collect();
        // file a: first 50000 bytes, corrupted at byte 20000 (piece 1); file b missing
        let mut a = payload[..50_000].to_vec();
        a[20_000] ^= 0xff;
        std::fs::write(dir.path().join("a"), &a).unwrap();
        let st = Storage::new(
            dir.path(),
            vec![
                ("a".into(), 0, 50_000, false),
                ("b".into(), 50_000, 50_000, false),
            ],
            100_000,
        )
        .unwrap();
        let geo = Geometry::new(100_000, plen, hashes.len() as u32).unwrap();
        let progress = AtomicU32::new(0);
        let have = check_pieces(&st, geo, &hashes, 3, &progress, &AtomicBool::new(false));
        assert_eq!(have.ones().collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(progress.load(Ordering::Relaxed), 7);
        // complete data: every piece
        std::fs::write(dir.path().join("a"), &payload[..50_000]).unwrap();
        std::fs::write(dir.path().join("b"), &payload[50_000..]).unwrap();
        let have = check_pieces(&st, geo, &hashes, 2, &progress, &AtomicBool::new(false));
        assert!(have.is_full());
    }

    fn hashes_of(payload: &[u8], plen: u32) -> Vec<[u8; 20]> {
        payload
            .chunks(plen as usize)
            .map(|c| Sha1::digest(c).into())
            .collect()
    }

    #[test]
    fn oversized_file_leaves_its_last_piece_unverified_until_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 239) as u8).collect();
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        // a: 0..50000 correct but 1000 bytes too long; b: correct
        let mut a = payload[..50_000].to_vec();
        a.extend(std::iter::repeat_n(0xee, 1000));
        std::fs::write(dir.path().join("a"), &a).unwrap();
        std::fs::write(dir.path().join("b"), &payload[50_000..]).unwrap();
        let st = Storage::new(
            dir.path(),
            vec![
                ("a".into(), 0, 50_000, false),
                ("b".into(), 50_000, 50_000, false),
            ],
            100_000,
        )
        .unwrap();
        let geo = Geometry::new(100_000, plen, hashes.len() as u32).unwrap();
        let progress = AtomicU32::new(0);
        let r = check_report(&st, geo, &hashes, 2, &progress, &AtomicBool::new(false));
        // byte 49999 (a's last) is in piece 3 (49152..65536)
        assert_eq!(r.have.ones().collect::<Vec<_>>(), vec![0, 1, 2, 4, 5, 6]);
        assert_eq!(r.oversized, vec![dir.path().join("a")]);
        assert!(r.unreadable.is_empty() && r.finished);
        assert_eq!(progress.load(Ordering::Relaxed), 7);
        // checking is read-only
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), a);
        st.create_files().unwrap();
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), a);
        // downloading the missing piece makes the file byte-exact
        let p = 3usize;
        let range = p * plen as usize..(p + 1) * plen as usize;
        st.write_at(range.start as u64, &payload[range]).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("a")).unwrap(),
            &payload[..50_000]
        );
        assert_eq!(
            std::fs::read(dir.path().join("b")).unwrap(),
            &payload[50_000..]
        );
        let r = check_report(&st, geo, &hashes, 2, &progress, &AtomicBool::new(false));
        assert!(r.have.is_full() && r.oversized.is_empty());
        st.verify_files_present().unwrap();
    }

    #[test]
    fn oversized_last_file_and_zero_length_file() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..40_000u32).map(|i| (i % 233) as u8).collect();
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        let mut a = payload.clone();
        a.push(1);
        std::fs::write(dir.path().join("a"), &a).unwrap();
        std::fs::write(dir.path().join("empty"), b"junk").unwrap();
        let st = Storage::new(
            dir.path(),
            vec![
                ("a".into(), 0, 40_000, false),
                ("empty".into(), 40_000, 0, false),
            ],
            40_000,
        )
        .unwrap();
        let geo = Geometry::new(40_000, plen, hashes.len() as u32).unwrap();
        let have = check_pieces(
            &st,
            geo,
            &hashes,
            8,
            &AtomicU32::new(0),
            &AtomicBool::new(false),
        );
        assert_eq!(have.ones().collect::<Vec<_>>(), vec![0, 1]);
        let r = check_report(
            &st,
            geo,
            &hashes,
            1,
            &AtomicU32::new(0),
            &AtomicBool::new(false),
        );
        assert_eq!(
            r.oversized,
            vec![dir.path().join("a"), dir.path().join("empty")]
        );
        assert_eq!(std::fs::read(dir.path().join("empty")).unwrap(), b"junk");
    }

    #[test]
    fn unreadable_files_are_reported_and_cancel_is_not_finished() {
        let dir = tempfile::tempdir().unwrap();
        let payload = vec![3u8; 40_000];
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        // a directory where a file should be: an error that is not missing data
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/x"), b"x").unwrap();
        let st = Storage::new(dir.path(), vec![("a".into(), 0, 40_000, false)], 40_000).unwrap();
        let geo = Geometry::new(40_000, plen, hashes.len() as u32).unwrap();
        let r = check_report(
            &st,
            geo,
            &hashes,
            2,
            &AtomicU32::new(0),
            &AtomicBool::new(false),
        );
        assert_eq!(r.have.count(), 0);
        assert_eq!(r.unreadable.len(), 1, "{:?}", r.unreadable);
        assert_eq!(r.unreadable[0].path(), Some(dir.path().join("a").as_path()));
        let r = check_report(
            &st,
            geo,
            &hashes,
            2,
            &AtomicU32::new(0),
            &AtomicBool::new(true),
        );
        assert!(!r.finished);
    }

    #[test]
    fn recheck_reads_the_files_at_their_paths_not_old_handles() {
        let dir = tempfile::tempdir().unwrap();
        let payload = vec![9u8; 20_000];
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        std::fs::write(dir.path().join("a"), &payload).unwrap();
        let st = Storage::new(dir.path(), vec![("a".into(), 0, 20_000, false)], 20_000).unwrap();
        let geo = Geometry::new(20_000, plen, 2).unwrap();
        let zero = || AtomicU32::new(0);
        let no = || AtomicBool::new(false);
        assert!(check_pieces(&st, geo, &hashes, 1, &zero(), &no()).is_full());
        // the handle is open; the file is deleted: a re-check must not see the old inode
        std::fs::remove_file(dir.path().join("a")).unwrap();
        assert_eq!(
            check_pieces(&st, geo, &hashes, 1, &zero(), &no()).count(),
            0
        );
        assert!(
            !dir.path().join("a").exists(),
            "checking never creates files"
        );
    }
}
