//! The General tab: the facts about the torrent ([`crate::tui::general`]), a label and a
//! styled value a line, scrolled and cut to the width.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::api::TorrentDetail;
use crate::tui::app::App;
use crate::tui::format;
use crate::tui::general::{self, Tone};
use crate::tui::scroll::Scroll;

/// Cells before a value: a space, the label (12 cells) and a space.
const VALUE_COLUMN: usize = 14;

/// The tab's lines at `width` cells: an error or a warning (its cause, what to do) wraps
/// onto more lines under its value column, so it is read whole at 80 columns; other values
/// (paths, names) stay on their line and are cut at the edge.
fn lines(app: &App, detail: Option<&TorrentDetail>, width: usize) -> Vec<Line<'static>> {
    let theme = &app.options().theme;
    let Some(row) = app.selected_row() else {
        return Vec::new();
    };
    let room = width.saturating_sub(VALUE_COLUMN);
    let mut out = Vec::new();
    for fact in general::facts(row, detail, &app.options().keymap, &theme.sym) {
        let style = match fact.tone {
            Tone::Plain => Style::new(),
            Tone::Error => theme.error(),
            Tone::Warning => theme.warning(),
            Tone::Title => theme.title(),
            Tone::State => theme.state(row),
            Tone::Dim => theme.dim(),
        };
        let label = Span::styled(format!(" {:<12} ", fact.label), theme.dim());
        let wraps = matches!(fact.tone, Tone::Error | Tone::Warning)
            && room >= 20
            && format::width(&fact.value) > room;
        if !wraps {
            out.push(Line::from(vec![label, Span::styled(fact.value, style)]));
            continue;
        }
        let parts = format::wrap_with(&fact.value, room, 6, theme.sym.ascii, theme.sym.ellipsis);
        for (i, part) in parts.into_iter().enumerate() {
            let head = if i == 0 {
                label.clone()
            } else {
                Span::raw(" ".repeat(VALUE_COLUMN))
            };
            out.push(Line::from(vec![head, Span::styled(part, style)]));
        }
    }
    out
}

/// Draws the tab into `area`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    detail: Option<&TorrentDetail>,
    scroll: &Scroll,
) {
    let lines = lines(app, detail, usize::from(area.width));
    let visible = usize::from(area.height);
    let first = scroll.cursor.min(lines.len().saturating_sub(visible));
    scroll.offset.set(first);
    scroll.height.set(visible);
    let theme = &app.options().theme;
    let width = usize::from(area.width);
    // cut every line to the width (values can be long paths)
    let shown: Vec<Line<'static>> = lines
        .into_iter()
        .skip(first)
        .take(visible)
        .map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            if format::width(&text) <= width {
                l
            } else {
                let style = l.spans.last().map_or(Style::new(), |s| s.style);
                Line::styled(
                    format::fit_with(&text, width, theme.sym.ascii, theme.sym.ellipsis),
                    style,
                )
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(shown), area);
}
