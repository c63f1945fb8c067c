//! Which pieces a torrent wants, from its files' priorities: a piece takes the highest
//! priority of the files it holds bytes of, so a piece only in skipped files is never
//! requested, and a piece a skipped file shares with a wanted one is. Plain data: the
//! torrent hands the result to its picker and asks it whether everything wanted is here.

use crate::api::FilePriority;
use crate::engine::picker::{PRIO_FIRST_LAST, PRIO_HIGH, PRIO_NORMAL, PRIO_SKIP};
use crate::piece::{Bitfield, FileSpan, Geometry};

use super::summary::Summary;

/// The files' priorities and the piece priorities they make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// Priority per file of the metainfo, padding files included (and ignored).
    files: Vec<FilePriority>,
    /// Priority level per piece (see [`level`]); empty while every file has the normal
    /// priority, so the common case costs no memory.
    pieces: Vec<u8>,
}

impl Wanted {
    /// Every one of `file_count` files at the normal priority.
    pub fn all_normal(file_count: usize) -> Wanted {
        Wanted {
            files: vec![FilePriority::Normal; file_count],
            pieces: Vec::new(),
        }
    }

    /// The priorities kept in a state record ([`Wanted::levels`]; empty: all normal).
    pub fn from_levels(levels: &[u8], sum: &Summary) -> Wanted {
        if levels.is_empty() {
            return Wanted::all_normal(sum.files.len());
        }
        let mut w = Wanted {
            files: levels.iter().map(|&l| priority_of(l)).collect(),
            pieces: Vec::new(),
        };
        w.update_pieces(sum);
        w
    }

    /// Only the files at `indices` (into the info dictionary's file list, BEP 53 `so`)
    /// are wanted; none given: all of them.
    pub fn select_only(indices: &[usize], sum: &Summary) -> Wanted {
        let mut w = Wanted::all_normal(sum.files.len());
        if !indices.is_empty() {
            for (i, p) in w.files.iter_mut().enumerate() {
                if !indices.contains(&i) {
                    *p = FilePriority::Skip;
                }
            }
            w.update_pieces(sum);
        }
        w
    }

    /// The priorities as kept in a state record: one level per file, or nothing when
    /// every file has the normal priority.
    pub fn levels(&self) -> Vec<u8> {
        if self.all_files_normal() {
            Vec::new()
        } else {
            self.files.iter().map(|p| level(*p)).collect()
        }
    }

    /// Priority per file of the metainfo, padding files included.
    pub fn files(&self) -> &[FilePriority] {
        &self.files
    }

    /// Some file is skipped.
    pub fn skips_any(&self) -> bool {
        self.files.contains(&FilePriority::Skip)
    }

