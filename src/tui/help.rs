//! The help window's text: every action of the keymap in effect with its keys, grouped by
//! context, then the peer flags, the text-editing keys and how to rebind a key; long
//! descriptions wrapped to the window's width. Generated from the keymap (defaults plus
//! the config's `[keys]`), so it always matches what the keys do. The help widget
//! styles and draws these lines; the model scrolls through as many.

use super::action::{Action, Context};
use super::format;
use super::keymap::Keymap;

/// Width of the key column, in cells.
pub const KEYS_WIDTH: usize = 22;

/// What each peer flag letter means (Peers tab).
pub const PEER_FLAGS: [(&str, &str); 13] = [
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
    ("E", "encrypted (MSE/PE, RC4)"),
    ("e", "handshake encrypted, then plaintext"),
    ("P", "uTP"),
    ("X/H/L", "learnt through PEX / DHT / LSD (local network)"),
];

/// The keys that edit a text field or the search line, and what they do.
pub const EDITING_KEYS: [(&str, &str); 5] = [
    ("Left, Right", "move the cursor"),
    ("Home, Ctrl-a / End, Ctrl-e", "start / end of the line"),
    ("Backspace, Del", "delete a character"),
    (
        "Ctrl-w / Ctrl-u / Ctrl-k",
        "delete the word / to the start / to the end",
    ),
    ("Space", "toggle a checkbox"),
];

/// One line of the help text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelpLine {
    /// An empty line between sections.
    Blank,
    /// A section title (a context's, "Peer flags (Peers tab)", ...).
    Heading(String),
    /// The first line of an action: its keys (`"j, Down"`, `"(unbound)"`), the blanks that
    /// align the text after them, and the text: the description and `  [name]`, or as much
    /// of it as fits.
    Action {
        /// The keys, comma-separated.
        keys: String,
        /// Blanks after the keys (one more is always written).
        pad: usize,
        /// The description (and the name in brackets, when it fits on this line).
        text: String,
    },
    /// A further line of a wrapped action text, under the first one.
    More {
        /// Blanks before the text.
        indent: usize,
        /// The text.
        text: String,
    },
    /// A peer flag letter and what it means.
    Flag(&'static str, &'static str),
    /// Editing keys and what they do.
    Editing(&'static str, &'static str),
    /// A line of plain text.
    Text(&'static str),
}

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

/// What the quit key does when the config's `confirm_quit` is `false`.
pub const QUIT_AT_ONCE: &str = "Quit at once, never asking (config confirm_quit = false)";

/// What the quit key does attached to a daemon: the window closes, the engine runs on.
pub const QUIT_ATTACHED: &str = "Quit this TUI; the daemon goes on seeding (Q stops it too)";

