//! The torrent's files as storage sees them: each file's absolute path and place in the
//! payload ([`FileSlot`]), laid out by the one [`FileLayout`] of the `piece` module, and the
//! routing of a payload byte range to the file segments it covers ([`Files::segments`]).
//!
//! Every path is relative with only normal components (the metainfo parser guarantees it;
//! [`Files::new`] checks again), so joined to the download directory it stays inside it.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::error::StorageError;
use super::handles::HandleCell;
use crate::piece::{FileLayout, FileSpan, LayoutError};

/// A file to place by hand (tools and tests): relative path, payload offset (bytes), length
/// (bytes), padding flag. [`super::Storage::for_torrent`] takes them from the metainfo.
pub type FileSpec = (PathBuf, u64, u64, bool);

/// One file of the payload.
#[derive(Debug)]
pub struct FileSlot {
    /// Absolute path: download directory joined with the torrent's relative path.
    pub path: PathBuf,
    /// Where the file lies in the payload (bytes), and whether it is BEP 47 padding
    /// (zeros, never on disk).
    pub span: FileSpan,
    /// The open handle (in the session's cache) and the file's identity.
    pub(crate) cell: Arc<HandleCell>,
    /// Skipped and not on disk: its bytes live in the part file.
    pub(crate) to_part: AtomicBool,
    /// Written since the last [`super::Storage::sync_all`].
    pub(crate) written: AtomicBool,
}

impl FileSlot {
    /// Whether its bytes go to the part file (skipped and not on disk).
    #[inline]
    pub(crate) fn in_part(&self) -> bool {
        self.to_part.load(Ordering::Acquire)
    }

    /// Whether it holds bytes that live in a file of its own on disk: not padding, not
    /// routed to the part file.
    #[inline]
    pub(crate) fn on_disk(&self) -> bool {
        !self.span.pad && !self.in_part()
    }
}

/// The files of one payload, in payload order, tiling it without gaps.
#[derive(Debug)]
pub(crate) struct Files {
    layout: FileLayout,
    /// One per span of `layout`, in the same order.
    slots: Vec<FileSlot>,
}

impl Files {
    /// Place `specs` under `root`: each must start where the previous one ended (the
    /// first at 0) and their lengths must add up to `total_length` (bytes).
    ///
    /// # Errors
    /// [`StorageError::UnsafePath`] for a path that is not relative and normal;
    /// [`StorageError::BadLayout`] for files that do not tile the payload.
    pub(crate) fn new(
        root: &Path,
        specs: impl IntoIterator<Item = FileSpec>,
        total_length: u64,
    ) -> Result<Files, StorageError> {
        let (paths, spans): (Vec<PathBuf>, Vec<FileSpan>) = specs
            .into_iter()
            .map(|(rel, offset, length, pad)| {
                (
                    rel,
                    FileSpan {
                        offset,
                        length,
                        pad,
                    },
                )
            })
            .unzip();
        let count = spans.len();
        let layout = FileLayout::new(spans, total_length).map_err(|e| bad_layout(&e, count));
        Files::laid_out(root, paths, layout?)
    }

    /// Place the files of `layout` under `root`, at `paths` (relative, one per file).
    ///
    /// # Errors
    /// [`StorageError::UnsafePath`] for a path that is not relative and normal;
    /// [`StorageError::BadLayout`] when there are not as many paths as files.
    pub(crate) fn laid_out(
        root: &Path,
        paths: Vec<PathBuf>,
        layout: FileLayout,
    ) -> Result<Files, StorageError> {
        if paths.len() != layout.len() {
            return Err(StorageError::BadLayout {
                index: paths.len().min(layout.len()),
                problem: format!("{} paths for {} files", paths.len(), layout.len()),
            });
        }
        let mut slots = Vec::with_capacity(paths.len());
        for (rel, span) in paths.into_iter().zip(layout.spans()) {
            if rel.as_os_str().is_empty()
                || !rel.components().all(|c| matches!(c, Component::Normal(_)))
            {
                return Err(StorageError::UnsafePath(rel));
            }
            slots.push(FileSlot {
                path: root.join(&rel),
                span: *span,
                cell: Arc::default(),
                to_part: AtomicBool::new(false),
                written: AtomicBool::new(false),
            });
        }
        Ok(Files { layout, slots })
    }

    /// Every file, in payload order.
    pub(crate) fn slots(&self) -> &[FileSlot] {
        &self.slots
    }

    /// File `index`, if there is one.
    pub(crate) fn get(&self, index: usize) -> Option<&FileSlot> {
        self.slots.get(index)
    }

    /// Payload bytes, padding included.
    pub(crate) fn total_length(&self) -> u64 {
        self.layout.total_length()
    }

    /// Call `f(slot, file_offset, range_in_buffer)` for each file segment of payload range
    /// `offset..offset+len`, in order (zero-length files have none).
    ///
    /// # Errors
    /// [`StorageError::OutOfRange`] when the range passes the end of the payload (nothing
    /// is called); else the first error `f` returns.
    #[inline]
    pub(crate) fn segments(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&FileSlot, u64, std::ops::Range<usize>) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let segments = self
            .layout
            .segments(offset, len)
            .ok_or(StorageError::OutOfRange {
                offset,
                len: len as u64,
                total: self.layout.total_length(),
            })?;
        for s in segments {
            f(&self.slots[s.file], s.at, s.range)?;
        }
        Ok(())
    }
}