    /// Set files `shown` (indices into the list the user sees: the non-padding files in
    /// payload order; unknown ones are ignored) to `priority`. Returns the metainfo
    /// indices of the files that became skipped or stopped being skipped.
    pub fn set(&mut self, shown: &[usize], priority: FilePriority, sum: &Summary) -> Vec<usize> {
        let real: Vec<usize> = sum
            .files
            .spans()
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.pad)
            .map(|(i, _)| i)
            .collect();
        let mut toggled = Vec::new();
        for &d in shown {
            if let Some(&i) = real.get(d)
                && let Some(p) = self.files.get_mut(i)
                && *p != priority
            {
                let was_skip = *p == FilePriority::Skip;
                *p = priority;
                if was_skip != (priority == FilePriority::Skip) {
                    toggled.push(i);
                }
            }
        }
        self.update_pieces(sum);
        toggled
    }

    /// Priority level of piece `p` (normal when no file has another priority).
    pub fn piece(&self, p: u32) -> u8 {
        self.pieces.get(p as usize).copied().unwrap_or(PRIO_NORMAL)
    }

    /// Every piece's level for the picker, or `None` when all are normal (the picker's
    /// default).
    pub fn for_picker(&self) -> Option<&[u8]> {
        (!self.pieces.is_empty()).then_some(self.pieces.as_slice())
    }

    /// Every piece's level for a picker that had others (`count` pieces).
    pub fn for_picker_all(&self, count: u32) -> Vec<u8> {
        match self.for_picker() {
            Some(p) => p.to_vec(),
            None => vec![PRIO_NORMAL; count as usize],
        }
    }

    /// Every piece's level for the picker with the first and last pieces of each wanted
    /// file at [`PRIO_FIRST_LAST`] (see [`Wanted::first_last_pieces`]), `count` pieces.
    pub fn for_picker_first_last(&self, sum: &Summary) -> Vec<u8> {
        let mut levels = self.for_picker_all(sum.piece_count());
        for p in self.first_last_pieces(sum) {
            if let Some(l) = levels.get_mut(p as usize) {
                *l = PRIO_FIRST_LAST;
            }
        }
        levels
    }

    /// The pieces that hold the start and the end of each wanted file (padding and skipped
    /// files left out), ascending, each once: per file the first and the last
    /// ceil(1% of its length / piece length) of its pieces, at least one each, as
    /// qBittorrent's `firstLastPiecePrio` (1% is room for a video's index at its end).
    pub fn first_last_pieces(&self, sum: &Summary) -> Vec<u32> {
        let geo = &sum.geometry;
        let piece_len = u64::from(geo.piece_length().max(1));
        let mut out = Vec::new();
        for f in self.wanted_files(sum) {
            let range = f.pieces(geo);
            if range.is_empty() {
                continue;
            }
            let n = (f.length.div_ceil(100).div_ceil(piece_len)).max(1);
            let n = u32::try_from(n).unwrap_or(u32::MAX).min(range.len() as u32);
            out.extend(range.start..range.start + n);
            out.extend(range.end - n..range.end);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Every wanted piece is in `have`.
    pub fn is_complete(&self, have: &Bitfield) -> bool {
        if self.pieces.is_empty() {
            return have.is_full();
        }
        self.pieces
            .iter()
            .enumerate()
            .all(|(p, &l)| l == PRIO_SKIP || have.get(p as u32))
    }

    /// Bytes of wanted pieces not in `have` (BEP 3 `left`).
    pub fn bytes_left(&self, geo: &Geometry, have: &Bitfield) -> u64 {
        let n = geo.piece_count();
        if self.pieces.is_empty() {
            // every piece wanted: O(1)
            return geo.total_length() - geo.bytes_in(have);
        }
        (0..n)
            .filter(|&p| self.piece(p) != PRIO_SKIP && !have.get(p))
            .map(|p| u64::from(geo.piece_size(p)))
            .sum()
    }

    /// The wanted files: their spans beside their priorities, padding and skipped
    /// files left out.
    pub fn wanted_files<'a>(&'a self, sum: &'a Summary) -> impl Iterator<Item = &'a FileSpan> {
        sum.files
            .spans()
            .iter()
            .zip(&self.files)
            .filter(|(f, p)| !f.pad && **p != FilePriority::Skip)
            .map(|(f, _)| f)
    }

    fn all_files_normal(&self) -> bool {
        self.files.iter().all(|p| *p == FilePriority::Normal)
    }

    fn update_pieces(&mut self, sum: &Summary) {
        self.pieces = if self.all_files_normal() {
            Vec::new()
        } else {
            piece_levels(sum.files.spans(), &self.files, &sum.geometry)
        };
    }
}

/// The level of each piece: the highest of the files it holds bytes of (a piece of
/// padding only takes the highest level of any file).
fn piece_levels(files: &[FileSpan], prio: &[FilePriority], geo: &Geometry) -> Vec<u8> {
    let n = geo.piece_count() as usize;
    let mut levels = vec![PRIO_SKIP; n];
    let mut touched = vec![false; n];
    let mut top = PRIO_SKIP;
    for (f, fp) in files.iter().zip(prio) {
        if f.length == 0 || f.pad {
            continue;
        }
        let l = level(*fp);
        for p in f.pieces(geo) {
            levels[p as usize] = levels[p as usize].max(l);
            touched[p as usize] = true;
        }
        top = top.max(l);
    }
    for (l, t) in levels.iter_mut().zip(&touched) {
        if !t {
            *l = top;
        }
    }
    levels
}

/// The picker's level of a file priority (also what a state record keeps).
pub fn level(p: FilePriority) -> u8 {
    match p {
        FilePriority::Skip => PRIO_SKIP,
        FilePriority::Low => 1,
        FilePriority::Normal => PRIO_NORMAL,
        FilePriority::High => PRIO_HIGH,
    }
}

/// The file priority of a stored level.
pub fn priority_of(l: u8) -> FilePriority {
    match l {
        0 => FilePriority::Skip,
        1 => FilePriority::Low,
        3.. => FilePriority::High,
        _ => FilePriority::Normal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metainfo::InfoHash;

    /// A summary of files of `(length, pad)` in pieces of `piece` bytes.
    fn sum(files: &[(u64, bool)], piece: u32) -> Summary {
        let files = crate::piece::FileLayout::from_lengths(files.iter().copied()).unwrap();
        let total = files.total_length();
        let count = Geometry::pieces_for(total, piece).unwrap() as u32;
        Summary {
            info_hash: InfoHash([0; 20]),
            info_hash_v2: None,
            name: "t".into(),
            geometry: Geometry::new(total, piece, count).unwrap(),
            payload_size: files
                .spans()
                .iter()
                .filter(|f| !f.pad)
                .map(|f| f.length)
                .sum(),
            trackers: Vec::new(),
            private: false,
            multi_file: true,
            files,
            web_seeds: Some(Vec::new()),
        }
    }

    fn have(count: u32, pieces: &[u32]) -> Bitfield {
        let mut b = Bitfield::new(count);
        for &p in pieces {
            b.set(p);
        }
        b
    }

    #[test]
    fn all_normal_costs_no_piece_list_and_wants_every_piece() {
        let s = sum(&[(100, false), (200, false)], 64);
        let w = Wanted::all_normal(2);
        assert_eq!(w.for_picker(), None);
        assert!(w.levels().is_empty());
        assert_eq!(w.piece(3), PRIO_NORMAL);
        assert!(!w.skips_any());
        assert!(!w.is_complete(&have(5, &[0, 1, 2, 3])));
        assert!(w.is_complete(&have(5, &[0, 1, 2, 3, 4])));
        assert_eq!(w.wanted_files(&s).count(), 2);
    }

    #[test]
    fn a_piece_takes_the_highest_priority_of_its_files() {
        // A: bytes 0..100 (pieces 0, 1), B: bytes 100..300 (pieces 1..=4)
        let s = sum(&[(100, false), (200, false)], 64);
        let mut w = Wanted::all_normal(2);
        assert_eq!(w.set(&[1], FilePriority::High, &s), Vec::<usize>::new());
        assert_eq!(
            (0..5).map(|p| w.piece(p)).collect::<Vec<_>>(),
            [PRIO_NORMAL, PRIO_HIGH, PRIO_HIGH, PRIO_HIGH, PRIO_HIGH]
        );
        assert_eq!(w.for_picker().map(<[u8]>::len), Some(5));
    }

    #[test]
    fn skipping_a_file_skips_only_the_pieces_it_has_alone() {
        let s = sum(&[(100, false), (200, false)], 64);
        let mut w = Wanted::all_normal(2);
        assert_eq!(w.set(&[0], FilePriority::Skip, &s), vec![0]);
        assert!(w.skips_any());
        assert_eq!(w.piece(0), PRIO_SKIP);
        assert_eq!(w.piece(1), PRIO_NORMAL, "shared with the wanted file");
        assert!(w.is_complete(&have(5, &[1, 2, 3, 4])));
        assert!(!w.is_complete(&have(5, &[0, 2, 3, 4])));
        assert_eq!(
            w.wanted_files(&s).map(|f| f.offset).collect::<Vec<_>>(),
            [100]
        );
        // wanting it again toggles back; a change between two wanted levels does not
        assert_eq!(w.set(&[0], FilePriority::Low, &s), vec![0]);
        assert_eq!(w.set(&[0], FilePriority::High, &s), Vec::<usize>::new());
        assert_eq!(w.piece(0), PRIO_HIGH);
    }

    #[test]
    fn shown_indices_skip_padding_files_and_unknown_ones_are_ignored() {
        // A (64), padding (64), B (128): the user sees A and B as 0 and 1
        let s = sum(&[(64, false), (64, true), (128, false)], 64);
        let mut w = Wanted::all_normal(3);
        assert_eq!(w.set(&[1, 7], FilePriority::Skip, &s), vec![2]);
        assert_eq!(w.files()[2], FilePriority::Skip);
        assert_eq!(w.files()[1], FilePriority::Normal);
        // the padding piece takes the highest level of any file
        assert_eq!(
            (0..4).map(|p| w.piece(p)).collect::<Vec<_>>(),
            [PRIO_NORMAL, PRIO_NORMAL, PRIO_SKIP, PRIO_SKIP]
        );
    }

    #[test]
    fn back_to_all_normal_drops_the_piece_list() {
        let s = sum(&[(100, false), (200, false)], 64);
        let mut w = Wanted::all_normal(2);
        w.set(&[0], FilePriority::Low, &s);
        assert!(w.for_picker().is_some());
        w.set(&[0], FilePriority::Normal, &s);
        assert_eq!(w.for_picker(), None);
        assert_eq!(w.for_picker_all(5), vec![PRIO_NORMAL; 5]);
    }

    #[test]
    fn levels_round_trip_through_a_record() {
        let s = sum(&[(100, false), (200, false), (50, false)], 64);
        let mut w = Wanted::all_normal(3);
        w.set(&[0], FilePriority::Skip, &s);
        w.set(&[2], FilePriority::High, &s);
        let levels = w.levels();
        assert_eq!(levels, [PRIO_SKIP, PRIO_NORMAL, PRIO_HIGH]);
        assert_eq!(Wanted::from_levels(&levels, &s), w);
        assert_eq!(Wanted::from_levels(&[], &s), Wanted::all_normal(3));
        for p in [
            FilePriority::Skip,
            FilePriority::Low,
            FilePriority::Normal,
            FilePriority::High,
        ] {
            assert_eq!(priority_of(level(p)), p);
        }
        assert_eq!(priority_of(9), FilePriority::High);
    }

    #[test]
    fn select_only_wants_the_listed_files() {
        let s = sum(&[(64, false), (64, false), (64, false)], 64);
        let w = Wanted::select_only(&[1], &s);
        assert_eq!(
            w.files(),
            [FilePriority::Skip, FilePriority::Normal, FilePriority::Skip]
        );
        assert_eq!(
            (0..3).map(|p| w.piece(p)).collect::<Vec<_>>(),
            [PRIO_SKIP, PRIO_NORMAL, PRIO_SKIP]
        );
        assert_eq!(Wanted::select_only(&[], &s), Wanted::all_normal(3));
    }

    #[test]
    fn first_and_last_pieces_of_each_wanted_file() {
        // A: 0..100 (pieces 0, 1), B: 100..300 (pieces 1..=4), C: 300..310 (piece 4)
        let s = sum(&[(100, false), (200, false), (10, false)], 64);
        let mut w = Wanted::all_normal(3);
        assert_eq!(w.first_last_pieces(&s), [0, 1, 4]);
        assert_eq!(
            w.for_picker_first_last(&s),
            [
                PRIO_FIRST_LAST,
                PRIO_FIRST_LAST,
                PRIO_NORMAL,
                PRIO_NORMAL,
                PRIO_FIRST_LAST
            ]
        );
        // a skipped file's ends are not raised (a piece it shares keeps its level)
        w.set(&[1], FilePriority::Skip, &s);
        assert_eq!(w.first_last_pieces(&s), [0, 1, 4]);
        let levels = w.for_picker_first_last(&s);
        assert_eq!(levels[2], PRIO_SKIP);
        assert_eq!(levels[3], PRIO_SKIP);
        // padding files are not files to preview
        let s = sum(&[(64, false), (64, true), (640, false)], 64);
        let w = Wanted::all_normal(3);
        assert_eq!(w.first_last_pieces(&s), [0, 2, 11]);
    }

    #[test]
    fn a_large_file_gets_one_percent_of_its_pieces_at_each_end() {
        // 1000 pieces of 64 bytes: 1% is 640 bytes, 10 pieces at each end
        let s = sum(&[(64_000, false)], 64);
        let w = Wanted::all_normal(1);
        let fl = w.first_last_pieces(&s);
        assert_eq!(fl.len(), 20);
        assert_eq!(fl[..10], (0..10).collect::<Vec<u32>>()[..]);
        assert_eq!(fl[10..], (990..1000).collect::<Vec<u32>>()[..]);
    }

    #[test]
    fn bytes_left_counts_wanted_missing_pieces_with_a_short_last_one() {
        // 300 bytes in pieces of 64: the last piece has 44 bytes
        let s = sum(&[(100, false), (200, false)], 64);
        let geo = s.geometry;
        let w = Wanted::all_normal(2);
        assert_eq!(w.bytes_left(&geo, &have(5, &[])), 300);
        assert_eq!(w.bytes_left(&geo, &have(5, &[4])), 256);
        assert_eq!(w.bytes_left(&geo, &have(5, &[0, 1, 2, 3, 4])), 0);
        let mut w = w;
        w.set(&[0], FilePriority::Skip, &s);
        // piece 0 is skipped: 64 + 64 + 64 + 44 wanted
        assert_eq!(w.bytes_left(&geo, &have(5, &[])), 236);
        assert_eq!(w.bytes_left(&geo, &have(5, &[0, 1])), 172);
    }
}
