//! The [`Keymap`]: the registry's default keys ([`ACTIONS`]) with the overrides of the
//! config file's `[keys]` section, checked so that no key means two things where it is
//! active. The chords themselves are [`KeyBinding`]s ([`super::key`]).

use std::collections::{BTreeMap, HashMap};

use crossterm::event::{KeyEvent, KeyEventKind};

use super::action::{ACTIONS, Action, ActionSpec, Context, by_name};
use super::key::KeyBinding;
use crate::config::ui::{EntryProblem, Lined};

/// The key names [`KeyBinding::parse`] reads, for messages about a key that does not parse.
pub const KEY_NAMES: &str = "a character (j, G, ?), Space, Enter, Esc, Tab, Shift-Tab, \
    Backspace, Del, Ins, Up, Down, Left, Right, Home, End, PgUp, PgDn, F1-F12, \
    with Ctrl- or Alt- in front";

/// One problem of the `[keys]` section: the entry (action name) to fix and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyProblem {
    /// The `[keys]` entry the problem is about; for two actions on one key, the one the
    /// file rebinds (the later one when it rebinds both).
    pub action: String,
    /// What is wrong and what is allowed.
    pub problem: String,
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
    /// Errors: one [`KeyProblem`] per problem: an unknown action name (with the names
    /// there are), a key that does not parse (with the key names there are), or a key
    /// bound to two actions where both are active (e.g. `"x" is bound to both pause and
    /// recheck (Selected torrent …)`).
    pub fn new(overrides: &BTreeMap<String, Vec<String>>) -> Result<Keymap, Vec<KeyProblem>> {
        let mut problems = Vec::new();
        let problem = |action: &str, problem: String| KeyProblem {
            action: action.to_owned(),
            problem,
        };
        let mut parsed: Vec<(&'static ActionSpec, Vec<KeyBinding>)> = Vec::new();
        for (name, keys) in overrides {
            let Some(spec) = by_name(name) else {
                let names: Vec<&str> = ACTIONS.iter().map(|s| s.name).collect();
                problems.push(problem(
                    name,
                    format!("unknown action (actions: {})", names.join(", ")),
                ));
                continue;
            };
            let mut list = Vec::new();
            for key in keys {
                match KeyBinding::parse(key) {
                    Ok(k) => list.push(k),
                    Err(e) => problems.push(problem(name, format!("{e} (keys: {KEY_NAMES})"))),
                }
            }
            parsed.push((spec, list));
        }
        let map = Keymap::build_unchecked(&parsed);
        for (first, second, text) in map.conflicting() {
            let action = if overrides.contains_key(second) {
                second
            } else {
                first
            };
            problems.push(problem(action, text));
        }
        if problems.is_empty() {
            Ok(map)
        } else {
            Err(problems)
        }
    }

    /// [`Keymap::new`] over the config file's `[keys]` entries.
    ///
    /// # Errors
    /// Each problem as an [`EntryProblem`] with the line of the entry to fix.
    pub fn from_config(
        keys: &BTreeMap<String, Lined<Vec<String>>>,
    ) -> Result<Keymap, Vec<EntryProblem>> {
        let overrides = keys
            .iter()
            .map(|(name, keys)| (name.clone(), keys.value.clone()))
            .collect();
        Keymap::new(&overrides).map_err(|problems| {
            problems
                .into_iter()
                .map(|p| EntryProblem {
                    line: keys.get(&p.action).map_or(0, |k| k.line),
                    table: "keys",
                    key: p.action,
                    problem: p.problem,
                })
                .collect()
        })
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
        self.conflicting()
            .into_iter()
            .map(|(_, _, text)| format!("[keys]: {text}"))
            .collect()
    }

    /// Every key that means two things somewhere: the action met first, the other one,
    /// and a sentence naming the key, both actions and every context where they clash.
    fn conflicting(&self) -> Vec<(&'static str, &'static str, String)> {
        // (key, first action, second action) → the contexts where both are active
        let mut clashes: Vec<(KeyBinding, &'static str, &'static str, Vec<&'static str>)> =
            Vec::new();
        for context in Context::ALL {
            let mut seen: HashMap<KeyBinding, &'static str> = HashMap::new();
            for active in context.chain() {
                for (spec, keys) in &self.keys {
                    if !spec.contexts.contains(&active) {
                        continue;
                    }
                    for key in keys {
                        match seen.get(key) {
                            Some(&other) if other != spec.name => {
                                let same = |(k, a, b, _): &&mut (_, &str, &str, _)| {
                                    k == key
                                        && ((*a, *b) == (other, spec.name)
                                            || (*a, *b) == (spec.name, other))
                                };
                                match clashes.iter_mut().find(same) {
                                    Some((.., contexts)) => {
                                        if !contexts.contains(&context.title()) {
                                            contexts.push(context.title());
                                        }
                                    }
                                    None => clashes.push((
                                        *key,
                                        other,
                                        spec.name,
                                        vec![context.title()],
                                    )),
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
        clashes
            .into_iter()
            .map(|(key, first, second, contexts)| {
                let text = format!(
                    "\"{key}\" is bound to both {first} and {second} (in: {})",
                    contexts.join(", ")
                );
                (first, second, text)
            })
            .collect()
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
    use crossterm::event::{KeyCode, KeyModifiers};

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
        // `c` is recheck in the same context: the entry to fix is the rebound one, told
        // once with every context where both are active.
        let e = Keymap::new(&overrides(&[("pause", &["c"])])).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].problem.contains("Torrent list") && e[0].problem.contains("Detail view"),
            "{e:?}"
        );
        assert!(
            e.iter().any(|p| p.action == "pause"
                && p.problem.contains("\"c\"")
                && p.problem.contains("recheck")),
            "{e:?}"
        );
        // `j` in a parent context (Global quit vs list down).
        let e = Keymap::new(&overrides(&[("quit", &["j"])])).unwrap_err();
        assert!(
            e.iter()
                .any(|p| p.action == "quit" && p.problem.contains("down")),
            "{e:?}"
        );
        // an unknown name lists the names there are
        let e = Keymap::new(&overrides(&[("paws", &["x"])])).unwrap_err();
        assert_eq!(e[0].action, "paws");
        assert!(
            e[0].problem.contains("unknown action") && e[0].problem.contains("pause, "),
            "{e:?}"
        );
        // a key that does not parse lists the key names there are
        let e = Keymap::new(&overrides(&[("pause", &["Hyper-x"])])).unwrap_err();
        assert_eq!(e[0].action, "pause");
        assert!(
            e[0].problem.contains("Hyper-x") && e[0].problem.contains("PgDn"),
            "{e:?}"
        );
        // The same key in two contexts that are never active together is fine.
        assert!(Keymap::new(&overrides(&[("graph_window", &["x"]), ("fold", &["x"])])).is_ok());
    }

    #[test]
    fn config_entries_are_checked_and_problems_name_their_line() {
        let lined = |pairs: &[(&str, &[&str], usize)]| -> BTreeMap<String, Lined<Vec<String>>> {
            pairs
                .iter()
                .map(|(name, keys, line)| {
                    let value = keys.iter().map(|k| (*k).to_owned()).collect();
                    ((*name).to_owned(), Lined { value, line: *line })
                })
                .collect()
        };
        let map = Keymap::from_config(&lined(&[("pause", &["x"], 7)])).unwrap();
        assert_eq!(map.hint(Action::TogglePause), "x");
        let e = Keymap::from_config(&lined(&[("paws", &["x"], 3), ("recheck", &["p"], 9)]))
            .unwrap_err();
        let unknown = e.iter().find(|p| p.key == "paws").expect("unknown action");
        assert_eq!((unknown.line, unknown.table), (3, "keys"));
        // `p` stays pause's: the conflict is told at the line that rebinds recheck
        let clash = e.iter().find(|p| p.key == "recheck").expect("conflict");
        assert_eq!(clash.line, 9);
        assert!(clash.problem.contains("pause"), "{clash:?}");
        assert!(
            clash
                .to_string()
                .starts_with("line 9: [keys] recheck: \"p\""),
            "{clash}"
        );
    }
}
