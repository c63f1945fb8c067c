//! Skipped-file routing: a file set to skip that does not exist yet is never created; the
//! bytes of it that a downloaded piece holds (a piece it shares with a wanted file) go to
//! the torrent's [`PartFile`] and come back from there, and move into the file when it is
//! wanted again ([`PartRoute::set_skipped`]). The part file's descriptor is not in the handle
//! cache (at most one per torrent with skipped files).

use std::io;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use super::error::{StorageError, io_err};
use super::layout::{FileSlot, Files};
use super::open::Opener;
use super::part_file::PartFile;
use crate::lock::MutexExt;

/// Bytes moved at once between the part file and a file (the buffer of
/// [`PartRoute::set_skipped`]; a piece's share can be as large as the piece).
const HELD_CHUNK: u64 = 1 << 20;

/// Where a torrent's skipped files' bytes go: its part file (if it has one), in slots of one
/// piece, and the gate that keeps a file's bytes from being lost while they move between
/// the part file and the file.
#[derive(Debug, Default)]
pub(crate) struct PartRoute {
    part: Option<PartFile>,
    /// Held while a file's bytes move between the part file and the file, and by I/O on a
    /// file routed to the part file.
    gate: Mutex<()>,
}

impl PartRoute {
    /// Route skipped files' bytes to `part`.
    pub(crate) fn new(part: PartFile) -> PartRoute {
        PartRoute {
            part: Some(part),
            gate: Mutex::new(()),
        }
    }

    /// The part file, if skipped files have one.
    pub(crate) fn file(&self) -> Option<&PartFile> {
        self.part.as_ref()
    }

