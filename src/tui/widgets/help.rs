//! The help window: every action of the active keymap with its keys, grouped by context,
//! then the peer flags and the text-editing keys. It is generated from the keymap in
//! effect (defaults plus the config's `[keys]`), so it always matches what the keys do, and
//! it scrolls.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::tui::action::{Action, Context};
use crate::tui::app::Scroll;
use crate::tui::format;
use crate::tui::keymap::Keymap;
use crate::tui::theme::Theme;

/// Width of the key column, in cells.
const KEYS_WIDTH: usize = 22;
/// Preferred popup width, in cells (smaller terminals get less).
const POPUP_WIDTH: u16 = 100;

/// What each peer flag letter means (Peers tab).
pub const PEER_FLAGS: [(&str, &str); 12] = [
    (
        "D",
        "downloading from it (we are interested, it unchoked us)",
    ),
    ("d", "we want its pieces but it chokes us"),
    ("U", "uploading to it (it is interested, we unchoked it)"),
    ("u", "it wants our pieces but we choke it"),
    ("K", "it unchoked us but we do not want anything"),
    ("?", "we unchoked it but it does not want anything"),
    ("O", "optimistic unchoke"),
    ("S", "snubbed: it sent nothing for a while"),
    ("I", "incoming connection"),
    ("E", "encrypted"),
    ("P", "uTP"),
    ("X/H", "learnt through PEX / DHT"),
];

/// The help text: per context a title line, then one line per action (`keys  description`).
pub(crate) fn lines(keymap: &Keymap, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for context in Context::ALL {
        let entries: Vec<_> = keymap
            .entries()
            .filter(|(spec, _)| spec.contexts.contains(&context))
            .collect();
        if entries.is_empty() {
            continue;
        }
        if !lines.is_empty() {
            lines.push(Line::from(""));
        }
        lines.push(Line::styled(context.title().to_owned(), theme.title()));
        for (spec, keys) in entries {
            let keys = if keys.is_empty() {
                "(unbound)".to_owned()
            } else {
                keys.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let pad = KEYS_WIDTH.saturating_sub(format::width(&keys));
            lines.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(keys, theme.key()),
                Span::raw(" ".repeat(pad + 1)),
                Span::raw(spec.description),
                Span::styled(format!("  [{}]", spec.name), theme.dim()),
            ]));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::styled("Peer flags (Peers tab)", theme.title()));
    for (flag, text) in PEER_FLAGS {
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(format!("{flag:<4}"), theme.key()),
            Span::raw(" "),
            Span::raw(text),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(Line::styled(
        "Editing a field or the search line",
        theme.title(),
    ));
    for (keys, text) in [
        ("Left, Right", "move the cursor"),
        ("Home, Ctrl-a / End, Ctrl-e", "start / end of the line"),
        ("Backspace, Del", "delete a character"),
        (
            "Ctrl-w / Ctrl-u / Ctrl-k",
            "delete the word / to the start / to the end",
        ),
        ("Space", "toggle a checkbox"),
    ] {
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(format!("{keys:<26}"), theme.key()),
            Span::raw(" "),
            Span::raw(text),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(Line::styled("Config", theme.title()));
    lines.push(Line::from(
        "  [keys] in the config file rebinds an action by the name in brackets, e.g. pause = \"x\"",
    ));
    lines
}

/// Lines of help text (for scrolling).
pub(crate) fn line_count(keymap: &Keymap) -> usize {
    lines(keymap, &Theme::default()).len()
}

/// Draws the popup centred over `area`, clearing what is under it, scrolled to `scroll`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    keymap: &Keymap,
    scroll: &Scroll,
    theme: &Theme,
) {
    let lines = lines(keymap, theme);
    let total = lines.len();
    let popup = area.centered(
        Constraint::Length(POPUP_WIDTH.min(area.width)),
        Constraint::Length(area.height.saturating_sub(2).max(3).min(area.height)),
    );
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
