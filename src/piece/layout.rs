//! The file layout of a payload (BEP 3, BEP 47): the payload is the torrent's files
//! concatenated in order, padding files included, so each file is one span of payload bytes.
//! [`FileLayout`] is the one list of those spans that metainfo, storage, the picker's file
//! priorities and the torrent's progress all read, with the map between pieces and file
//! byte ranges ([`FileLayout::segments`], [`FileSpan::pieces`], [`FileSpan::bytes_in_piece`]).

use std::ops::Range;

use thiserror::Error;

use super::Geometry;

/// One file's place in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct FileSpan {
    /// Payload offset of the file's first byte, bytes.
    pub offset: u64,
    /// Length, bytes.
    pub length: u64,
    /// A BEP 47 padding file: zeros, never on disk nor shown as a file.
    pub pad: bool,
}

impl FileSpan {
    /// Payload offset just past the file's last byte (`offset + length`).
    #[inline]
    pub fn end(&self) -> u64 {
        self.offset + self.length
    }

    /// The pieces that hold any byte of the file (empty for a zero-length file).
    pub fn pieces(&self, geo: &Geometry) -> Range<u32> {
        geo.pieces_of_range(self.offset, self.length)
    }

    /// Bytes of the file inside piece `p` (0 when the piece holds none of it).
    pub fn bytes_in_piece(&self, geo: &Geometry, p: u32) -> u64 {
        let piece = geo.piece_range(p);
        let end = piece.end.min(self.end());
        end.saturating_sub(piece.start.max(self.offset))
    }
}

/// Why a list of files is not the layout of a payload.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LayoutError {
    /// File `index` does not start where the previous one ended (the first at 0).
    #[error("file {index} starts at byte {offset}, the previous file ends at {expected}")]
    Gap {
        /// The file's index.
        index: usize,
        /// Where it starts, bytes.
        offset: u64,
        /// Where it should (the previous file's end), bytes.
        expected: u64,
    },
    /// File `index` ends past 2^64 bytes.
    #[error("file {index} of {length} bytes at byte {offset} ends past 2^64")]
    Overflow {
        /// The file's index.
        index: usize,
        /// Where it starts, bytes.
        offset: u64,
        /// Its length, bytes.
        length: u64,
    },
    /// The files do not add up to the payload.
    #[error("files add up to {sum} bytes, the payload is {total}")]
    Total {
        /// Sum of the lengths, bytes.
        sum: u64,
        /// The payload's length, bytes.
        total: u64,
    },
}

/// The files of one payload in payload order, tiling it without gaps or overlaps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileLayout {
    spans: Box<[FileSpan]>,
    total_length: u64,
}

/// One file's share of a payload byte range ([`FileLayout::segments`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The file's index in the layout.
    pub file: usize,
    /// Offset of the segment within the file, bytes.
    pub at: u64,
    /// Where the segment lies within the range (0 = the range's first byte), bytes.
    pub range: Range<usize>,
}

impl FileLayout {
    /// The layout of `spans`, which must start at 0, follow each other without a gap or an
    /// overlap and add up to `total_length` bytes.
    ///
    /// # Errors
    /// [`LayoutError`] naming the first file that does not fit.
    pub fn new(
        spans: impl IntoIterator<Item = FileSpan>,
        total_length: u64,
    ) -> Result<FileLayout, LayoutError> {
        let spans: Box<[FileSpan]> = spans.into_iter().collect();
        let mut end = 0u64;
        for (index, s) in spans.iter().enumerate() {
            if s.offset != end {
                return Err(LayoutError::Gap {
                    index,
                    offset: s.offset,
                    expected: end,
                });
            }
            end = s
                .offset
                .checked_add(s.length)
                .ok_or(LayoutError::Overflow {
                    index,
                    offset: s.offset,
                    length: s.length,
                })?;
        }
        if end != total_length {
            return Err(LayoutError::Total {
                sum: end,
                total: total_length,
            });
        }
        Ok(FileLayout {
            spans,
            total_length,
        })
    }

    /// The layout of files of these `(length, pad)` in payload order, each starting where
    /// the previous one ends (the form the state store keeps).
    ///
    /// # Errors
    /// [`LayoutError::Overflow`] when the lengths add up past 2^64 bytes.
    pub fn from_lengths(
        files: impl IntoIterator<Item = (u64, bool)>,
    ) -> Result<FileLayout, LayoutError> {
        let mut offset = 0u64;
        let mut spans = Vec::new();
        for (index, (length, pad)) in files.into_iter().enumerate() {
            spans.push(FileSpan {
                offset,
                length,
                pad,
            });
            offset = offset.checked_add(length).ok_or(LayoutError::Overflow {
                index,
                offset,
                length,
            })?;
        }
        Ok(FileLayout {
            spans: spans.into_boxed_slice(),
            total_length: offset,
        })
    }

    /// Every file, in payload order.
    pub fn spans(&self) -> &[FileSpan] {
        &self.spans
    }

    /// Number of files (padding included).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are no files.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Payload bytes, padding included.
    pub fn total_length(&self) -> u64 {
        self.total_length
    }

