//! The torrent list's selection: the rows shown (the [`View`]'s index, cached per snapshot)
//! and the selected torrent, which stays on the same torrent while snapshots come, or moves
//! to its neighbour when that torrent goes away or is filtered out.

use crate::api::{Snapshot, TorrentId, TorrentRow};

use super::list::{Cache, View};

/// The rows shown and the selected one.
#[derive(Debug, Default)]
pub struct Selection {
    cache: Cache,
    /// Indices into the snapshot's rows shown, in order (from `cache`).
    index: Vec<usize>,
    /// Selected torrent; `None` only when the list shows nothing.
    selected: Option<TorrentId>,
    /// Position of the selection in `index`.
    pos: usize,
}

impl Selection {
    /// Takes the rows `view` shows of `snapshot` and keeps the selection (see
    /// [`Selection::select`]). Returns whether the selection moved to a neighbour.
    pub fn refresh(&mut self, snapshot: &Snapshot, view: &View) -> bool {
        self.index = self.cache.get(snapshot, view).to_vec();
        self.reconcile(snapshot)
    }

    /// Drops the cached index, so the next refresh rebuilds it even for the same `seq`.
    pub fn invalidate(&mut self) {
        self.cache.invalidate();
    }

    /// Selects torrent `id` when it is shown; otherwise the neighbour of the current
    /// position (nothing when nothing is shown). Returns whether it took a neighbour.
    pub fn select(&mut self, id: TorrentId, snapshot: &Snapshot) -> bool {
        self.selected = Some(id);
        self.reconcile(snapshot)
    }

    /// Selects the row shown at position `pos`, if there is one.
    pub fn select_pos(&mut self, pos: usize, snapshot: &Snapshot) {
        if let Some(&i) = self.index.get(pos) {
            self.selected = snapshot.rows.get(i).map(|r| r.id);
            self.pos = pos;
        }
    }

    /// Keeps the selection on the same torrent, or on its neighbour if it is gone (or
    /// filtered out). Returns whether it took the neighbour.
    fn reconcile(&mut self, snapshot: &Snapshot) -> bool {
        let rows = &snapshot.rows;
        if let Some(id) = self.selected {
            // fast path: still at the same place
            if self
                .index
                .get(self.pos)
                .and_then(|&i| rows.get(i))
                .is_some_and(|r| r.id == id)
            {
                return false;
            }
            if let Some(pos) = self.index.iter().position(|&i| rows[i].id == id) {
                self.pos = pos;
                return false;
            }
        }
        if self.index.is_empty() {
            self.selected = None;
            self.pos = 0;
            false
        } else {
            self.select_pos(self.pos.min(self.index.len() - 1), snapshot);
            true
        }
    }

    /// The selected torrent, `None` when the list shows nothing.
    pub fn selected(&self) -> Option<TorrentId> {
        self.selected
    }

    /// Position of the selection among the rows shown (0 when nothing is selected).
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Number of rows shown.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no row is shown.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Whether torrent `id` is among the rows shown.
    pub fn shows(&self, id: TorrentId, snapshot: &Snapshot) -> bool {
        self.index
            .iter()
            .any(|&i| snapshot.rows.get(i).is_some_and(|r| r.id == id))
    }

