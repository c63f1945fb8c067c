//! Key chords, their text form (`"j"`, `"Ctrl-d"`, `"PgDn"`, `"Shift-Tab"`) and the
//! [`Keymap`]: the registry's default keys ([`ACTIONS`]) with the overrides of the config
//! file's `[keys]` section, checked so that no key means two things where it is active.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::{ACTIONS, Action, ActionSpec, Context, by_name};

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

/// The keys in effect: the registry's defaults, with the actions named in the config's
/// `[keys]` section bound to the keys given there instead.
#[derive(Debug, Clone)]
pub struct Keymap {
    /// Keys of each action (registry entry), in registry order.
    keys: Vec<(&'static ActionSpec, Vec<KeyBinding>)>,
    /// (context, chord) → action, for the contexts where the action is declared.
    table: HashMap<(Context, KeyBinding), Action>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::new(&BTreeMap::new()).unwrap_or_else(|_| Keymap::build_unchecked(&[]))
    }
}

impl Keymap {
    /// The registry's defaults with `overrides` (action name → keys in the text form of
    /// [`KeyBinding::parse`]) applied; an empty list unbinds the action.
    ///
    /// Errors: one line per problem: an unknown action name, a key that does not parse, or a
    /// key bound to two actions where both are active (e.g. `"x" is bound to both pause and
    /// recheck (Selected torrent …)`).
    pub fn new(overrides: &BTreeMap<String, Vec<String>>) -> Result<Keymap, Vec<String>> {
        let mut problems = Vec::new();
        let mut parsed: Vec<(&'static ActionSpec, Vec<KeyBinding>)> = Vec::new();
        for (name, keys) in overrides {
            let Some(spec) = by_name(name) else {
                problems.push(format!("[keys]: unknown action {name:?}"));
                continue;
            };
            let mut list = Vec::new();
            for key in keys {
                match KeyBinding::parse(key) {
                    Ok(k) => list.push(k),
                    Err(e) => problems.push(format!("[keys] {name}: {e}")),
                }
            }
            parsed.push((spec, list));
        }
        let map = Keymap::build_unchecked(&parsed);
        problems.extend(map.conflicts());
        if problems.is_empty() {
            Ok(map)
        } else {
            Err(problems)
        }
    }

    fn build_unchecked(overrides: &[(&'static ActionSpec, Vec<KeyBinding>)]) -> Keymap {
        let keys: Vec<(&'static ActionSpec, Vec<KeyBinding>)> = ACTIONS
            .iter()
            .map(|spec| {
                let keys = overrides
                    .iter()
                    .find(|(s, _)| s.name == spec.name)
                    .map_or_else(|| spec.keys.to_vec(), |(_, k)| k.clone());
                (spec, keys)
            })
            .collect();
        let mut table = HashMap::new();
        for (spec, list) in &keys {
            for context in spec.contexts {
                for key in list {
                    table.entry((*context, *key)).or_insert(spec.action);
                }
            }
        }
        Keymap { keys, table }
    }

    /// Every key that means two things somewhere, as one line each.
    pub fn conflicts(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for context in Context::ALL {
            let mut seen: HashMap<KeyBinding, &str> = HashMap::new();
            for active in context.chain() {
                for (spec, keys) in &self.keys {
                    if !spec.contexts.contains(&active) {
                        continue;
                    }
                    for key in keys {
                        match seen.get(key) {
                            Some(other) if *other != spec.name => {
                                let line = format!(
                                    "[keys]: \"{key}\" is bound to both {other} and {} ({})",
                                    spec.name,
                                    context.title()
                                );
                                if !problems.contains(&line) {
                                    problems.push(line);
                                }
                            }
                            Some(_) => {}
                            None => {
                                seen.insert(*key, spec.name);
                            }
                        }
                    }
                }
            }
        }
        problems
    }

    /// The action bound to `event` in `context` (or a parent context), if any. Key releases
    /// are ignored (Windows and the kitty protocol report them).
    pub fn lookup(&self, context: Context, event: &KeyEvent) -> Option<Action> {
        if event.kind == KeyEventKind::Release {
            return None;
        }
        let chord = KeyBinding::from_event(event);
        context
            .chain()
            .find_map(|ctx| self.table.get(&(ctx, chord)).copied())
    }

    /// The keys of `action` (empty when unbound).
    pub fn keys_of(&self, action: Action) -> &[KeyBinding] {
        self.keys
            .iter()
            .find(|(spec, _)| spec.action == action)
            .map_or(&[], |(_, keys)| keys.as_slice())
    }

    /// The first key of `action` as text, for hints (`"?"`), or `"(unbound)"`.
    pub fn hint(&self, action: Action) -> String {
        self.keys_of(action)
            .first()
            .map_or_else(|| "(unbound)".to_owned(), ToString::to_string)
    }

    /// Every registry entry with its keys, in registry order (the help reads this).
    pub fn entries(&self) -> impl Iterator<Item = (&'static ActionSpec, &[KeyBinding])> {
        self.keys
            .iter()
            .map(|(spec, keys)| (*spec, keys.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn default_keymap_has_no_conflicts() {
        let map = Keymap::new(&BTreeMap::new()).expect("defaults are valid");
        assert!(map.conflicts().is_empty(), "{:?}", map.conflicts());
    }

    #[test]
    fn every_action_has_one_entry_with_keys_and_text() {
        let mut names = std::collections::HashSet::new();
        let mut actions = std::collections::HashSet::new();
        for spec in ACTIONS {
            assert!(!spec.keys.is_empty(), "{} has no key", spec.name);
            assert!(!spec.contexts.is_empty(), "{} has no context", spec.name);
            assert!(!spec.description.is_empty(), "{}", spec.name);
            assert!(names.insert(spec.name), "duplicate name {}", spec.name);
            assert!(actions.insert(spec.action), "duplicate {:?}", spec.action);
        }
    }

    #[test]
    fn nothing_depends_on_flow_control_keys_alone_and_keys_are_normalised() {
        let xon_xoff = [KeyBinding::ctrl('s'), KeyBinding::ctrl('q')];
        for spec in ACTIONS {
            assert!(
                spec.keys.iter().any(|k| !xon_xoff.contains(k)),
                "{}",
                spec.name
            );
            for key in spec.keys {
                // Stored normalised, and the help text parses back to the same chord.
                assert_eq!(
                    KeyBinding::parse(&key.to_string()),
                    Ok(*key),
                    "{}",
                    spec.name
                );
                if matches!(key.code, KeyCode::Char(_)) {
                    assert!(
                        !key.modifiers.contains(KeyModifiers::SHIFT),
                        "{}",
                        spec.name
                    );
                }
            }
        }
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

    #[test]
    fn lookup_walks_the_context_chain_and_popups_never_quit() {
        let map = Keymap::default();
        let j = press(KeyCode::Char('j'), KeyModifiers::NONE);
        assert_eq!(map.lookup(Context::List, &j), Some(Action::Down));
        assert_eq!(map.lookup(Context::Files, &j), Some(Action::Down));
        let q = press(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(map.lookup(Context::List, &q), Some(Action::Quit));
        assert_eq!(map.lookup(Context::Files, &q), Some(Action::Quit));
        assert_eq!(map.lookup(Context::Help, &q), Some(Action::CloseHelp));
        assert_eq!(map.lookup(Context::Confirm, &q), Some(Action::Deny));
        assert_eq!(map.lookup(Context::Form, &q), None, "q types into a field");
        assert_eq!(map.lookup(Context::Search, &q), None);
        let p = press(KeyCode::Char('p'), KeyModifiers::NONE);
        assert_eq!(map.lookup(Context::Detail, &p), Some(Action::TogglePause));
        let l = press(KeyCode::Char('l'), KeyModifiers::NONE);
        assert_eq!(map.lookup(Context::List, &l), Some(Action::OpenDetail));
        assert_eq!(map.lookup(Context::Speed, &l), Some(Action::NextTab));
        let release = KeyEvent::new_with_kind(
            KeyCode::Char('j'),
            KeyModifiers::NONE,
            KeyEventKind::Release,
        );
        assert_eq!(map.lookup(Context::List, &release), None);
        let ctrl_j = press(KeyCode::Char('j'), KeyModifiers::CONTROL);
        assert_eq!(map.lookup(Context::List, &ctrl_j), None);
    }

    fn overrides(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn overrides_replace_defaults() {
        let map = Keymap::new(&overrides(&[("pause", &["x", "F2"])])).unwrap();
        let x = press(KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(map.lookup(Context::List, &x), Some(Action::TogglePause));
        let p = press(KeyCode::Char('p'), KeyModifiers::NONE);
        assert_eq!(map.lookup(Context::List, &p), None, "old key unbound");
        assert_eq!(map.hint(Action::TogglePause), "x");
        // unbinding
        let map = Keymap::new(&overrides(&[("pause", &[])])).unwrap();
        assert_eq!(map.lookup(Context::List, &p), None);
        assert_eq!(map.hint(Action::TogglePause), "(unbound)");
    }

    #[test]
    fn conflicts_unknown_names_and_bad_keys_are_reported() {
        // `c` is recheck in the same context.
        let e = Keymap::new(&overrides(&[("pause", &["c"])])).unwrap_err();
        assert!(
            e.iter()
                .any(|l| l.contains("\"c\"") && l.contains("pause") && l.contains("recheck")),
            "{e:?}"
        );
        // `j` in a parent context (Global quit vs list down).
        let e = Keymap::new(&overrides(&[("quit", &["j"])])).unwrap_err();
        assert!(
            e.iter().any(|l| l.contains("quit") && l.contains("down")),
            "{e:?}"
        );
        let e = Keymap::new(&overrides(&[("paws", &["x"])])).unwrap_err();
        assert!(e[0].contains("paws"), "{e:?}");
        let e = Keymap::new(&overrides(&[("pause", &["Hyper-x"])])).unwrap_err();
        assert!(e[0].contains("pause"), "{e:?}");
        // The same key in two contexts that are never active together is fine.
        assert!(Keymap::new(&overrides(&[("graph_window", &["x"]), ("fold", &["x"])])).is_ok());
    }
}