    /// The files' shares of payload bytes `offset..offset+len`, in order (zero-length files
    /// have none); `None` when the range passes the end of the payload.
    pub fn segments(&self, offset: u64, len: usize) -> Option<Segments<'_>> {
        let end = offset
            .checked_add(len as u64)
            .filter(|&e| e <= self.total_length)?;
        // first file whose end is past `offset` (the layout was checked: no overflow)
        let next = self.spans.partition_point(|s| s.end() <= offset);
        Some(Segments {
            spans: &self.spans,
            next,
            start: offset,
            pos: offset,
            end,
        })
    }
}

/// The iterator of [`FileLayout::segments`].
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    spans: &'a [FileSpan],
    next: usize,
    start: u64,
    pos: u64,
    end: u64,
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    #[inline]
    fn next(&mut self) -> Option<Segment> {
        while self.pos < self.end {
            let file = self.next;
            let s = self.spans.get(file)?;
            self.next += 1;
            if s.length == 0 {
                continue;
            }
            let seg_end = self.end.min(s.end());
            let seg = Segment {
                file,
                at: self.pos - s.offset,
                range: (self.pos - self.start) as usize..(seg_end - self.start) as usize,
            };
            self.pos = seg_end;
            return Some(seg);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(offset: u64, length: u64, pad: bool) -> FileSpan {
        FileSpan {
            offset,
            length,
            pad,
        }
    }

    /// a: 0..10, empty, pad: 10..16, b: 16..36.
    fn layout() -> FileLayout {
        FileLayout::from_lengths([(10, false), (0, false), (6, true), (20, false)]).unwrap()
    }

    fn segs(l: &FileLayout, offset: u64, len: usize) -> Vec<(usize, u64, Range<usize>)> {
        l.segments(offset, len)
            .unwrap()
            .map(|s| (s.file, s.at, s.range))
            .collect()
    }

    #[test]
    fn lengths_are_laid_end_to_end() {
        let l = layout();
        assert_eq!(
            l.spans(),
            &[
                span(0, 10, false),
                span(10, 0, false),
                span(10, 6, true),
                span(16, 20, false)
            ]
        );
        assert_eq!((l.len(), l.total_length(), l.is_empty()), (4, 36, false));
        assert_eq!(FileLayout::new(l.spans().iter().copied(), 36), Ok(l));
        assert!(FileLayout::from_lengths([]).unwrap().is_empty());
        assert!(matches!(
            FileLayout::from_lengths([(u64::MAX, false), (1, false)]),
            Err(LayoutError::Overflow { index: 1, .. })
        ));
    }

    #[test]
    fn files_that_do_not_tile_the_payload_are_refused() {
        let gap = [span(0, 5, false), span(6, 4, false)];
        assert_eq!(
            FileLayout::new(gap, 10),
            Err(LayoutError::Gap {
                index: 1,
                offset: 6,
                expected: 5
            })
        );
        let overlap = [span(0, 5, false), span(4, 6, false)];
        assert!(matches!(
            FileLayout::new(overlap, 10),
            Err(LayoutError::Gap { index: 1, .. })
        ));
        assert_eq!(
            FileLayout::new([span(0, 5, false)], 10),
            Err(LayoutError::Total { sum: 5, total: 10 })
        );
        let huge = [span(0, u64::MAX, false), span(u64::MAX, 2, false)];
        assert!(matches!(
            FileLayout::new(huge, 1),
            Err(LayoutError::Overflow { index: 1, .. })
        ));
        assert_eq!(
            FileLayout::new([], 0).map(|l| l.len()),
            Ok(0),
            "an empty payload"
        );
    }

    #[test]
    fn a_range_is_cut_at_file_boundaries_skipping_empty_files() {
        let l = layout();
        assert_eq!(
            segs(&l, 8, 12),
            vec![(0, 8, 0..2), (2, 0, 2..8), (3, 0, 8..12)]
        );
        assert_eq!(segs(&l, 35, 1), vec![(3, 19, 0..1)]);
        assert_eq!(segs(&l, 0, 36).len(), 3);
        assert_eq!(segs(&l, 36, 0), vec![]);
        assert_eq!(segs(&l, 10, 0), vec![]);
        for (offset, len) in [(30, 7), (u64::MAX, 2), (37, 0)] {
            assert!(l.segments(offset, len).is_none(), "{offset} {len}");
        }
    }

    #[test]
    fn a_file_knows_its_pieces_and_its_bytes_in_each() {
        let l = layout();
        let g = Geometry::new(36, 16, 3).unwrap();
        let b = l.spans()[3];
        assert_eq!(b.end(), 36);
        assert_eq!(b.pieces(&g), 1..3);
        assert_eq!(b.bytes_in_piece(&g, 0), 0);
        assert_eq!(b.bytes_in_piece(&g, 1), 16);
        assert_eq!(b.bytes_in_piece(&g, 2), 4);
        let a = l.spans()[0];
        assert_eq!(a.pieces(&g), 0..1);
        assert_eq!(a.bytes_in_piece(&g, 0), 10);
        assert_eq!(
            l.spans()[1].pieces(&g),
            0..0,
            "an empty file holds no piece"
        );
        let total: u64 = l
            .spans()
            .iter()
            .flat_map(|f| f.pieces(&g).map(move |p| f.bytes_in_piece(&g, p)))
            .sum();
        assert_eq!(total, 36);
    }
}
