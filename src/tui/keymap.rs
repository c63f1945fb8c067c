//! Key chords and the dispatcher that turns a crossterm key event into an [`Action`] by
//! reading the one action registry ([`ACTIONS`]).

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::{ACTIONS, Action, Context};

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
    /// and only Ctrl, Alt and Shift are kept.
    pub fn from_event(event: &KeyEvent) -> Self {
        let mut modifiers =
            event.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let mut code = event.code;
        if let KeyCode::Char(c) = code {
            modifiers.remove(KeyModifiers::SHIFT);
            if modifiers.contains(KeyModifiers::CONTROL) {
                code = KeyCode::Char(c.to_ascii_lowercase());
            }
        }
        Self { code, modifiers }
    }
}

impl fmt::Display for KeyBinding {
    /// Human form for the help overlay: `"j"`, `"G"`, `"Down"`, `"Ctrl-C"`, `"Alt-x"`.
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
            KeyCode::Char(c) if self.modifiers.contains(KeyModifiers::CONTROL) => {
                write!(f, "{}", c.to_ascii_uppercase())
            }
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
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Del"),
            KeyCode::Insert => f.write_str("Ins"),
            KeyCode::F(n) => write!(f, "F{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// The action bound to `event` in `context`, if any.
///
/// Bindings of `context` win over [`Context::Global`] ones (the registry test makes sure they
/// never overlap). Key releases are ignored (Windows and the kitty protocol report them);
/// presses and auto-repeats dispatch.
pub fn lookup(context: Context, event: &KeyEvent) -> Option<Action> {
    if event.kind == KeyEventKind::Release {
        return None;
    }
    let chord = KeyBinding::from_event(event);
    let find = |ctx: Context| {
        ACTIONS
            .iter()
            .find(|spec| spec.context == ctx && spec.keys.contains(&chord))
            .map(|spec| spec.action)
    };
    find(context).or_else(|| find(Context::Global))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn shift_is_implied_by_the_character() {
        let ev = press(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(KeyBinding::from_event(&ev), KeyBinding::char('G'));
        let ev = press(KeyCode::Char('?'), KeyModifiers::SHIFT);
        assert_eq!(KeyBinding::from_event(&ev), KeyBinding::char('?'));
    }

    #[test]
    fn ctrl_letters_ignore_caps_lock() {
        let ev = press(
            KeyCode::Char('C'),
            KeyModifiers::CONTROL | KeyModifiers::SHIFT,
        );
        assert_eq!(KeyBinding::from_event(&ev), KeyBinding::ctrl('c'));
    }

    #[test]
    fn display_names() {
        assert_eq!(KeyBinding::ctrl('c').to_string(), "Ctrl-C");
        assert_eq!(KeyBinding::char('G').to_string(), "G");
        assert_eq!(KeyBinding::key(KeyCode::Down).to_string(), "Down");
        assert_eq!(KeyBinding::char(' ').to_string(), "Space");
    }

    #[test]
    fn lookup_prefers_context_then_global_and_ignores_release() {
        let j = press(KeyCode::Char('j'), KeyModifiers::NONE);
        assert_eq!(lookup(Context::List, &j), Some(Action::MoveDown));
        // The list's keys do nothing while the help window is open.
        assert_eq!(lookup(Context::Help, &j), None);
        let q = press(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(lookup(Context::Help, &q), Some(Action::Quit));
        let esc = press(KeyCode::Esc, KeyModifiers::NONE);
        assert_eq!(lookup(Context::Help, &esc), Some(Action::CloseHelp));
        let release = KeyEvent::new_with_kind(
            KeyCode::Char('j'),
            KeyModifiers::NONE,
            KeyEventKind::Release,
        );
        assert_eq!(lookup(Context::List, &release), None);
        let ctrl_j = press(KeyCode::Char('j'), KeyModifiers::CONTROL);
        assert_eq!(lookup(Context::List, &ctrl_j), None);
    }
}
