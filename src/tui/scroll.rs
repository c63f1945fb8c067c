//! Scroll state of one scrollable area (a list, a tab, the log, the help): the cursor row,
//! moved by the navigation actions, and the first visible row and the visible height, which
//! only the drawing knows and records (hence the [`Cell`]s: widgets draw from `&App`).

use std::cell::Cell;

use super::action::Action;

/// Scroll state of one scrollable area: the cursor row and the first visible row (set while
/// drawing, when the height is known).
#[derive(Debug, Default)]
pub struct Scroll {
    /// The row under the cursor.
    pub cursor: usize,
    /// First visible row.
    pub offset: Cell<usize>,
    /// Visible rows at the last draw (for paging).
    pub height: Cell<usize>,
    /// Width of the area at the last draw, in cells (the help wraps to it).
    pub cursor_width: Cell<usize>,
}

impl Scroll {
    /// A scroll state with the cursor on row `cursor` and nothing drawn yet.
    pub fn at(cursor: usize) -> Scroll {
        Scroll {
            cursor,
            ..Scroll::default()
        }
    }

    /// Moves the cursor for a navigation action over `len` rows (a page is the height of
    /// the last draw, at least one row). Returns `false`, moving nothing, for any other
    /// action.
    pub fn apply(&mut self, action: Action, len: usize) -> bool {
        let page = self.height.get().max(1);
        let last = len.saturating_sub(1);
        let new = match action {
            Action::Down => self.cursor.saturating_add(1).min(last),
            Action::Up => self.cursor.saturating_sub(1),
            Action::PageDown => self.cursor.saturating_add(page).min(last),
            Action::PageUp => self.cursor.saturating_sub(page),
            Action::HalfPageDown => self.cursor.saturating_add(page.div_ceil(2)).min(last),
            Action::HalfPageUp => self.cursor.saturating_sub(page.div_ceil(2)),
            Action::Top => 0,
            Action::Bottom => last,
            _ => return false,
        };
        self.cursor = new;
        true
    }

    /// Scrolls a text of `len` lines whose first visible line is the cursor (the help):
    /// by a line, a page (the height of the last draw; a half page moves a page too), or to
    /// either end, never past the last full page.
    pub fn scroll_text(&mut self, action: Action, len: usize) {
        self.cursor = self.offset.get();
        let visible = self.height.get().max(1);
        let max_first = len.saturating_sub(visible);
        self.cursor = match action {
            Action::Down => (self.cursor + 1).min(max_first),
            Action::Up => self.cursor.saturating_sub(1),
            Action::Top => 0,
            Action::Bottom => max_first,
            Action::PageDown | Action::HalfPageDown => (self.cursor + visible).min(max_first),
            _ => self.cursor.saturating_sub(visible),
        };
        self.offset.set(self.cursor);
    }

    /// First row to show so the cursor is visible among `visible` rows of `len`, moving as
    /// little as possible; records it and the height for the next key.
    pub fn window(&self, len: usize, visible: usize) -> usize {
        let first = scroll_offset(self.offset.get(), Some(self.cursor), len, visible);
        self.offset.set(first);
        self.height.set(visible);
        first
    }
}

