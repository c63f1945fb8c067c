//! Checking data already on disk against the piece hashes (resume, seeding, `ratorrent check`).
//!
//! Checking is read-only: it never creates, extends or truncates a file. A file longer than
//! the torrent says is reported ([`CheckReport::oversized`]) and the piece holding its end
//! is left unverified, since the file as a whole differs from the torrent's; the file is
//! cut to its exact length when the torrent writes that piece
//! ([`super::Storage::write_at`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::{Storage, StorageError};
use crate::piece::{Bitfield, Geometry, PieceHashes, PieceVerifier};

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

/// Bytes a check worker takes at once (its unit of work and of read-ahead): several pieces
/// when they are small, a part of one when they are large. `file` mode reads them in
/// [`crate::storage::READ_SIZE`] steps; `mmap` mode hashes them from the mapping.
pub const CHECK_CHUNK: usize = 4 << 20;

/// Hash every piece of `storage` (laid out as `geo`, expected hashes `hashes`: BEP 3
/// SHA-1s, BEP 52 Merkle hashes, or both) with `threads` threads and return the pieces whose data matches. Missing files
/// or short files simply leave their pieces unset, and so does the piece holding the end of
/// a file longer than the torrent says. `progress` counts pieces checked; `cancel` stops
/// early (the result then has only the pieces checked so far). See [`check_report_with`]
/// for how, and [`check_report`] for what else was found.
pub fn check_pieces(
    storage: &Storage,
    geo: Geometry,
    hashes: &PieceHashes,
    threads: usize,
    progress: &AtomicU32,
    cancel: &AtomicBool,
) -> Bitfield {
    check_report(storage, geo, hashes, threads, progress, cancel).have
}

/// [`check_pieces`], reporting also the files longer than the torrent says and the files
/// that could not be read. See [`check_report_with`].
pub fn check_report(
    storage: &Storage,
    geo: Geometry,
    hashes: &PieceHashes,
    threads: usize,
    progress: &AtomicU32,
    cancel: &AtomicBool,
) -> CheckReport {
    check_report_with(storage, geo, hashes, threads, progress, cancel, |_, _| {})
}