/// The help text for a window `width` cells wide: per context a heading, then one entry
/// per action (`keys  description  [name]`), long texts wrapped under themselves.
/// `quit_asks` is the config's `confirm_quit`: without it the quit key quits at once;
/// `attached`: the TUI is attached to a daemon, which quitting leaves running.
pub fn lines(keymap: &Keymap, width: usize, quit_asks: bool, attached: bool) -> Vec<HelpLine> {
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
            lines.push(HelpLine::Blank);
        }
        lines.push(HelpLine::Heading(context.title().to_owned()));
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
            let description = match spec.action {
                Action::Quit if attached => QUIT_ATTACHED,
                Action::Quit if !quit_asks => QUIT_AT_ONCE,
                _ => spec.description,
            };
            let text = format!("{description}  [{}]", spec.name);
            let mut parts = wrap(&text, width.saturating_sub(indent)).into_iter();
            let first = parts.next().unwrap_or_default();
            lines.push(HelpLine::Action {
                keys,
                pad,
                text: first,
            });
            lines.extend(parts.map(|text| HelpLine::More { indent, text }));
        }
    }
    lines.push(HelpLine::Blank);
    lines.push(HelpLine::Heading("Peer flags (Peers tab)".to_owned()));
    lines.extend(PEER_FLAGS.iter().map(|(f, t)| HelpLine::Flag(f, t)));
    lines.push(HelpLine::Blank);
    lines.push(HelpLine::Heading(
        "Editing a field or the search line".to_owned(),
    ));
    lines.extend(EDITING_KEYS.iter().map(|(k, t)| HelpLine::Editing(k, t)));
    lines.push(HelpLine::Blank);
    lines.push(HelpLine::Heading("Config".to_owned()));
    // two lines, so that 80 columns (78 inside the frame) show all of it
    lines.push(HelpLine::Text(
        "  [keys] in the config file rebinds an action by the name in brackets,",
    ));
    lines.push(HelpLine::Text("  e.g. pause = \"x\""));
    lines
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::tui::action::ACTIONS;

    fn text(line: &HelpLine) -> String {
        match line {
            HelpLine::Action { keys, pad, text } => {
                format!("  {keys}{}{text}", " ".repeat(pad + 1))
            }
            HelpLine::More { indent, text } => format!("{}{text}", " ".repeat(*indent)),
            HelpLine::Heading(t) => t.clone(),
            HelpLine::Flag(f, t) | HelpLine::Editing(f, t) => format!("{f} {t}"),
            HelpLine::Text(t) => (*t).to_owned(),
            HelpLine::Blank => String::new(),
        }
    }

    #[test]
    fn every_action_is_listed_with_its_name() {
        let all: String = lines(&Keymap::default(), 200, true, false)
            .iter()
            .map(text)
            .collect::<Vec<_>>()
            .join("\n");
        for spec in ACTIONS {
            assert!(all.contains(spec.description), "{}", spec.name);
            assert!(all.contains(&format!("[{}]", spec.name)), "{}", spec.name);
        }
        assert!(all.contains("snubbed") && all.contains("Ctrl-w"));
    }

    #[test]
    fn keys_align_and_long_texts_wrap_under_themselves() {
        let narrow = lines(&Keymap::default(), 60, true, false);
        let wide = lines(&Keymap::default(), 200, true, false);
        assert!(narrow.len() > wide.len(), "narrow windows wrap");
        for line in &narrow {
            match line {
                HelpLine::Action { keys, pad, .. } => {
                    assert_eq!(
                        format::width(keys) + pad,
                        KEYS_WIDTH.max(format::width(keys))
                    );
                }
                HelpLine::More { indent, text } => {
                    assert!(*indent > 2 + KEYS_WIDTH);
                    assert!(format::width(text) <= 60 - indent, "{text:?}");
                }
                _ => {}
            }
        }
    }

    #[test]
    fn follows_the_keymap_in_effect() {
        let keys: BTreeMap<String, Vec<String>> = [
            ("pause".to_owned(), vec!["x".to_owned(), "F2".to_owned()]),
            ("recheck".to_owned(), vec![]),
        ]
        .into();
        let lines = lines(&Keymap::new(&keys).unwrap(), 200, true, false);
        let action = |name: &str| {
            lines.iter().find_map(|l| match l {
                HelpLine::Action { keys, text, .. } if text.contains(&format!("[{name}]")) => {
                    Some(keys.clone())
                }
                _ => None,
            })
        };
        assert_eq!(action("pause").as_deref(), Some("x, F2"));
        assert_eq!(action("recheck").as_deref(), Some("(unbound)"));
    }

    #[test]
    fn the_quit_key_says_what_it_does_with_the_config_in_effect() {
        let line = |asks, attached, name: &str| {
            lines(&Keymap::default(), 200, asks, attached)
                .into_iter()
                .find_map(|l| match l {
                    HelpLine::Action { text, .. } if text.contains(&format!("[{name}]")) => {
                        Some(text)
                    }
                    _ => None,
                })
                .unwrap()
        };
        let quit = |asks| line(asks, false, "quit");
        assert!(quit(true).contains("asks first"), "{}", quit(true));
        let at_once = quit(false);
        assert!(at_once.starts_with(QUIT_AT_ONCE), "{at_once}");
        assert!(!at_once.contains("asks first"), "{at_once}");
        // attached to a daemon: q closes the window whatever confirm_quit says (and Q
        // stops the daemon too)
        for asks in [true, false] {
            let q = line(asks, true, "quit");
            assert!(q.starts_with(QUIT_ATTACHED), "{q}");
        }
        let stop = line(true, true, "quit_daemon");
        assert!(
            stop.starts_with("Attached to a daemon: quit and stop"),
            "{stop}"
        );
    }

    #[test]
    fn every_line_fits_inside_an_80_column_frame() {
        let keymap = Keymap::default();
        for (quit_asks, attached) in [(true, false), (false, false), (true, true)] {
            for line in lines(&keymap, 78, quit_asks, attached) {
                let shown = match &line {
                    // drawn padded as the help window draws them
                    HelpLine::Flag(f, t) => format!("  {f:<4} {t}"),
                    HelpLine::Editing(k, t) => format!("  {k:<26} {t}"),
                    _ => text(&line),
                };
                assert!(format::width(&shown) <= 78, "cut at 80 columns: {shown:?}");
            }
        }
    }

    #[test]
    fn wrap_cuts_at_spaces() {
        assert_eq!(wrap("a bb ccc dddd", 10), ["a bb ccc", "dddd"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("word", 0), ["word"], "never narrower than 10");
    }
}