    /// Torrent `id`'s row (found at the selection's position first, which is where the
    /// selected torrent is).
    pub fn row<'a>(&self, id: TorrentId, snapshot: &'a Snapshot) -> Option<&'a TorrentRow> {
        self.index
            .get(self.pos)
            .and_then(|&i| snapshot.rows.get(i))
            .filter(|r| r.id == id)
            .map(|r| &**r)
            .or_else(|| snapshot.row(id))
    }

    /// Indices into the snapshot's rows of `count` rows shown from position `first` on.
    pub fn range(&self, first: usize, count: usize) -> &[usize] {
        let start = first.min(self.index.len());
        let end = first.saturating_add(count).min(self.index.len());
        &self.index[start..end]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::TorrentState;
    use crate::tui::list::StateFilter;

    /// Torrents `ids` in this order, the even ones paused.
    fn snapshot(seq: u64, ids: &[u64]) -> Snapshot {
        let rows: Vec<Arc<TorrentRow>> = ids
            .iter()
            .map(|&id| {
                Arc::new(TorrentRow {
                    id: TorrentId(id),
                    name: format!("t{id}"),
                    state: if id % 2 == 0 {
                        TorrentState::Paused
                    } else {
                        TorrentState::Downloading
                    },
                    ..TorrentRow::default()
                })
            })
            .collect();
        Snapshot {
            seq,
            rows: rows.into(),
            ..Snapshot::default()
        }
    }

    fn shown(sel: &Selection, snap: &Snapshot) -> Vec<u64> {
        sel.range(0, usize::MAX)
            .iter()
            .map(|&i| snap.rows[i].id.0)
            .collect()
    }

    #[test]
    fn the_first_row_is_selected_and_stays_selected() {
        let mut sel = Selection::default();
        let view = View::default();
        let snap = snapshot(1, &[1, 2, 3]);
        assert!(
            sel.refresh(&snap, &view),
            "nothing selected yet: the first row"
        );
        assert_eq!((sel.selected(), sel.pos()), (Some(TorrentId(1)), 0));
        sel.select_pos(2, &snap);
        assert_eq!(sel.selected(), Some(TorrentId(3)));
        // a torrent added in front: same torrent, new position
        let snap = snapshot(2, &[0, 1, 2, 3]);
        assert!(!sel.refresh(&snap, &view));
        assert_eq!((sel.selected(), sel.pos()), (Some(TorrentId(3)), 3));
        sel.select_pos(9, &snap);
        assert_eq!(sel.selected(), Some(TorrentId(3)), "no such row: no change");
    }

    #[test]
    fn a_torrent_that_goes_leaves_the_selection_on_its_neighbour() {
        let mut sel = Selection::default();
        let view = View::default();
        let snap = snapshot(1, &[1, 2, 3]);
        sel.refresh(&snap, &view);
        sel.select_pos(2, &snap);
        let snap = snapshot(2, &[1, 2]);
        assert!(sel.refresh(&snap, &view));
        assert_eq!((sel.selected(), sel.pos()), (Some(TorrentId(2)), 1));
        let snap = snapshot(3, &[]);
        assert!(!sel.refresh(&snap, &view));
        assert_eq!((sel.selected(), sel.pos()), (None, 0));
        assert!(sel.is_empty());
    }

    #[test]
    fn filters_hide_rows_and_select_finds_a_shown_one() {
        let mut sel = Selection::default();
        let snap = snapshot(1, &[1, 2, 3, 4]);
        let paused = View {
            filter: StateFilter::Paused,
            ..View::default()
        };
        sel.refresh(&snap, &paused);
        assert_eq!(shown(&sel, &snap), [2, 4]);
        assert_eq!(sel.len(), 2);
        assert!(sel.shows(TorrentId(4), &snap) && !sel.shows(TorrentId(3), &snap));
        assert!(!sel.select(TorrentId(4), &snap));
        assert_eq!((sel.selected(), sel.pos()), (Some(TorrentId(4)), 1));
        assert!(
            sel.select(TorrentId(3), &snap),
            "hidden: the neighbour instead"
        );
        assert_eq!(sel.selected(), Some(TorrentId(4)));
        assert_eq!(
            sel.row(TorrentId(3), &snap).map(|r| r.id),
            Some(TorrentId(3)),
            "rows are found even when hidden"
        );
        assert_eq!(sel.range(1, 5).len(), 1);
        assert!(sel.range(7, 5).is_empty());
    }

    #[test]
    fn the_index_is_cached_per_snapshot_seq_until_invalidated() {
        let mut sel = Selection::default();
        let view = View::default();
        sel.refresh(&snapshot(1, &[1, 2]), &view);
        // another snapshot with the same seq (tests replace snapshots this way)
        let same_seq = snapshot(1, &[1, 2, 3]);
        sel.refresh(&same_seq, &view);
        assert_eq!(sel.len(), 2, "cached");
        sel.invalidate();
        sel.refresh(&same_seq, &view);
        assert_eq!(sel.len(), 3);
    }
}
