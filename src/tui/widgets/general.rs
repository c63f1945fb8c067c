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

fn lines(app: &App, detail: Option<&TorrentDetail>) -> Vec<Line<'static>> {
    let theme = &app.options().theme;
    let Some(row) = app.selected_row() else {
        return Vec::new();
    };
    general::facts(row, detail, &app.options().keymap, &theme.sym)
        .into_iter()
        .map(|fact| {
            let style = match fact.tone {
                Tone::Plain => Style::new(),
                Tone::Error => theme.error(),
                Tone::Warning => theme.warning(),
                Tone::Title => theme.title(),
                Tone::State => theme.state(row),
                Tone::Dim => theme.dim(),
            };
            Line::from(vec![
                Span::styled(format!(" {:<12} ", fact.label), theme.dim()),
                Span::styled(fact.value, style),
            ])
        })
        .collect()
}

/// Draws the tab into `area`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    detail: Option<&TorrentDetail>,
    scroll: &Scroll,
) {
    let lines = lines(app, detail);
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
