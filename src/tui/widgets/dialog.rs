//! Dialog popups: forms (a label and a one-line field per row, the focused one highlighted,
//! with the text cursor shown) and yes/no questions. Drawn centred over the screen.

use ratatui::Frame;
use ratatui::layout::{Constraint, Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::tui::format;
use crate::tui::popups::Dialog;
use crate::tui::popups::form::{FieldKind, Form};
use crate::tui::theme::Theme;

/// Draws `dialog` centred in `area`.
pub(crate) fn render(frame: &mut Frame, area: Rect, dialog: &Dialog, theme: &Theme) {
    match dialog {
        Dialog::Confirm(c) => {
            let width = (c.lines.iter().map(|l| format::width(l)).max().unwrap_or(20) as u16 + 4)
                .clamp(30, 90)
                .min(area.width);
            let lines: Vec<Line> = c
                .lines
                .iter()
                .map(|l| Line::from(format::clean(l, theme.sym.ascii)))
                .collect();
            // long lines wrap: count the rows they take (word wrap may need one more)
            let inner = usize::from(width.saturating_sub(2)).max(1);
            let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
            let slack = usize::from(rows > lines.len());
            let height = ((rows + slack) as u16 + 2).min(area.height);
            let popup = area.centered(Constraint::Length(width), Constraint::Length(height));
            // the footer says what Enter does here: keep, where yes cannot be undone
            let footer = if c.enter_denies {
                " Enter keep  Esc cancel "
            } else {
                FOOTER
            };
            let block = block(&c.title, footer, theme);
            frame.render_widget(Clear, popup);
            frame.render_widget(
                Paragraph::new(lines)
                    .wrap(Wrap { trim: false })
                    .block(block),
                popup,
            );
        }
        Dialog::Form(form) => render_form(frame, area, form, theme),
    }
}

/// The footer of a dialog whose Enter applies it.
const FOOTER: &str = " Enter apply  Esc cancel ";

fn block<'a>(title: &str, footer: &'static str, theme: &Theme) -> Block<'a> {
    Block::new()
        .borders(Borders::ALL)
        .border_set(theme.sym.border)
        .title(Span::styled(format!(" {title} "), theme.title()))
        .title_bottom(Line::from(footer).right_aligned())
}

fn render_form(frame: &mut Frame, area: Rect, form: &Form, theme: &Theme) {
    let sym = theme.sym;
    let width = 76u16.min(area.width);
    let inner_w = usize::from(width.saturating_sub(2));
    let mut lines: Vec<Line> = Vec::new();
    for l in &form.intro {
        lines.push(Line::styled(
            format::fit_with(l, inner_w, sym.ascii, sym.ellipsis),
            theme.dim(),
        ));
    }
    let mut cursor: Option<(u16, u16)> = None;
    for (i, field) in form.fields.iter().enumerate() {
        let focused = i == form.focus;
        let label_style = if focused { theme.title() } else { Style::new() };
        match &field.kind {
            FieldKind::Check(on) => {
                let mark = if *on { "[x]" } else { "[ ]" };
                let style = if focused {
                    theme.selected()
                } else {
                    Style::new()
                };
                lines.push(Line::from(vec![
                    Span::styled(mark, style),
                    Span::raw(" "),
                    Span::styled(
                        format::fit_with(
                            &field.label,
                            inner_w.saturating_sub(4),
                            sym.ascii,
                            sym.ellipsis,
                        ),
                        label_style,
                    ),
                ]));
            }
            FieldKind::Text(f) | FieldKind::Path { field: f, .. } => {
                lines.push(Line::styled(
                    format::fit_with(&field.label, inner_w, sym.ascii, sym.ellipsis),
                    label_style,
                ));
                // keep the cursor visible: show the tail of a long text
                let text = format::clean(f.text(), sym.ascii);
                let chars: Vec<char> = text.chars().collect();
                let room = inner_w.saturating_sub(3);
                let mut start = 0;
                while format::width(
                    &chars[start..f.cursor().min(chars.len())]
                        .iter()
                        .collect::<String>(),
                ) > room
                {
                    start += 1;
                }
                let shown: String = chars[start..].iter().collect();
                let shown = format::fit_with(&shown, room + 1, sym.ascii, sym.ellipsis);
                let style = if focused {
                    Style::new().add_modifier(ratatui::style::Modifier::UNDERLINED)
                } else {
                    theme.dim()
                };
                let prefix = if focused { "> " } else { "  " };
                if focused {
                    let before: String = chars[start..f.cursor().min(chars.len())].iter().collect();
                    cursor = Some((2 + format::width(&before) as u16, lines.len() as u16));
                }
                let line = if focused && f.is_selected() {
                    // a filled-in value that typing replaces: shown selected
                    let rest = (room + 1).saturating_sub(format::width(&shown));
                    vec![
                        Span::raw(prefix),
                        Span::styled(shown, theme.selected()),
                        Span::styled(" ".repeat(rest), style),
                    ]
                } else {
                    let padded = format::pad(&shown, room + 1);
                    vec![Span::raw(prefix), Span::styled(padded, style)]
                };
                lines.push(Line::from(line));
            }
        }
    }
    if !form.candidates.is_empty() {
        let list = form.candidates.join("  ");
        lines.push(Line::styled(
            format::fit_with(&list, inner_w, sym.ascii, sym.ellipsis),
            theme.dim(),
        ));
    }
    if let Some(e) = &form.error {
        // an error is read whole: wrapped, not cut to one line
        for l in format::wrap_with(e, inner_w, 4, sym.ascii, sym.ellipsis) {
            lines.push(Line::styled(l, theme.error()));
        }
    }
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = area.centered(Constraint::Length(width), Constraint::Length(height));
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(block(&form.title, FOOTER, theme)),
        popup,
    );
    if let Some((x, y)) = cursor {
        let pos = Position::new(popup.x + 1 + x, popup.y + 1 + y);
        if pos.x < popup.right().saturating_sub(1) && pos.y < popup.bottom().saturating_sub(1) {
            frame.set_cursor_position(pos);
        }
    }
}