/// First row to show so that `selected` is visible, moving as little as possible from
/// `previous`, and never leaving blank lines at the bottom while rows are hidden above.
pub fn scroll_offset(
    previous: usize,
    selected: Option<usize>,
    len: usize,
    visible: usize,
) -> usize {
    let mut first = previous;
    if let Some(sel) = selected {
        let sel = sel.min(len.saturating_sub(1));
        if sel < first {
            first = sel;
        } else if visible > 0 && sel >= first + visible {
            first = sel + 1 - visible;
        }
    }
    first.min(len.saturating_sub(visible))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_moves_only_to_keep_the_selection_visible() {
        assert_eq!(scroll_offset(0, Some(3), 10, 4), 0);
        assert_eq!(scroll_offset(0, Some(4), 10, 4), 1);
        assert_eq!(scroll_offset(0, Some(9), 10, 4), 6);
        assert_eq!(scroll_offset(6, Some(7), 10, 4), 6);
        assert_eq!(scroll_offset(6, Some(5), 10, 4), 5);
        assert_eq!(scroll_offset(6, Some(2), 5, 4), 1);
        assert_eq!(scroll_offset(6, None, 3, 4), 0);
        assert_eq!(scroll_offset(2, Some(5), 10, 0), 2);
    }

    #[test]
    fn navigation_moves_the_cursor_within_the_rows() {
        let mut s = Scroll::default();
        assert!(s.apply(Action::Down, 3));
        assert_eq!(s.cursor, 1);
        s.apply(Action::Down, 3);
        s.apply(Action::Down, 3);
        assert_eq!(s.cursor, 2, "stops on the last row");
        s.apply(Action::Top, 3);
        assert_eq!(s.cursor, 0);
        s.apply(Action::Up, 3);
        assert_eq!(s.cursor, 0, "stops on the first row");
        s.apply(Action::Bottom, 3);
        assert_eq!(s.cursor, 2);
        s.apply(Action::Bottom, 0);
        assert_eq!(s.cursor, 0, "no rows: row 0");
    }

    #[test]
    fn pages_are_the_height_of_the_last_draw() {
        let mut s = Scroll::default();
        s.apply(Action::PageDown, 100);
        assert_eq!(s.cursor, 1, "nothing drawn yet: a page is one row");
        assert_eq!(s.window(100, 10), 0);
        assert_eq!(s.height.get(), 10);
        s.apply(Action::PageDown, 100);
        assert_eq!(s.cursor, 11);
        s.apply(Action::HalfPageUp, 100);
        assert_eq!(s.cursor, 6);
        s.apply(Action::HalfPageDown, 100);
        assert_eq!(s.cursor, 11);
        s.apply(Action::PageUp, 100);
        assert_eq!(s.cursor, 1);
        s.apply(Action::PageUp, 100);
        assert_eq!(s.cursor, 0);
        s.apply(Action::PageDown, 5);
        assert_eq!(s.cursor, 4, "a page never leaves the rows");
    }

    #[test]
    fn other_actions_do_not_move() {
        let mut s = Scroll::at(4);
        assert!(!s.apply(Action::Quit, 10));
        assert!(!s.apply(Action::NextTab, 10));
        assert_eq!(s.cursor, 4);
    }

    #[test]
    fn window_follows_the_cursor_and_records_what_it_showed() {
        let mut s = Scroll::at(12);
        assert_eq!(s.window(20, 5), 8, "cursor on the last visible row");
        assert_eq!(s.offset.get(), 8);
        s.cursor = 9;
        assert_eq!(s.window(20, 5), 8, "still visible: no move");
        s.cursor = 3;
        assert_eq!(s.window(20, 5), 3);
        assert_eq!(s.window(4, 5), 0, "fewer rows than lines: from the top");
    }

    #[test]
    fn a_text_scrolls_its_first_line_and_stops_at_the_last_page() {
        let mut s = Scroll::default();
        s.height.set(10);
        s.scroll_text(Action::Down, 25);
        assert_eq!((s.cursor, s.offset.get()), (1, 1));
        s.scroll_text(Action::PageDown, 25);
        assert_eq!(s.offset.get(), 11);
        s.scroll_text(Action::HalfPageDown, 25);
        assert_eq!(s.offset.get(), 15, "the last page starts at line 15");
        s.scroll_text(Action::Down, 25);
        assert_eq!(s.offset.get(), 15);
        s.scroll_text(Action::PageUp, 25);
        assert_eq!(s.offset.get(), 5);
        s.scroll_text(Action::HalfPageUp, 25);
        assert_eq!(s.offset.get(), 0);
        s.scroll_text(Action::Bottom, 25);
        assert_eq!(s.offset.get(), 15);
        // the drawing clamps the offset; scrolling starts from what was shown
        s.offset.set(3);
        s.scroll_text(Action::Up, 25);
        assert_eq!(s.offset.get(), 2);
        s.scroll_text(Action::Top, 25);
        assert_eq!(s.offset.get(), 0);
        s.scroll_text(Action::Bottom, 4);
        assert_eq!(
            s.offset.get(),
            0,
            "a text shorter than the window does not scroll"
        );
    }
}