/// A layout error as storage reports it (`count`: the number of files).
fn bad_layout(e: &LayoutError, count: usize) -> StorageError {
    let (index, problem) = match *e {
        LayoutError::Gap {
            index,
            offset,
            expected,
        } => (
            index,
            format!("starts at byte {offset}, the previous file ends at {expected}"),
        ),
        LayoutError::Overflow {
            index,
            offset,
            length,
        } => (
            index,
            format!("of {length} bytes at byte {offset} ends past 2^64"),
        ),
        LayoutError::Total { sum, total } => (
            count,
            format!("(the end): files add up to {sum} bytes, the payload is {total}"),
        ),
    };
    StorageError::BadLayout { index, problem }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<FileSpec> {
        vec![
            ("t/a".into(), 0, 10, false),
            ("t/empty".into(), 10, 0, false),
            ("t/.pad/6".into(), 10, 6, true),
            ("t/b".into(), 16, 20, false),
        ]
    }

    fn segs(files: &Files, offset: u64, len: usize) -> Vec<(String, u64, std::ops::Range<usize>)> {
        let mut out = Vec::new();
        files
            .segments(offset, len, |s, at, r| {
                let name = s.path.file_name().unwrap().to_string_lossy().into_owned();
                out.push((name, at, r));
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn files_are_placed_under_the_root() {
        let f = Files::new(Path::new("/dl"), specs(), 36).unwrap();
        assert_eq!(f.total_length(), 36);
        assert_eq!(f.slots().len(), 4);
        let b = f.get(3).unwrap();
        assert_eq!(b.path, Path::new("/dl/t/b"));
        assert_eq!((b.span.offset, b.span.length, b.span.pad), (16, 20, false));
        assert!(f.get(4).is_none());
        assert!(b.on_disk() && !b.in_part());
        assert!(!f.get(2).unwrap().on_disk(), "padding is never on disk");
        b.to_part.store(true, Ordering::Release);
        assert!(b.in_part() && !b.on_disk());
    }

    #[test]
    fn a_range_is_cut_at_file_boundaries_skipping_empty_files() {
        let f = Files::new(Path::new("/dl"), specs(), 36).unwrap();
        assert_eq!(
            segs(&f, 8, 12),
            vec![
                ("a".into(), 8, 0..2),
                ("6".into(), 0, 2..8),
                ("b".into(), 0, 8..12)
            ]
        );
        assert_eq!(segs(&f, 35, 1), vec![("b".into(), 19, 0..1)]);
        assert_eq!(segs(&f, 36, 0), vec![]);
        assert_eq!(segs(&f, 0, 0), vec![]);
    }

    #[test]
    fn a_range_past_the_end_is_out_of_range_and_calls_nothing() {
        let f = Files::new(Path::new("/dl"), specs(), 36).unwrap();
        for (offset, len) in [(30, 7), (u64::MAX, 2), (37, 0)] {
            let mut called = false;
            let r = f.segments(offset, len, |_, _, _| {
                called = true;
                Ok(())
            });
            assert!(
                matches!(r, Err(StorageError::OutOfRange { total: 36, .. })),
                "{offset} {len}: {r:?}"
            );
            assert!(!called);
        }
    }

    #[test]
    fn the_first_error_stops_the_walk() {
        let f = Files::new(Path::new("/dl"), specs(), 36).unwrap();
        let mut seen = 0;
        let r = f.segments(0, 36, |s, _, _| {
            seen += 1;
            if s.span.pad {
                return Err(StorageError::OutOfRange {
                    offset: 0,
                    len: 0,
                    total: 0,
                });
            }
            Ok(())
        });
        assert!(r.is_err());
        assert_eq!(seen, 2, "a, then the pad; b never");
    }

    #[test]
    fn a_layout_is_placed_path_by_path() {
        let layout = FileLayout::from_lengths([(10, false), (6, true), (20, false)]).unwrap();
        let paths = || vec![PathBuf::from("t/a"), "t/.pad/6".into(), "t/b".into()];
        let f = Files::laid_out(Path::new("/dl"), paths(), layout.clone()).unwrap();
        assert_eq!(f.total_length(), 36);
        assert_eq!(f.slots()[2].path, Path::new("/dl/t/b"));
        assert_eq!(f.slots()[2].span, layout.spans()[2]);
        let mut fewer = paths();
        fewer.pop();
        let e = Files::laid_out(Path::new("/dl"), fewer, layout.clone()).unwrap_err();
        assert!(matches!(e, StorageError::BadLayout { index: 2, .. }), "{e}");
        let mut unsafe_path = paths();
        unsafe_path[1] = "../x".into();
        let e = Files::laid_out(Path::new("/dl"), unsafe_path, layout).unwrap_err();
        assert!(matches!(e, StorageError::UnsafePath(_)), "{e}");
    }

    #[test]
    fn impossible_layouts_are_refused() {
        let root = Path::new("/dl");
        for rel in ["", "/etc/passwd", "../x", "a/../../x", "./a"] {
            let r = Files::new(root, vec![(PathBuf::from(rel), 0, 1, false)], 1);
            assert!(
                matches!(r, Err(StorageError::UnsafePath(_))),
                "{rel}: {r:?}"
            );
        }
        // a gap, an overlap, lengths that do not add up, an overflow
        let gap = vec![("a".into(), 0, 5, false), ("b".into(), 6, 4, false)];
        let overlap = vec![("a".into(), 0, 5, false), ("b".into(), 4, 6, false)];
        let short = vec![("a".into(), 0, 5, false)];
        let huge = vec![
            ("a".into(), 0, u64::MAX, false),
            ("b".into(), u64::MAX, 2, false),
        ];
        for (specs, total, index) in [(gap, 10, 1), (overlap, 10, 1), (short, 10, 1), (huge, 1, 1)]
        {
            match Files::new(root, specs, total) {
                Err(StorageError::BadLayout { index: i, .. }) => assert_eq!(i, index),
                other => panic!("{other:?}"),
            }
        }
    }
}
