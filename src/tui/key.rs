//! Key chords and their text form: `"j"`, `"G"`, `"Ctrl-d"`, `"PgDn"`, `"Shift-Tab"`.
//!
//! A [`KeyBinding`] is what the action registry ([`super::action::ACTIONS`]) lists as
//! default keys, what the config file's `[keys]` section names and what the help shows; the
//! [`super::keymap::Keymap`] maps them to actions. This room imports neither of them.

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One key chord: a key plus the Ctrl/Alt modifiers held with it.
///
/// Shift is not stored for character keys: the character already says it (`G`, `?`), and
/// terminals disagree on whether they report Shift for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyBinding {
    /// The key.
    pub code: KeyCode,
    /// Modifiers, normalised (see [`KeyBinding::from_event`]).
    pub modifiers: KeyModifiers,
}

impl KeyBinding {
    /// A key pressed alone, e.g. `KeyBinding::key(KeyCode::Down)`.
    pub const fn key(code: KeyCode) -> Self {
        Self {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    /// A character key pressed alone, e.g. `KeyBinding::char('j')`.
    pub const fn char(c: char) -> Self {
        Self::key(KeyCode::Char(c))
    }

    /// A character key with Ctrl, e.g. `KeyBinding::ctrl('c')` for Ctrl-C. Use lower case.
    pub const fn ctrl(c: char) -> Self {
        Self {
            code: KeyCode::Char(c),
            modifiers: KeyModifiers::CONTROL,
        }
    }

    /// The chord a key event stands for, normalised so it compares equal to the registry's
    /// bindings: Shift is dropped for character keys, Ctrl+letter is lower-cased (Caps Lock),
    /// Shift-Tab is `BackTab`, and only Ctrl, Alt and Shift are kept.
    pub fn from_event(event: &KeyEvent) -> Self {
        let mut modifiers =
            event.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let mut code = event.code;
        match code {
            KeyCode::Char(c) => {
                modifiers.remove(KeyModifiers::SHIFT);
                if modifiers.contains(KeyModifiers::CONTROL) {
                    code = KeyCode::Char(c.to_ascii_lowercase());
                }
            }
            KeyCode::BackTab => modifiers.remove(KeyModifiers::SHIFT),
            KeyCode::Tab if modifiers.contains(KeyModifiers::SHIFT) => {
                code = KeyCode::BackTab;
                modifiers.remove(KeyModifiers::SHIFT);
            }
            _ => {}
        }
        Self { code, modifiers }
    }

    /// Parses the text form used in the config file and shown in the help: a key name
    /// (`j`, `G`, `?`, `Space`, `Enter`, `Esc`, `Tab`, `Shift-Tab`, `Backspace`, `Del`,
    /// `Ins`, `Up`, `Down`, `Left`, `Right`, `Home`, `End`, `PgUp`, `PgDn`, `F1`–`F12`),
    /// optionally after `Ctrl-` and/or `Alt-` (`Ctrl-d`, `Alt-x`). Names are
    /// case-insensitive except single characters (`g` and `G` differ); `-` alone is the
    /// minus key.
    ///
    /// Errors: a text saying what is wrong, e.g. `unknown key name "Foo"`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rest = text.trim();
        if rest.is_empty() {
            return Err("empty key name".to_owned());
        }
        let mut modifiers = KeyModifiers::NONE;
        loop {
            let lower = rest.to_ascii_lowercase();
            let prefix = ["ctrl-", "c-", "alt-", "m-", "shift-", "s-"]
                .into_iter()
                .find(|p| lower.starts_with(p) && rest.len() > p.len());
            let Some(prefix) = prefix else { break };
            match prefix {
                "ctrl-" | "c-" => modifiers |= KeyModifiers::CONTROL,
                "alt-" | "m-" => modifiers |= KeyModifiers::ALT,
                _ => modifiers |= KeyModifiers::SHIFT,
            }
            rest = &rest[prefix.len()..];
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(c),
            _ => match rest.to_ascii_lowercase().as_str() {
                "space" => KeyCode::Char(' '),
                "enter" | "return" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "backspace" | "bs" => KeyCode::Backspace,
                "del" | "delete" => KeyCode::Delete,
                "ins" | "insert" => KeyCode::Insert,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pgup" | "pageup" => KeyCode::PageUp,
                "pgdn" | "pagedown" | "pgdown" => KeyCode::PageDown,
                "minus" => KeyCode::Char('-'),
                "plus" => KeyCode::Char('+'),
                f if f.starts_with('f') && f.len() > 1 => match f[1..].parse::<u8>() {
                    Ok(n @ 1..=12) => KeyCode::F(n),
                    _ => return Err(format!("unknown key name {rest:?}")),
                },
                _ => return Err(format!("unknown key name {rest:?}")),
            },
        };
        let (code, modifiers) = match code {
            // Shift is implied by the character; Shift-Tab is BackTab.
            KeyCode::Char(c) => {
                let mut m = modifiers - KeyModifiers::SHIFT;
                let c = if m.contains(KeyModifiers::CONTROL) {
                    c.to_ascii_lowercase()
                } else if modifiers.contains(KeyModifiers::SHIFT) {
                    c.to_ascii_uppercase()
                } else {
                    c
                };
                if c.is_control() {
                    return Err(format!("{text:?} is a control character"));
                }
                m &= KeyModifiers::CONTROL | KeyModifiers::ALT;
                (KeyCode::Char(c), m)
            }
            KeyCode::Tab if modifiers.contains(KeyModifiers::SHIFT) => {
                (KeyCode::BackTab, modifiers - KeyModifiers::SHIFT)
            }
            other => (other, modifiers),
        };
        Ok(Self { code, modifiers })
    }
}

impl fmt::Display for KeyBinding {
    /// Human form for the help overlay, which [`KeyBinding::parse`] reads back: `"j"`, `"G"`,
    /// `"Down"`, `"Ctrl-d"`, `"Alt-x"`, `"Shift-Tab"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            f.write_str("Ctrl-")?;
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            f.write_str("Alt-")?;
        }
        if self.modifiers.contains(KeyModifiers::SHIFT) {
            f.write_str("Shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Up => f.write_str("Up"),
            KeyCode::Down => f.write_str("Down"),
            KeyCode::Left => f.write_str("Left"),
            KeyCode::Right => f.write_str("Right"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::PageUp => f.write_str("PgUp"),
            KeyCode::PageDown => f.write_str("PgDn"),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("Shift-Tab"),
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Del"),
            KeyCode::Insert => f.write_str("Ins"),
            KeyCode::F(n) => write!(f, "F{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn parse_key_names() {
        let p = |s: &str| KeyBinding::parse(s).unwrap();
        assert_eq!(p("j"), KeyBinding::char('j'));
        assert_eq!(p("G"), KeyBinding::char('G'));
        assert_eq!(p("Shift-g"), KeyBinding::char('G'));
        assert_eq!(p("ctrl-D"), KeyBinding::ctrl('d'));
        assert_eq!(p("C-d"), KeyBinding::ctrl('d'));
        assert_eq!(p("Space"), KeyBinding::char(' '));
        assert_eq!(p("pgdn"), KeyBinding::key(KeyCode::PageDown));
        assert_eq!(p("Shift-Tab"), KeyBinding::key(KeyCode::BackTab));
        assert_eq!(p("F5"), KeyBinding::key(KeyCode::F(5)));
        assert_eq!(p("-"), KeyBinding::char('-'));
        assert_eq!(
            p("Alt-x"),
            KeyBinding {
                code: KeyCode::Char('x'),
                modifiers: KeyModifiers::ALT
            }
        );
        assert!(KeyBinding::parse("").is_err());
        assert!(KeyBinding::parse("Foo").unwrap_err().contains("Foo"));
        assert!(KeyBinding::parse("F13").is_err());
        assert!(KeyBinding::parse("\u{7}").is_err());
    }

    #[test]
    fn display_names() {
        assert_eq!(KeyBinding::ctrl('c').to_string(), "Ctrl-c");
        assert_eq!(KeyBinding::char('G').to_string(), "G");
        assert_eq!(KeyBinding::key(KeyCode::Down).to_string(), "Down");
        assert_eq!(KeyBinding::char(' ').to_string(), "Space");
        assert_eq!(KeyBinding::key(KeyCode::BackTab).to_string(), "Shift-Tab");
    }

    #[test]
    fn events_normalise() {
        let ev = press(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(KeyBinding::from_event(&ev), KeyBinding::char('G'));
        let ev = press(
            KeyCode::Char('C'),
            KeyModifiers::CONTROL | KeyModifiers::SHIFT,
        );
        assert_eq!(KeyBinding::from_event(&ev), KeyBinding::ctrl('c'));
        let ev = press(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(
            KeyBinding::from_event(&ev),
            KeyBinding::key(KeyCode::BackTab)
        );
    }
}
