//! The part file: where the bytes of skipped files go when a piece they share with a wanted
//! file is downloaded (as libtorrent and qBittorrent do), so a file set to skip is never
//! created. One hidden file per torrent in its save folder, created on first use.
//!
//! Layout: an 8-byte magic `RTPARTv1`, the piece length and piece count (u32 big-endian),
//! then one u32 per piece (0: no slot, else slot number + 1), padded to 4 KiB; then slots of
//! `piece length` bytes, allocated in order as pieces first need one. Within a slot, a byte
//! sits at its offset in the piece. A slot's table entry is written after its data, so a
//! crash loses at most the slot being filled (its piece is fetched again).

use crate::lock::MutexExt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::metainfo::InfoHash;
use crate::piece::Geometry;

const MAGIC: &[u8; 8] = b"RTPARTv1";

/// The part file's name in a torrent's save folder: `.INFOHASH.parts`, with the v1 info
/// hash in lower-case hex (hidden, and unique per torrent in a shared folder).
pub fn file_name(info_hash: &InfoHash) -> String {
    format!(".{}.parts", info_hash.to_hex())
}

/// The part file of one torrent.
#[derive(Debug)]
pub struct PartFile {
    path: PathBuf,
    /// The torrent's pieces: one slot holds one piece.
    geo: Geometry,
    inner: Mutex<Option<Inner>>,
}

#[derive(Debug)]
struct Inner {
    file: File,
    slots: Vec<u32>,
    next: u32,
}

impl PartFile {
    /// The part file at `path` for the pieces of `geo`, in slots of `piece length` bytes;
    /// nothing is touched on disk.
    pub fn new(path: PathBuf, geo: Geometry) -> PartFile {
        PartFile {
            path,
            geo,
            inner: Mutex::new(None),
        }
    }

    /// Where it is (or would be).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The torrent's pieces, as the part file slots them.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Bytes per slot: the torrent's piece length.
    fn piece_length(&self) -> u32 {
        self.geo.piece_length()
    }

    fn piece_count(&self) -> u32 {
        self.geo.piece_count()
    }

    fn header_len(&self) -> u64 {
        (16 + 4 * u64::from(self.piece_count())).div_ceil(4096) * 4096
    }

