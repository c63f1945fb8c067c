//! The one action registry: every user action with its context, default keys and
//! description. The key dispatcher ([`super::keymap::lookup`]) and the help overlay both read
//! [`ACTIONS`], so the help window never lies; a test checks that no key is bound twice in a
//! context.
//!
//! No action is bound only to Ctrl-S or Ctrl-Q: terminals may take those for XON/XOFF flow
//! control.

use crossterm::event::KeyCode;

use super::keymap::KeyBinding;

/// Where an action applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Context {
    /// Everywhere; a more specific context is looked up first.
    Global,
    /// The torrent list (the main screen, no popup open).
    List,
    /// While the help overlay is open.
    Help,
}

impl Context {
    /// Every context, in the order the help overlay lists them.
    pub const ALL: [Context; 3] = [Context::Global, Context::List, Context::Help];

    /// Heading for the help overlay, e.g. `"Torrent list"`.
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::List => "Torrent list",
            Context::Help => "Help window",
        }
    }
}

/// A user action, independent of the key that triggers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Select the next torrent.
    MoveDown,
    /// Select the previous torrent.
    MoveUp,
    /// Select the first torrent.
    First,
    /// Select the last torrent.
    Last,
    /// Pause the selected torrent if it runs, resume it if paused.
    TogglePause,
    /// Open or close the help overlay.
    ToggleHelp,
    /// Close the help overlay.
    CloseHelp,
    /// Leave: shut the engine down (trackers get `stopped`) and restore the terminal.
    Quit,
}

/// One registry entry.
#[derive(Debug, Clone, Copy)]
pub struct ActionSpec {
    /// The action dispatched.
    pub action: Action,
    /// Stable short name (for a future keymap file), e.g. `"move_down"`.
    pub name: &'static str,
    /// Where the keys apply.
    pub context: Context,
    /// Default keys, the first one shown first in the help.
    pub keys: &'static [KeyBinding],
    /// One-line description for the help overlay.
    pub description: &'static str,
}

/// The registry: every action, its context, default keys and description.
pub static ACTIONS: &[ActionSpec] = &[
    ActionSpec {
        action: Action::ToggleHelp,
        name: "help",
        context: Context::Global,
        keys: &[KeyBinding::char('?')],
        description: "Show or hide this help",
    },
    ActionSpec {
        action: Action::Quit,
        name: "quit",
        context: Context::Global,
        keys: &[KeyBinding::char('q'), KeyBinding::ctrl('c')],
        description: "Quit (tells trackers we stopped)",
    },
    ActionSpec {
        action: Action::MoveDown,
        name: "move_down",
        context: Context::List,
        keys: &[KeyBinding::char('j'), KeyBinding::key(KeyCode::Down)],
        description: "Select the next torrent",
    },
    ActionSpec {
        action: Action::MoveUp,
        name: "move_up",
        context: Context::List,
        keys: &[KeyBinding::char('k'), KeyBinding::key(KeyCode::Up)],
        description: "Select the previous torrent",
    },
    ActionSpec {
        action: Action::First,
        name: "first",
        context: Context::List,
        keys: &[KeyBinding::char('g'), KeyBinding::key(KeyCode::Home)],
        description: "Select the first torrent",
    },
    ActionSpec {
        action: Action::Last,
        name: "last",
        context: Context::List,
        keys: &[KeyBinding::char('G'), KeyBinding::key(KeyCode::End)],
        description: "Select the last torrent",
    },
    ActionSpec {
        action: Action::TogglePause,
        name: "toggle_pause",
        context: Context::List,
        keys: &[KeyBinding::char('p')],
        description: "Pause or resume the selected torrent",
    },
    ActionSpec {
        action: Action::CloseHelp,
        name: "close_help",
        context: Context::Help,
        keys: &[KeyBinding::key(KeyCode::Esc)],
        description: "Close this help",
    },
];

/// The registry entries of `context`, in registry order.
pub fn in_context(context: Context) -> impl Iterator<Item = &'static ActionSpec> {
    ACTIONS.iter().filter(move |spec| spec.context == context)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use crossterm::event::KeyModifiers;

    use super::*;

    #[test]
    fn no_key_is_bound_twice_where_it_is_active() {
        // Global bindings are active in every context, so they share each context's key space.
        for context in Context::ALL {
            let mut seen: HashMap<KeyBinding, &str> = HashMap::new();
            let active = ACTIONS
                .iter()
                .filter(|s| s.context == context || s.context == Context::Global);
            for spec in active {
                for key in spec.keys {
                    if let Some(other) = seen.insert(*key, spec.name) {
                        panic!(
                            "{key} bound to both {other} and {} in {context:?}",
                            spec.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_action_has_one_entry_with_keys_and_text() {
        let mut names = HashMap::new();
        for spec in ACTIONS {
            assert!(!spec.keys.is_empty(), "{} has no key", spec.name);
            assert!(
                !spec.description.is_empty(),
                "{} has no description",
                spec.name
            );
            assert!(
                names.insert(spec.name, spec.action).is_none(),
                "duplicate name {}",
                spec.name
            );
        }
        let actions: Vec<Action> = ACTIONS.iter().map(|s| s.action).collect();
        for action in [
            Action::MoveDown,
            Action::MoveUp,
            Action::First,
            Action::Last,
            Action::TogglePause,
            Action::ToggleHelp,
            Action::CloseHelp,
            Action::Quit,
        ] {
            assert_eq!(
                actions.iter().filter(|a| **a == action).count(),
                1,
                "{action:?} must have exactly one registry entry"
            );
        }
    }

    #[test]
    fn nothing_depends_on_flow_control_keys_alone() {
        let xon_xoff = [KeyBinding::ctrl('s'), KeyBinding::ctrl('q')];
        for spec in ACTIONS {
            assert!(
                spec.keys.iter().any(|k| !xon_xoff.contains(k)),
                "{} is reachable only through Ctrl-S/Ctrl-Q",
                spec.name
            );
        }
        // Keys are stored normalised: no Shift on character keys (see KeyBinding::from_event).
        for spec in ACTIONS {
            for key in spec.keys {
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
}
