//! The help window: the help text ([`crate::tui::help`]) styled, in a scrolling popup.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::tui::action::Action;
use crate::tui::app::UiOptions;
use crate::tui::help::{self, HelpLine};
use crate::tui::keymap::Keymap;
use crate::tui::scroll::Scroll;
use crate::tui::theme::Theme;

/// Preferred popup width, in cells (smaller terminals get less).
const POPUP_WIDTH: u16 = 100;

/// An action's text with the `[name]` part dimmed.
fn described(part: String, theme: &Theme) -> Vec<Span<'static>> {
    match part.find("  [") {
        Some(i) => {
            let (d, n) = part.split_at(i);
            vec![
                Span::raw(d.to_owned()),
                Span::styled(n.to_owned(), theme.dim()),
            ]
        }
        None if part.starts_with('[') => vec![Span::styled(part, theme.dim())],
        None => vec![Span::raw(part)],
    }
}

/// The help text for a window `width` cells wide, styled.
fn lines(
    keymap: &Keymap,
    quit_asks: bool,
    attached: bool,
    theme: &Theme,
    width: usize,
) -> Vec<Line<'static>> {
    help::lines(keymap, width, quit_asks, attached)
        .into_iter()
        .map(|line| match line {
            HelpLine::Blank => Line::from(""),
            HelpLine::Heading(title) => Line::styled(title, theme.title()),
            HelpLine::Action { keys, pad, text } => {
                let mut spans = vec![
                    Span::raw("  "),
                    Span::styled(keys, theme.key()),
                    Span::raw(" ".repeat(pad + 1)),
                ];
                spans.extend(described(text, theme));
                Line::from(spans)
            }
            HelpLine::More { indent, text } => {
                let mut spans = vec![Span::raw(" ".repeat(indent))];
                spans.extend(described(text, theme));
                Line::from(spans)
            }
            HelpLine::Flag(flag, text) => Line::from(vec![
                Span::raw("  "),
                Span::styled(format!("{flag:<4}"), theme.key()),
                Span::raw(" "),
                Span::raw(text),
            ]),
            HelpLine::Editing(keys, text) => Line::from(vec![
                Span::raw("  "),
                Span::styled(format!("{keys:<26}"), theme.key()),
                Span::raw(" "),
                Span::raw(text),
            ]),
            HelpLine::Text(text) => Line::from(text),
        })
        .collect()
}

/// Draws the popup centred over `area`, clearing what is under it, scrolled to `scroll`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    opts: &UiOptions,
    scroll: &Scroll,
    theme: &Theme,
) {
    let keymap = &opts.keymap;
    let popup = area.centered(
        Constraint::Length(POPUP_WIDTH.min(area.width)),
        Constraint::Length(area.height.saturating_sub(2).max(3).min(area.height)),
    );
    let inner_width = usize::from(popup.width.saturating_sub(2));
    let lines = lines(
        keymap,
        opts.confirm_quit,
        opts.attached.is_some(),
        theme,
        inner_width,
    );
    let total = lines.len();
    scroll.cursor_width.set(inner_width);
    let visible = usize::from(popup.height.saturating_sub(2));
    let first = scroll.offset.get().min(total.saturating_sub(visible));
    scroll.offset.set(first);
    scroll.height.set(visible);
    let close = keymap.hint(Action::CloseHelp);
    let down = keymap.hint(Action::Down);
    let up = keymap.hint(Action::Up);
    let position = format!(
        " {}-{} of {total} ",
        (first + 1).min(total),
        (first + visible).min(total)
    );
    let block = Block::new()
        .borders(Borders::ALL)
        .border_set(theme.sym.border)
        .title(" Keys ")
        .title_bottom(Line::from(position).left_aligned())
        .title_bottom(Line::from(format!(" {down}/{up} scroll  {close} close ")).right_aligned());
    let shown: Vec<Line<'static>> = lines.into_iter().skip(first).take(visible).collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(shown).block(block), popup);
}