/// [`check_report`], calling `on_piece(piece, verified)` on a check thread as soon as each
/// piece is decided (in no particular order, each piece once, before `progress` counts it),
/// so a long re-check can make the pieces verified so far usable at once. `verified` is
/// false for a piece whose data is missing, unreadable or wrong. `on_piece` must be quick
/// and must not block (send to a channel or set a bit).
///
/// Read-only. Starts with [`Storage::close_all`], so the files at their paths are read, not
/// handles opened before (a re-check after the user restored files sees the restored
/// files).
///
/// How: `threads` workers (clamped to 1..=1024 and to the number of work units) take
/// units in payload order from a shared counter, so the file is read front to back.
/// A unit is [`CHECK_CHUNK`] bytes of whole pieces (read in order) or, for pieces larger than
/// that, one piece read in `CHECK_CHUNK` parts into one hasher. Each worker asks the kernel
/// to read ahead (`POSIX_FADV_WILLNEED`) the next `2 × threads` chunks past what it reads,
/// so the disk works while the cores hash; files are opened with `POSIX_FADV_SEQUENTIAL`.
/// Memory: one [`crate::storage::READ_SIZE`] buffer per worker in `file` mode, whatever the
/// piece size (small reads keep it in the CPU cache, which makes the kernel's copy out of
/// the page cache about three times cheaper than reads of several MiB; the disk still gets
/// large requests through read-ahead). `mmap` mode hashes the page cache's own pages. A unit that fails
/// to read (a missing or short file in the middle) is checked again piece by piece, so
/// its good pieces still count.
pub fn check_report_with(
    storage: &Storage,
    geo: Geometry,
    hashes: &PieceHashes,
    threads: usize,
    progress: &AtomicU32,
    cancel: &AtomicBool,
    on_piece: impl Fn(u32, bool) + Sync,
) -> CheckReport {
    storage.close_all();
    let n = geo.piece_count();
    // the piece holding the last byte of an oversized file cannot match the file on disk
    let mut oversized = Vec::new();
    let mut skip = Bitfield::new(n);
    for f in storage.files().iter().filter(|f| !f.span.pad) {
        let on_disk =
            std::fs::symlink_metadata(&f.path).map_or(0, |m| if m.is_file() { m.len() } else { 0 });
        if on_disk > f.span.length {
            oversized.push(f.path.clone());
            if f.span.length > 0 {
                for p in geo.pieces_of_range(f.span.offset + f.span.length - 1, 1) {
                    if p < n {
                        skip.set(p);
                    }
                }
            }
        }
    }
    let plen = geo.piece_length().max(1) as usize;
    let per_unit = (CHECK_CHUNK / plen).max(1) as u32;
    let units = n.div_ceil(per_unit);
    let workers = (threads.clamp(1, 1024) as u32).min(units.max(1));
    let job = Job {
        storage,
        geo,
        hashes,
        skip: &skip,
        per_unit,
        n,
        ahead: 2 * u64::from(workers) * CHECK_CHUNK as u64,
        progress,
        on_piece: &on_piece,
    };
    let next = AtomicU32::new(0);
    let results: Vec<WorkerResult> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (job, next) = (&job, &next);
                s.spawn(move || {
                    let mut w = WorkerResult {
                        finished: true,
                        ..WorkerResult::default()
                    };
                    let mut buf = Vec::new();
                    loop {
                        if cancel.load(Ordering::Relaxed) {
                            w.finished = false;
                            break;
                        }
                        let u = next.fetch_add(1, Ordering::Relaxed);
                        if u >= units {
                            break;
                        }
                        job.unit(u, &mut buf, cancel, &mut w);
                    }
                    w
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
    for w in results {
        for p in w.ok {
            have.set(p);
        }
        for e in w.errors {
            if !unreadable.iter().any(|x| x.path() == e.path()) {
                unreadable.push(e);
            }
        }
        finished &= w.finished;
    }
    CheckReport {
        have,
        oversized,
        unreadable,
        finished,
    }
}

/// What one worker found.
#[derive(Default)]
struct WorkerResult {
    ok: Vec<u32>,
    errors: Vec<StorageError>,
    /// False when cancelled.
    finished: bool,
}

/// What every worker of one check shares.
struct Job<'a, F> {
    storage: &'a Storage,
    geo: Geometry,
    hashes: &'a PieceHashes,
    skip: &'a Bitfield,
    /// Pieces per unit (1 for pieces of `CHECK_CHUNK` bytes or more).
    per_unit: u32,
    /// Pieces to check.
    n: u32,
    /// Read-ahead past each read, bytes.
    ahead: u64,
    progress: &'a AtomicU32,
    on_piece: &'a F,
}

impl<F: Fn(u32, bool) + Sync> Job<'_, F> {
    fn done(&self, p: u32, ok: bool, w: &mut WorkerResult) {
        let ok = ok && !self.skip.get(p);
        (self.on_piece)(p, ok);
        if ok {
            w.ok.push(p);
        }
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    fn failed(&self, e: StorageError, w: &mut WorkerResult) {
        if !e.is_missing_data() && !w.errors.iter().any(|x| x.path() == e.path()) {
            w.errors.push(e);
        }
    }

    fn read_ahead(&self, end: u64) {
        let to = end.saturating_add(self.ahead).min(self.geo.total_length());
        if to > end {
            self.storage.will_need(end, to - end);
        }
    }

    fn matches(&self, p: u32, hasher: PieceVerifier) -> bool {
        hasher.matches(self.hashes, p)
    }

    /// Check unit `u`.
    fn unit(&self, u: u32, buf: &mut Vec<u8>, cancel: &AtomicBool, w: &mut WorkerResult) {
        let first = u * self.per_unit;
        let last = (first + self.per_unit).min(self.n);
        if self.per_unit == 1 {
            self.piece(first, buf, cancel, w);
            return;
        }
        let start = self.geo.piece_offset(first);
        let end = self.geo.piece_range(last - 1).end;
        self.read_ahead(end);
        // one read for the unit; piece boundaries fall anywhere in the slices
        let mut found = Vec::with_capacity((last - first) as usize);
        let mut piece = first;
        let mut left = self.geo.piece_size(first) as usize;
        let mut hasher = PieceVerifier::new(self.hashes, first);
        let r = self
            .storage
            .read_with(start, (end - start) as usize, buf, |mut bytes| {
                while !bytes.is_empty() && piece < last {
                    let k = left.min(bytes.len());
                    hasher.update(&bytes[..k]);
                    bytes = &bytes[k..];
                    left -= k;
                    if left == 0 {
                        let next = PieceVerifier::new(self.hashes, piece + 1);
                        found.push(self.matches(piece, std::mem::replace(&mut hasher, next)));
                        piece += 1;
                        left = self.geo.piece_size(piece) as usize;
                    }
                }
            });
        match r {
            Ok(()) => {
                for (p, ok) in (first..last).zip(found) {
                    self.done(p, ok, w);
                }
            }
            // a file missing or short in the middle: piece by piece, so the rest count
            Err(_) => {
                for p in first..last {
                    if cancel.load(Ordering::Relaxed) {
                        return;
                    }
                    self.piece(p, buf, cancel, w);
                }
            }
        }
    }

    /// Check piece `p` alone, in `CHECK_CHUNK` parts.
    fn piece(&self, p: u32, buf: &mut Vec<u8>, cancel: &AtomicBool, w: &mut WorkerResult) {
        let size = u64::from(self.geo.piece_size(p));
        let start = self.geo.piece_offset(p);
        let mut hasher = PieceVerifier::new(self.hashes, p);
        let mut at = 0u64;
        while at < size {
            if cancel.load(Ordering::Relaxed) {
                return; // not counted: the check is cut short
            }
            let len = (size - at).min(CHECK_CHUNK as u64);
            self.read_ahead(start + at + len);
            if let Err(e) = self
                .storage
                .read_with(start + at, len as usize, buf, |b| hasher.update(b))
            {
                self.failed(e, w);
                self.done(p, false, w);
                return;
            }
            at += len;
        }
        let ok = self.matches(p, hasher);
        self.done(p, ok, w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{FileSpec, StorageMode, StorageOptions};
    use std::path::Path;
    use std::sync::Mutex;

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

    fn big_pieces_are_hashed_in_parts_and_reported_as_they_go(mode: StorageMode) {
        // 3 pieces of 2.5 chunks, the last short; files split inside pieces
        let plen = (CHECK_CHUNK * 5 / 2) as u32;
        let total = 2 * plen as usize + 1_000_003;
        let payload = pattern(total, 7);
        let hashes = hashes_of(&payload, plen);
        let dir = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
        let cut = plen as usize + 12_345;
        std::fs::write(dir.path().join("a"), &payload[..cut]).unwrap();
        let mut b = payload[cut..].to_vec();
        let bad = 2 * plen as usize - cut + 77; // in piece 2
        b[bad] ^= 1;
        std::fs::write(dir.path().join("b"), &b).unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![
                ("a".into(), 0, cut as u64, false),
                ("b".into(), cut as u64, (total - cut) as u64, false),
            ],
            total as u64,
        )
        .unwrap();
        let geo = Geometry::new(total as u64, plen, 3).unwrap();
        let seen = Mutex::new(Vec::new());
        let progress = AtomicU32::new(0);
        let r = check_report_with(
            &st,
            geo,
            &hashes,
            2,
            &progress,
            &AtomicBool::new(false),
            |p, ok| {
                seen.lock().unwrap().push((p, ok));
            },
        );
        assert_eq!(r.have.ones().collect::<Vec<_>>(), vec![0, 1]);
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, vec![(0, true), (1, true), (2, false)]);
        assert_eq!(progress.load(Ordering::Relaxed), 3);
        assert!(r.finished && r.unreadable.is_empty());
    }

    fn many_small_pieces_with_a_missing_file_in_the_middle(mode: StorageMode) {
        // 16 KiB pieces: a unit is 256 pieces; file b (missing) sits inside the first unit
        let plen = 16_384u32;
        let total = 3 * CHECK_CHUNK + 5_000;
        let payload = pattern(total, 3);
        let hashes = hashes_of(&payload, plen);
        let dir = tempfile::tempdir().unwrap();
        let (a_end, b_end) = (100_000usize, 200_000usize);
        std::fs::write(dir.path().join("a"), &payload[..a_end]).unwrap();
        std::fs::write(dir.path().join("c"), &payload[b_end..]).unwrap();
        let files: Vec<FileSpec> = vec![
            ("a".into(), 0, a_end as u64, false),
            ("b".into(), a_end as u64, (b_end - a_end) as u64, false),
            ("c".into(), b_end as u64, (total - b_end) as u64, false),
        ];
        let st = new_st(mode, dir.path(), files, total as u64).unwrap();
        let n = hashes.v1.len() as u32;
        let geo = Geometry::new(total as u64, plen, n).unwrap();
        let count = AtomicU32::new(0);
        let r = check_report_with(
            &st,
            geo,
            &hashes,
            3,
            &AtomicU32::new(0),
            &AtomicBool::new(false),
            |_, ok| {
                if ok {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            },
        );
        let want: Vec<u32> = (0..n)
            .filter(|&p| {
                let r = geo.piece_range(p);
                r.end <= a_end as u64 || r.start >= b_end as u64
            })
            .collect();
        assert_eq!(r.have.ones().collect::<Vec<_>>(), want);
        assert_eq!(count.load(Ordering::Relaxed) as usize, want.len());
        assert!(r.unreadable.is_empty(), "missing is not unreadable");
    }

    fn finds_good_pieces_and_skips_bad_and_missing(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        // file a: first 50000 bytes, corrupted at byte 20000 (piece 1); file b missing
        let mut a = payload[..50_000].to_vec();
        a[20_000] ^= 0xff;
        std::fs::write(dir.path().join("a"), &a).unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![
                ("a".into(), 0, 50_000, false),
                ("b".into(), 50_000, 50_000, false),
            ],
            100_000,
        )
        .unwrap();
        let geo = Geometry::new(100_000, plen, hashes.v1.len() as u32).unwrap();
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

    fn hashes_of(payload: &[u8], plen: u32) -> PieceHashes {
        use sha1::{Digest, Sha1};
        PieceHashes::v1(
            payload
                .chunks(plen as usize)
                .map(|c| Sha1::digest(c).into())
                .collect(),
        )
    }

    fn oversized_file_leaves_its_last_piece_unverified_until_rewritten(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 239) as u8).collect();
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        // a: 0..50000 correct but 1000 bytes too long; b: correct
        let mut a = payload[..50_000].to_vec();
        a.extend(std::iter::repeat_n(0xee, 1000));
        std::fs::write(dir.path().join("a"), &a).unwrap();
        std::fs::write(dir.path().join("b"), &payload[50_000..]).unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![
                ("a".into(), 0, 50_000, false),
                ("b".into(), 50_000, 50_000, false),
            ],
            100_000,
        )
        .unwrap();
        let geo = Geometry::new(100_000, plen, hashes.v1.len() as u32).unwrap();
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

    fn oversized_last_file_and_zero_length_file(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..40_000u32).map(|i| (i % 233) as u8).collect();
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        let mut a = payload.clone();
        a.push(1);
        std::fs::write(dir.path().join("a"), &a).unwrap();
        std::fs::write(dir.path().join("empty"), b"junk").unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![
                ("a".into(), 0, 40_000, false),
                ("empty".into(), 40_000, 0, false),
            ],
            40_000,
        )
        .unwrap();
        let geo = Geometry::new(40_000, plen, hashes.v1.len() as u32).unwrap();
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

    fn unreadable_files_are_reported_and_cancel_is_not_finished(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let payload = vec![3u8; 40_000];
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        // a directory where a file should be: an error that is not missing data
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/x"), b"x").unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![("a".into(), 0, 40_000, false)],
            40_000,
        )
        .unwrap();
        let geo = Geometry::new(40_000, plen, hashes.v1.len() as u32).unwrap();
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

    fn recheck_reads_the_files_at_their_paths_not_old_handles(mode: StorageMode) {
        let dir = tempfile::tempdir().unwrap();
        let payload = vec![9u8; 20_000];
        let plen = 16_384u32;
        let hashes = hashes_of(&payload, plen);
        std::fs::write(dir.path().join("a"), &payload).unwrap();
        let st = new_st(
            mode,
            dir.path(),
            vec![("a".into(), 0, 20_000, false)],
            20_000,
        )
        .unwrap();
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
        big_pieces_are_hashed_in_parts_and_reported_as_they_go,
        many_small_pieces_with_a_missing_file_in_the_middle,
        finds_good_pieces_and_skips_bad_and_missing,
        oversized_file_leaves_its_last_piece_unverified_until_rewritten,
        oversized_last_file_and_zero_length_file,
        unreadable_files_are_reported_and_cancel_is_not_finished,
        recheck_reads_the_files_at_their_paths_not_old_handles,
    );
}
