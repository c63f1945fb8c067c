//! The help window: every action of the active keymap with its keys, grouped by context,
//! then the peer flags and the text-editing keys. It is generated from the keymap in
//! effect (defaults plus the config's `[keys]`), so it always matches what the keys do, and
//! it scrolls.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::tui::action::{Action, Context};
use crate::tui::format;
use crate::tui::keymap::Keymap;
use crate::tui::scroll::Scroll;
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
    ("X/H/L", "learnt through PEX / DHT / LSD (local network)"),
];

/// Splits `text` into pieces of at most `width` cells at spaces (a word longer than the
/// width is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(10);
    let mut out = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let w = format::width(word);
        if !line.is_empty() && format::width(&line) + 1 + w > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || out.is_empty() {
        out.push(line);
    }
    out
}

/// The help text for a window `width` cells wide: per context a title line, then one entry
/// per action (`keys  description  [name]`), long descriptions wrapped under themselves.
pub(crate) fn lines(keymap: &Keymap, theme: &Theme, width: usize) -> Vec<Line<'static>> {
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
            let indent = 2 + KEYS_WIDTH.max(format::width(&keys)) + 1;
            let text = format!("{}  [{}]", spec.description, spec.name);
            let mut parts = wrap(&text, width.saturating_sub(indent)).into_iter();
            let first = parts.next().unwrap_or_default();
            let styled = |part: String| -> Vec<Span<'static>> {
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
            };
            let mut spans = vec![
                Span::raw("  "),
                Span::styled(keys, theme.key()),
                Span::raw(" ".repeat(pad + 1)),
            ];
            spans.extend(styled(first));
            lines.push(Line::from(spans));
            for part in parts {
                let mut spans = vec![Span::raw(" ".repeat(indent))];
                spans.extend(styled(part));
                lines.push(Line::from(spans));
            }
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

/// Lines of help text for a window `width` cells wide (for scrolling).
pub(crate) fn line_count(keymap: &Keymap, width: usize) -> usize {
    lines(keymap, &Theme::default(), width).len()
}

/// Draws the popup centred over `area`, clearing what is under it, scrolled to `scroll`.
pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    keymap: &Keymap,
    scroll: &Scroll,
    theme: &Theme,
) {
    let popup = area.centered(
        Constraint::Length(POPUP_WIDTH.min(area.width)),
        Constraint::Length(area.height.saturating_sub(2).max(3).min(area.height)),
    );
    let inner_width = usize::from(popup.width.saturating_sub(2));
    let lines = lines(keymap, theme, inner_width);
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