    fn gate(&self) -> MutexGuard<'_, ()> {
        self.gate.locked()
    }

    /// Call `f(part, piece, offset_in_piece, range_in_buffer)` for each piece of payload
    /// range `offset..offset+len`; `None` when there is no part file.
    fn pieces(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&PartFile, u32, u32, Range<usize>) -> io::Result<()>,
    ) -> Option<io::Result<()>> {
        let part = self.part.as_ref()?;
        let geo = part.geometry();
        let end = offset + len as u64;
        for piece in geo.pieces_of_range(offset, len as u64) {
            let bytes = geo.piece_range(piece);
            let a = offset.max(bytes.start);
            let b = end.min(bytes.end);
            let r = (a - offset) as usize..(b - offset) as usize;
            if let Err(e) = f(part, piece, (a - bytes.start) as u32, r) {
                return Some(Err(e));
            }
        }
        Some(Ok(()))
    }

    /// Write `data`, bytes `at..` of `slot`'s file, to the part file if the file is routed
    /// there; `None` (nothing done) when it is not: the caller writes to the file.
    #[inline]
    pub(crate) fn write(
        &self,
        slot: &FileSlot,
        at: u64,
        data: &[u8],
    ) -> Option<Result<(), StorageError>> {
        if !slot.in_part() {
            return None;
        }
        let _gate = self.gate();
        if !slot.in_part() {
            return None; // moved into its file meanwhile
        }
        let part = self.part.as_ref()?;
        let r = self.pieces(slot.span.offset + at, data.len(), |part, piece, off, r| {
            part.write(piece, off, &data[r])
        })?;
        Some(r.map_err(|e| io_err("writing", part.path(), e)))
    }

    /// Fill `buf` from bytes `at..` of `slot`'s file out of the part file if the file is
    /// routed there; `None` (nothing done) when it is not: the caller reads the file.
    #[inline]
    pub(crate) fn read(
        &self,
        slot: &FileSlot,
        at: u64,
        buf: &mut [u8],
    ) -> Option<Result<(), StorageError>> {
        if !slot.in_part() {
            return None;
        }
        let _gate = self.gate();
        if !slot.in_part() {
            return None;
        }
        let part = self.part.as_ref()?;
        let r = self.pieces(slot.span.offset + at, buf.len(), |part, piece, off, r| {
            part.read(piece, off, &mut buf[r])
        })?;
        Some(r.map_err(|e| io_err("reading", part.path(), e)))
    }

    /// Skip file `index` of `files` (or want it again). Skipping a file that is not on disk
    /// routes its bytes to the part file (its handle is dropped and its identity forgotten
    /// through `opener`), so it is never created; a file already on disk stays where it is.
    /// Wanting a skipped file again moves its bytes from the part file into the file with
    /// `write(slot, file_offset, bytes)`, then deletes the part file once no file is routed
    /// to it. Without a part file this only records the wish; padding is never skipped.
    ///
    /// # Errors
    /// The first error of `write` (disk full, permissions): the file stays skipped.
    pub(crate) fn set_skipped(
        &self,
        files: &Files,
        index: usize,
        skip: bool,
        opener: &Opener,
        mut write: impl FnMut(&FileSlot, u64, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let Some(slot) = files.get(index) else {
            return Ok(());
        };
        if slot.span.pad {
            return Ok(());
        }
        let _gate = self.gate();
        let in_part = slot.in_part();
        if skip {
            if !in_part && self.part.is_some() && std::fs::symlink_metadata(&slot.path).is_err() {
                opener.forget(slot);
                slot.to_part.store(true, Ordering::Release);
            }
            return Ok(());
        }
        if !in_part {
            return Ok(());
        }
        // move what the part file holds of this file into it
        self.held(slot, |at, bytes| write(slot, at, bytes))?;
        slot.to_part.store(false, Ordering::Release);
        if let Some(part) = &self.part
            && !files.slots().iter().any(FileSlot::in_part)
        {
            let _ = part.remove();
        }
        Ok(())
    }

    /// Call `f(file_offset, bytes)` for each piece's share of `slot`'s file that the part
    /// file holds, in order (a piece never written there is passed over).
    ///
    /// # Errors
    /// The first error of `f`.
    fn held(
        &self,
        slot: &FileSlot,
        mut f: impl FnMut(u64, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let Some(part) = &self.part else {
            return Ok(());
        };
        let geo = part.geometry();
        // one bounded buffer, never a whole piece (pieces go up to 512 MiB)
        let mut buf = Vec::new();
        for piece in slot.span.pieces(geo) {
            if !part.has(piece) {
                continue;
            }
            let start = geo.piece_offset(piece);
            let mut a = slot.span.offset.max(start);
            let b = a + slot.span.bytes_in_piece(geo, piece);
            while a < b {
                let n = (b - a).min(HELD_CHUNK);
                buf.resize(n as usize, 0);
                if part.read(piece, (a - start) as u32, &mut buf).is_err() {
                    break; // this part of the piece was never written
                }
                f(a - slot.span.offset, &buf)?;
                a += n;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// Three pieces of 16 bytes (the last one 8).
    fn geo() -> crate::piece::Geometry {
        crate::piece::Geometry::new(40, 16, 3).unwrap()
    }

    /// a: bytes 0..10, b: 10..40, in pieces of 16 bytes (b spans pieces 0, 1 and 2).
    fn files(root: &Path) -> Files {
        Files::new(
            root,
            vec![
                (PathBuf::from("a"), 0, 10, false),
                (PathBuf::from("b"), 10, 30, false),
            ],
            40,
        )
        .unwrap()
    }

    #[test]
    fn files_not_routed_are_left_to_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        let route = PartRoute::new(PartFile::new(dir.path().join(".p"), geo()));
        assert!(route.write(&f.slots()[0], 0, b"x").is_none());
        assert!(route.read(&f.slots()[0], 0, &mut [0u8; 1]).is_none());
        // without a part file, even a routed file is the caller's
        let none = PartRoute::default();
        f.slots()[1].to_part.store(true, Ordering::Release);
        assert!(none.file().is_none());
        assert!(none.write(&f.slots()[1], 0, b"x").is_none());
        assert!(!dir.path().join(".p").exists());
    }

    #[test]
    fn a_routed_file_goes_to_piece_slots_and_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        let b = &f.slots()[1];
        b.to_part.store(true, Ordering::Release);
        let route = PartRoute::new(PartFile::new(dir.path().join(".p"), geo()));
        // b's bytes 2..22 are payload 12..32: pieces 0 (12..16), 1 (16..32)
        let data: Vec<u8> = (100..120).collect();
        route.write(b, 2, &data).unwrap().unwrap();
        let part = route.file().unwrap();
        assert!(part.has(0) && part.has(1) && !part.has(2));
        let mut back = vec![0u8; 20];
        route.read(b, 2, &mut back).unwrap().unwrap();
        assert_eq!(back, data);
        let mut four = [0u8; 4];
        part.read(0, 12, &mut four).unwrap();
        assert_eq!(four, [100, 101, 102, 103], "payload 12 is piece 0 byte 12");
        // piece 2 never written: reading it fails naming the part file
        let e = route.read(b, 25, &mut [0u8; 2]).unwrap().unwrap_err();
        assert!(e.to_string().contains(".p"), "{e}");
        // what the part file holds of b, by piece, at b's offsets
        let mut held = Vec::new();
        route
            .held(b, |at, bytes| {
                held.push((at, bytes.to_vec()));
                Ok(())
            })
            .unwrap();
        assert_eq!(held.len(), 2);
        assert_eq!(held[0].0, 0, "piece 0 holds b's bytes 0..6");
        assert_eq!(&held[0].1[2..], &data[..4]);
        assert_eq!((held[1].0, held[1].1.len()), (6, 16));
        assert_eq!(&held[1].1, &data[4..]);
    }

    #[test]
    fn skipping_routes_only_missing_files_and_wanting_moves_the_bytes_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        let opener = Opener::new(
            dir.path(),
            crate::storage::StorageMode::File,
            crate::storage::HandleCache::new(4),
        );
        let route = PartRoute::new(PartFile::new(dir.path().join(".p"), geo()));
        let never = |_: &FileSlot, _: u64, _: &[u8]| -> Result<(), StorageError> {
            panic!("nothing to move")
        };
        std::fs::write(dir.path().join("a"), [1u8; 10]).unwrap();
        route.set_skipped(&f, 0, true, &opener, never).unwrap();
        assert!(!f.slots()[0].in_part(), "a is on disk: it stays there");
        route.set_skipped(&f, 1, true, &opener, never).unwrap();
        assert!(
            f.slots()[1].in_part(),
            "b is not: its bytes go to the part file"
        );
        route.set_skipped(&f, 9, true, &opener, never).unwrap();
        route.write(&f.slots()[1], 0, &[7u8; 6]).unwrap().unwrap();
        // a failed move leaves the file skipped and the part file in place
        let fail = |s: &FileSlot, _: u64, _: &[u8]| -> Result<(), StorageError> {
            Err(StorageError::FileDeleted {
                path: s.path.clone(),
            })
        };
        assert!(route.set_skipped(&f, 1, false, &opener, fail).is_err());
        assert!(f.slots()[1].in_part());
        let mut moved = Vec::new();
        route
            .set_skipped(&f, 1, false, &opener, |s, at, bytes| {
                moved.push((s.span.offset, at, bytes.to_vec()));
                Ok(())
            })
            .unwrap();
        assert_eq!(moved, vec![(10, 0, vec![7u8; 6])]);
        assert!(!f.slots()[1].in_part());
        assert!(
            !dir.path().join(".p").exists(),
            "no file routed: part file gone"
        );
    }
}