    fn lock(&self) -> MutexGuard<'_, Option<Inner>> {
        self.inner.locked()
    }

    /// Open (or, with `create`, create) the file and load its slot table.
    fn open<'a>(
        &self,
        g: &'a mut MutexGuard<'_, Option<Inner>>,
        create: bool,
    ) -> io::Result<Option<&'a mut Inner>> {
        if g.is_none() {
            let file = match OpenOptions::new()
                .read(true)
                .write(true)
                .create(create)
                .truncate(false)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&self.path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
                Err(e) => return Err(e),
            };
            let mut slots = vec![0u32; self.piece_count() as usize];
            let len = file.metadata()?.len();
            let mut next = 0;
            if len >= 16 {
                let mut head = [0u8; 16];
                file.read_exact_at(&mut head, 0)?;
                let pl = u32::from_be_bytes([head[8], head[9], head[10], head[11]]);
                let pc = u32::from_be_bytes([head[12], head[13], head[14], head[15]]);
                if &head[..8] == MAGIC && pl == self.piece_length() && pc == self.piece_count() {
                    let mut table = vec![0u8; 4 * self.piece_count() as usize];
                    file.read_exact_at(&mut table, 16)?;
                    for (i, c) in table.chunks_exact(4).enumerate() {
                        let v = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                        // a slot past the file's end was never filled
                        let end = self.header_len() + u64::from(v) * u64::from(self.piece_length());
                        if v > 0 && end <= len {
                            slots[i] = v;
                            next = next.max(v);
                        }
                    }
                } else {
                    // not ours or another geometry: start over (its data is not trusted)
                    file.set_len(0)?;
                }
            }
            if file.metadata()?.len() < 16 {
                let mut head = Vec::with_capacity(16);
                head.extend_from_slice(MAGIC);
                head.extend_from_slice(&self.piece_length().to_be_bytes());
                head.extend_from_slice(&self.piece_count().to_be_bytes());
                file.write_all_at(&head, 0)?;
            }
            **g = Some(Inner { file, slots, next });
        }
        Ok(g.as_mut())
    }

    /// Write `data` at `offset` within piece `piece` (a slot is allocated on first use).
    ///
    /// # Errors
    /// I/O errors of the part file; `InvalidInput` when the range is outside the piece.
    pub fn write(&self, piece: u32, offset: u32, data: &[u8]) -> io::Result<()> {
        if piece >= self.piece_count()
            || u64::from(offset) + data.len() as u64 > u64::from(self.piece_length())
        {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let header = self.header_len();
        let pl = u64::from(self.piece_length());
        let mut g = self.lock();
        let inner = self.open(&mut g, true)?.ok_or(io::ErrorKind::NotFound)?;
        let slot = match inner.slots[piece as usize] {
            0 => {
                inner.next += 1;
                let s = inner.next;
                // data first, then the table entry
                inner
                    .file
                    .write_all_at(data, header + u64::from(s - 1) * pl + u64::from(offset))?;
                inner
                    .file
                    .set_len(inner.file.metadata()?.len().max(header + u64::from(s) * pl))?;
                inner
                    .file
                    .write_all_at(&s.to_be_bytes(), 16 + 4 * u64::from(piece))?;
                inner.slots[piece as usize] = s;
                return Ok(());
            }
            s => s,
        };
        inner
            .file
            .write_all_at(data, header + u64::from(slot - 1) * pl + u64::from(offset))
    }

    /// Read `buf.len()` bytes at `offset` within piece `piece`.
    ///
    /// # Errors
    /// `NotFound` when the piece has no slot (its bytes were never written here); I/O errors.
    pub fn read(&self, piece: u32, offset: u32, buf: &mut [u8]) -> io::Result<()> {
        if piece >= self.piece_count()
            || u64::from(offset) + buf.len() as u64 > u64::from(self.piece_length())
        {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let header = self.header_len();
        let pl = u64::from(self.piece_length());
        let mut g = self.lock();
        let Some(inner) = self.open(&mut g, false)? else {
            return Err(io::ErrorKind::NotFound.into());
        };
        match inner.slots[piece as usize] {
            0 => Err(io::ErrorKind::NotFound.into()),
            s => inner
                .file
                .read_exact_at(buf, header + u64::from(s - 1) * pl + u64::from(offset)),
        }
    }

    /// Whether piece `piece` has bytes here.
    pub fn has(&self, piece: u32) -> bool {
        let mut g = self.lock();
        matches!(self.open(&mut g, false), Ok(Some(i)) if i.slots.get(piece as usize).is_some_and(|&s| s > 0))
    }

    /// Whether the file exists with any slot.
    pub fn in_use(&self) -> bool {
        let mut g = self.lock();
        matches!(self.open(&mut g, false), Ok(Some(i)) if i.next > 0)
    }

    /// Flush the part file's data to the device, if it is open.
    ///
    /// # Errors
    /// The OS error of `fdatasync`.
    pub fn sync(&self) -> io::Result<()> {
        match &*self.lock() {
            Some(i) => i.file.sync_data(),
            None => Ok(()),
        }
    }

    /// Close the file (it is opened again on next use).
    pub fn close(&self) {
        *self.lock() = None;
    }

    /// Delete the file (no file is skipped any more and its bytes were moved out).
    ///
    /// # Errors
    /// I/O errors other than "not found".
    pub fn remove(&self) -> io::Result<()> {
        let mut g = self.lock();
        *g = None;
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_hidden_and_carries_the_info_hash() {
        let mut ih = InfoHash([0; 20]);
        ih.0[0] = 0xab;
        ih.0[19] = 0x01;
        let name = file_name(&ih);
        assert_eq!(name, format!(".ab{}01.parts", "00".repeat(18)));
        assert_eq!(name.len(), 1 + 40 + 6);
    }

    /// 100 pieces of `piece_length` bytes.
    fn geo(piece_length: u32) -> Geometry {
        Geometry::new(100 * u64::from(piece_length), piece_length, 100).unwrap()
    }

    #[test]
    fn slots_are_allocated_on_use_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".x.parts");
        let pf = PartFile::new(path.clone(), geo(32_768));
        assert!(!pf.in_use());
        assert!(!path.exists(), "nothing created until a write");
        let mut buf = [0u8; 10];
        assert_eq!(
            pf.read(5, 0, &mut buf).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        pf.write(50, 100, b"hello").unwrap();
        pf.write(7, 0, b"seven").unwrap();
        pf.write(50, 0, b"start").unwrap();
        pf.close();
        let pf = PartFile::new(path.clone(), geo(32_768));
        let mut five = [0u8; 5];
        pf.read(50, 100, &mut five).unwrap();
        assert_eq!(&five, b"hello");
        pf.read(50, 0, &mut five).unwrap();
        assert_eq!(&five, b"start");
        pf.read(7, 0, &mut five).unwrap();
        assert_eq!(&five, b"seven");
        assert!(pf.has(7) && pf.has(50) && !pf.has(8));
        // two slots only: the file is small, not piece_count × piece_length
        assert!(std::fs::metadata(&path).unwrap().len() <= 4096 + 2 * 32_768);
        assert!(pf.write(100, 0, b"x").is_err(), "piece out of range");
        assert!(pf.write(1, 32_767, b"xx").is_err(), "past the piece");
        // another geometry: the old data is not trusted
        let other = PartFile::new(path.clone(), geo(16_384));
        assert!(!other.has(7));
        other.remove().unwrap();
        assert!(!path.exists());
    }
}
