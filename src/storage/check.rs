//! Checking data already on disk against the piece hashes (resume, seeding, `ratorrent check`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use sha1::{Digest, Sha1};

use super::Storage;
use crate::piece::{Bitfield, Geometry};

/// Hash every piece of `storage` (laid out as `geo`, expected SHA-1s `hashes`, BEP 3
/// `pieces`) with `threads` threads (contiguous ranges, so reads stay sequential per thread)
/// and return the pieces whose data matches. Missing files or short
/// files simply leave their pieces unset. `progress` counts pieces checked; `cancel` stops
/// early (the result then has only the pieces checked so far).
pub fn check_pieces(
    storage: &Storage,
    geo: Geometry,
    hashes: &[[u8; 20]],
    threads: usize,
    progress: &AtomicU32,
    cancel: &AtomicBool,
) -> Bitfield {
    let n = geo.piece_count().min(hashes.len() as u32);
    let threads = (threads.max(1) as u32).min(n.max(1));
    let per = n.div_ceil(threads);
    let results: Vec<Vec<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (from, to) = (t * per, ((t + 1) * per).min(n));
                s.spawn(move || {
                    let mut ok = Vec::new();
                    let mut buf = vec![0u8; geo.piece_length() as usize];
                    for p in from..to {
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                        let len = geo.piece_size(p) as usize;
                        let off = geo.piece_offset(p);
                        if storage.read_at(off, &mut buf[..len]).is_ok()
                            && Sha1::digest(&buf[..len]).as_slice() == hashes[p as usize]
                        {
                            ok.push(p);
                        }
                        progress.fetch_add(1, Ordering::Relaxed);
                    }
                    ok
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut have = Bitfield::new(n);
    for p in results.into_iter().flatten() {
        have.set(p);
    }
    have
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
}
