//! The Files tab: the focused torrent's file tree ([`FileTree`]) drawn as rows with
//! collapsible folders, sizes, progress and priorities.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Row, Table};

use crate::api::FilePriority;
use crate::tui::file_tree::{FileTree, priority_label};
use crate::tui::format;
use crate::tui::scroll::Scroll;
use crate::tui::theme::{Role, Theme};

use super::parts::{highlight_row, progress_line};
use crate::units;

/// Draws the tree into `area`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    tree: &FileTree,
    scroll: &Scroll,
    theme: &Theme,
) {
    let sym = theme.sym;
    if tree.visible_len() == 0 {
        frame.render_widget(
            Line::styled(" no files (waiting for the engine's detail)", theme.dim()),
            area,
        );
        return;
    }
    let visible = usize::from(area.height.saturating_sub(1));
    let first = scroll.window(tree.visible_len(), visible);
    let widths = [
        Constraint::Fill(1),
        Constraint::Length(9),
        Constraint::Length(12),
        Constraint::Length(7),
    ];
    let name_width = usize::from(area.width.saturating_sub(9 + 12 + 7 + 3 + 2));
    let header = Row::new(["Name", "Size", "Progress", "Prio"]).style(theme.header());
    let rows = (first..(first + visible).min(tree.visible_len())).filter_map(|row| {
        let node = tree.node(row)?;
        let marked = !node.files.is_empty() && node.files.iter().all(|f| tree.marks().contains(f));
        let indent = "  ".repeat(node.depth.min(20));
        let icon = match node.file {
            None if tree.is_collapsed(&node.path) => format!("{} ", sym.fold.1),
            None => format!("{} ", sym.fold.0),
            Some(_) => "  ".to_owned(),
        };
        // the path shown is the one used on disk: say when it is not the torrent's own
        let changed = node
            .file
            .and_then(|f| tree.changed(f))
            .map_or(String::new(), |why| format!("  (changed: {why})"));
        let label = format!(
            "{indent}{icon}{}{}{changed}",
            node.name,
            if node.file.is_none() { "/" } else { "" }
        );
        let name = format::fit_with(&label, name_width, sym.ascii, sym.ellipsis);
        let gutter = if marked { sym.mark } else { " " };
        let prio = node.priority.map_or("mixed", priority_label);
        let prio_style = match node.priority {
            Some(FilePriority::Skip) => theme.dim(),
            Some(FilePriority::High) => theme.fg(Role::Warning),
            _ => ratatui::style::Style::new(),
        };
        let mut r = Row::new(vec![
            Line::from(vec![
                Span::styled(gutter, theme.fg(Role::Mark)),
                Span::raw(" "),
                Span::raw(name),
            ]),
            Line::from(units::size(node.size)).right_aligned(),
            progress_line(node.done, node.size, 12, theme),
            Line::styled(prio, prio_style),
        ]);
        if row == scroll.cursor {
            r = r.style(theme.selected());
        }
        Some(r)
    });
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    frame.render_widget(table, area);
    highlight_row(
        frame,
        area,
        scroll.cursor.checked_sub(first).map(|r| r + 1),
        visible,
        theme,
    );
}
