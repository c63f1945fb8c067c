//! The one action registry: every user action with the contexts it applies in, its default
//! keys and its description. The key dispatcher ([`super::keymap::Keymap`]), the help overlay
//! and the `[keys]` section of the config file all read [`ACTIONS`], so the help window never
//! lies; a test checks that no key is bound twice where it is active.
//!
//! No action is bound only to Ctrl-S or Ctrl-Q: terminals may take those for XON/XOFF flow
//! control.

use crossterm::event::KeyCode;

use super::key::KeyBinding;

/// Where an action applies. A context also sees the actions of its parents
/// ([`Context::parents`]); the most specific binding wins, and the registry test makes sure
/// a key never means two things in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    /// Every screen (not inside the help window, a dialog or the search line).
    Global,
    /// The torrent list and the detail view: actions on the selected (or marked) torrents.
    Torrents,
    /// The torrent list (main screen).
    List,
    /// The detail view of one torrent, any tab.
    Detail,
    /// The Files tab of the detail view.
    Files,
    /// The Peers tab of the detail view.
    Peers,
    /// The Speed tab of the detail view.
    Speed,
    /// The session log screen.
    Log,
    /// The help window.
    Help,
    /// The search line at the bottom of the list (typing edits the query).
    Search,
    /// A yes/no dialog (remove, delete, quit).
    Confirm,
    /// A dialog with fields (add, limits, move, add peer); typing edits the focused field.
    Form,
}

impl Context {
    /// Every context, in the order the help overlay lists them.
    pub const ALL: [Context; 12] = [
        Context::Global,
        Context::Torrents,
        Context::List,
        Context::Detail,
        Context::Files,
        Context::Peers,
        Context::Speed,
        Context::Log,
        Context::Help,
        Context::Search,
        Context::Confirm,
        Context::Form,
    ];

    /// Heading for the help overlay, e.g. `"Torrent list"`.
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Torrents => "Selected torrent (list and detail; marked torrents if any)",
            Context::List => "Torrent list",
            Context::Detail => "Detail view",
            Context::Files => "Files tab",
            Context::Peers => "Peers tab",
            Context::Speed => "Speed tab",
            Context::Log => "Session log",
            Context::Help => "Help window",
            Context::Search => "Search line",
            Context::Confirm => "Yes/no dialogs",
            Context::Form => "Dialogs with fields",
        }
    }

    /// The contexts whose bindings are also active here, most specific first.
    pub fn parents(self) -> &'static [Context] {
        match self {
            Context::Global => &[],
            Context::Torrents | Context::Log => &[Context::Global],
            Context::List | Context::Detail => &[Context::Torrents, Context::Global],
            Context::Files | Context::Peers | Context::Speed => {
                &[Context::Detail, Context::Torrents, Context::Global]
            }
            // Popups and text entry see only their own keys: `q` there never quits.
            Context::Help | Context::Search | Context::Confirm | Context::Form => &[],
        }
    }

    /// This context followed by its parents: every context whose keys are active here.
    pub fn chain(self) -> impl Iterator<Item = Context> {
        std::iter::once(self).chain(self.parents().iter().copied())
    }
}

/// A user action, independent of the key that triggers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Open or close the help window.
    Help,
    /// Quit (asks first while torrents are active); attached to a daemon, leave it
    /// running.
    Quit,
    /// Quit and stop the daemon this TUI is attached to (asks first); in-process, quit.
    QuitDaemon,
    /// Next row / scroll down.
    Down,
    /// Previous row / scroll up.
    Up,
    /// One page down.
    PageDown,
    /// One page up.
    PageUp,
    /// Half a page down.
    HalfPageDown,
    /// Half a page up.
    HalfPageUp,
    /// First row.
    Top,
    /// Last row.
    Bottom,
    /// Open the detail view of the selected torrent.
    OpenDetail,
    /// Mark or unmark the row under the cursor (torrents or files).
    ToggleMark,
    /// Clear the marks, the search and the state filter.
    ClearMarks,
    /// Sort by the next column.
    SortNext,
    /// Reverse the sort order.
    SortReverse,
    /// Show the next state filter.
    FilterNext,
    /// Show the previous state filter.
    FilterPrev,
    /// Start an incremental search.
    Search,
    /// Open the session log.
    SessionLog,
    /// Open the add-torrent dialog.
    Add,
    /// Open the create-torrent dialog (a torrent of a file or folder, seeded at once).
    Create,
    /// Pause every torrent.
    PauseAll,
    /// Resume every torrent.
    ResumeAll,
    /// Pause the selected torrent if it runs, resume it if paused or in error.
    TogglePause,
    /// Hash the data on disk again.
    Recheck,
    /// Announce to the trackers now.
    Reannounce,
    /// Remove (data kept), after confirmation.
    Remove,
    /// Remove and delete the data, after confirmation.
    RemoveDelete,
    /// Open the rate limits dialog.
    Limits,
    /// Open the seeding goals dialog (ratio, seeding time, inactive time).
    Goals,
    /// Switch alternative ("turtle") speed limits on or off.
    AltSpeed,
    /// Move the targets one place up in the queue.
    QueueUp,
    /// Move the targets one place down in the queue.
    QueueDown,
    /// Move the targets to the top of the queue.
    QueueTop,
    /// Move the targets to the bottom of the queue.
    QueueBottom,
    /// Force start the targets (they run whatever the queue says), or give them back.
    ForceStart,
    /// Open the move-storage dialog.
    MoveStorage,
    /// Back to the previous screen.
    Back,
    /// Next tab.
    NextTab,
    /// Previous tab.
    PrevTab,
    /// Fold or unfold the folder under the cursor.
    ToggleFold,
    /// Raise the priority of the file/folder under the cursor (or the marked files).
    PriorityUp,
    /// Lower the priority (the lowest is skip: not downloaded).
    PriorityDown,
    /// Next graph window (1 min, 10 min, 1 h).
    SpeedWindow,
    /// Open the add-peer dialog (a peer address to dial, kept across restarts).
    AddPeer,
    /// Close the help window.
    CloseHelp,
    /// Keep the search and go back to the list.
    SearchAccept,
    /// Clear the search and go back to the list.
    SearchCancel,
    /// Yes.
    Confirm,
    /// No (yes/no dialogs).
    Deny,
    /// Close a dialog with fields without applying it.
    Cancel,
    /// Submit the dialog.
    Submit,
    /// Complete the path, or go to the next field.
    NextField,
    /// Previous field.
    PrevField,
    /// Next field without completing.
    FieldDown,
    /// Show the next category filter (all, each category, none).
    CategoryFilter,
    /// Show the next tag filter (all, each tag, none).
    TagFilter,
    /// Open the category dialog for the marked (or selected) torrents.
    Category,
    /// Open the tags dialog for the marked (or selected) torrents.
    Tags,
    /// Open the find/replace dialog for the tracker URLs of the marked or selected
    /// torrents.
    EditTrackers,
    /// Sequential download on or off for the targets (pieces in order, for streaming).
    Sequential,
    /// First and last pieces of each file first, on or off for the targets (previews).
    FirstLast,
}

/// One registry entry.
#[derive(Debug, Clone, Copy)]
pub struct ActionSpec {
    /// The action dispatched.
    pub action: Action,
    /// Stable short name, used as the key of the config file's `[keys]` section.
    pub name: &'static str,
    /// Where the keys apply.
    pub contexts: &'static [Context],
    /// Default keys, the first one shown first in the help.
    pub keys: &'static [KeyBinding],
    /// One-line description for the help overlay.
    pub description: &'static str,
}

use Context as C;
use KeyBinding as K;

const NAV: &[Context] = &[C::List, C::Detail, C::Log, C::Help];

macro_rules! spec {
    ($action:ident, $name:literal, $ctx:expr, [$($key:expr),* $(,)?], $desc:literal) => {
        ActionSpec {
            action: Action::$action,
            name: $name,
            contexts: $ctx,
            keys: &[$($key),*],
            description: $desc,
        }
    };
}

/// The registry: every action, its contexts, default keys and description.
pub static ACTIONS: &[ActionSpec] = &[
    spec!(
        Help,
        "help",
        &[C::Global, C::Help],
        [K::char('?')],
        "Show or hide this help"
    ),
    spec!(
        Quit,
        "quit",
        &[C::Global],
        [K::char('q'), K::ctrl('c')],
        "Quit (asks first while torrents are active; trackers are told)"
    ),
    spec!(
        QuitDaemon,
        "quit_daemon",
        &[C::Global],
        [K::char('Q')],
        "Attached to a daemon: quit and stop the daemon too (asks first)"
    ),
    spec!(
        Down,
        "down",
        NAV,
        [K::char('j'), K::key(KeyCode::Down)],
        "Next row / scroll down"
    ),
    spec!(
        Up,
        "up",
        NAV,
        [K::char('k'), K::key(KeyCode::Up)],
        "Previous row / scroll up"
    ),
    spec!(
        PageDown,
        "page_down",
        NAV,
        [K::key(KeyCode::PageDown)],
        "One page down"
    ),
    spec!(
        PageUp,
        "page_up",
        NAV,
        [K::key(KeyCode::PageUp)],
        "One page up"
    ),
    spec!(
        HalfPageDown,
        "half_page_down",
        NAV,
        [K::ctrl('d')],
        "Half a page down"
    ),
    spec!(
        HalfPageUp,
        "half_page_up",
        NAV,
        [K::ctrl('u')],
        "Half a page up"
    ),
    spec!(
        Top,
        "top",
        NAV,
        [K::char('g'), K::key(KeyCode::Home)],
        "First row"
    ),
    spec!(
        Bottom,
        "bottom",
        NAV,
        [K::char('G'), K::key(KeyCode::End)],
        "Last row"
    ),
    spec!(
        OpenDetail,
        "open",
        &[C::List],
        [K::key(KeyCode::Enter), K::char('l'), K::key(KeyCode::Right)],
        "Open the detail view of the selected torrent"
    ),
    spec!(
        ToggleMark,
        "mark",
        &[C::List, C::Files],
        [K::char(' ')],
        "Mark or unmark the row (bulk actions apply to marked rows)"
    ),
    spec!(
        ClearMarks,
        "clear",
        &[C::List],
        [K::key(KeyCode::Esc)],
        "Clear the marks, the search and the filters"
    ),
    spec!(
        SortNext,
        "sort",
        &[C::List],
        [K::char('s')],
        "Sort by the next column"
    ),
    spec!(
        SortReverse,
        "sort_reverse",
        &[C::List],
        [K::char('S')],
        "Reverse the sort order"
    ),
    spec!(
        FilterNext,
        "filter",
        &[C::List],
        [K::char('f')],
        "Filter: all, downloading, seeding, paused, queued, checking, error"
    ),
    spec!(
        FilterPrev,
        "filter_back",
        &[C::List],
        [K::char('F')],
        "Previous filter"
    ),
    spec!(
        Search,
        "search",
        &[C::List],
        [K::char('/')],
        "Search names (case-insensitive)"
    ),
    spec!(
        SessionLog,
        "log",
        &[C::Torrents],
        [K::char('e')],
        "Session log (engine events)"
    ),
    spec!(
        Add,
        "add",
        &[C::Torrents],
        [K::char('a')],
        "Add torrents (file, glob, magnet or URL)"
    ),
    spec!(
        Create,
        "create",
        &[C::Torrents],
        [K::char('N')],
        "New torrent of a file or folder, seeded at once"
    ),
    spec!(
        PauseAll,
        "pause_all",
        &[C::Torrents],
        [K::char('P')],
        "Pause every torrent"
    ),
    spec!(
        ResumeAll,
        "resume_all",
        &[C::Torrents],
        [K::char('U')],
        "Resume every torrent"
    ),
    spec!(
        TogglePause,
        "pause",
        &[C::Torrents],
        [K::char('p')],
        "Pause or resume (an errored torrent resumes)"
    ),
    spec!(
        Recheck,
        "recheck",
        &[C::Torrents],
        [K::char('c')],
        "Recheck the data on disk"
    ),
    spec!(
        Reannounce,
        "reannounce",
        &[C::Torrents],
        [K::char('r')],
        "Re-announce to the trackers now"
    ),
    spec!(
        Remove,
        "remove",
        &[C::Torrents],
        [K::char('d'), K::key(KeyCode::Delete)],
        "Remove (asks first; the data is kept)"
    ),
    spec!(
        RemoveDelete,
        "remove_delete",
        &[C::Torrents],
        [K::char('D')],
        "Remove and delete the data (asks first)"
    ),
    spec!(
        Limits,
        "limits",
        &[C::Torrents],
        [K::char('L')],
        "Rate limits of the session and the torrent (1M, 500K, 0 = none)"
    ),
    spec!(
        Goals,
        "goals",
        &[C::Torrents],
        [K::char('R')],
        "Seeding goals: stop at ratio 2.0, after 7d, 12h idle (none, default)"
    ),
    spec!(
        AltSpeed,
        "alt_speed",
        &[C::Torrents],
        [K::char('t')],
        "Alternative (turtle) speed limits on/off: alt_download/upload_rate_limit"
    ),
    spec!(
        QueueUp,
        "queue_up",
        &[C::Torrents],
        [K::char('[')],
        "Queue: one place up (runs sooner; [queue] enabled = true)"
    ),
    spec!(
        QueueDown,
        "queue_down",
        &[C::Torrents],
        [K::char(']')],
        "Queue: one place down"
    ),
    spec!(
        QueueTop,
        "queue_top",
        &[C::Torrents],
        [K::char('{')],
        "Queue: to the top"
    ),
    spec!(
        QueueBottom,
        "queue_bottom",
        &[C::Torrents],
        [K::char('}')],
        "Queue: to the bottom"
    ),
    spec!(
        ForceStart,
        "force_start",
        &[C::Torrents],
        [K::char('!')],
        "Force start on/off: runs whatever the queue says"
    ),
    spec!(
        Sequential,
        "sequential",
        &[C::Torrents],
        [K::char('z')],
        "Sequential download on/off: pieces in order (streaming)"
    ),
    spec!(
        FirstLast,
        "first_last",
        &[C::Torrents],
        [K::char('Z')],
        "First and last pieces of each file first on/off (previews)"
    ),
    spec!(
        MoveStorage,
        "move",
        &[C::Torrents],
        [K::char('m')],
        "Move the data to another folder"
    ),
    spec!(
        EditTrackers,
        "edit_trackers",
        &[C::Torrents],
        [K::char('E')],
        "Find/replace in tracker URLs of the marked torrents (passkey, host)"
    ),
    spec!(
        Back,
        "back",
        &[C::Detail, C::Log],
        [K::key(KeyCode::Esc), K::key(KeyCode::Backspace)],
        "Back to the torrent list"
    ),
    spec!(
        NextTab,
        "next_tab",
        &[C::Detail],
        [K::key(KeyCode::Tab), K::char('l'), K::key(KeyCode::Right)],
        "Next tab"
    ),
    spec!(
        PrevTab,
        "prev_tab",
        &[C::Detail],
        [
            K::key(KeyCode::BackTab),
            K::char('h'),
            K::key(KeyCode::Left)
        ],
        "Previous tab"
    ),
    spec!(
        ToggleFold,
        "fold",
        &[C::Files],
        [K::key(KeyCode::Enter), K::char('o')],
        "Fold or unfold the folder"
    ),
    spec!(
        PriorityUp,
        "priority_up",
        &[C::Files],
        [K::char('+'), K::char('=')],
        "Raise the priority (file, folder or marked files)"
    ),
    spec!(
        PriorityDown,
        "priority_down",
        &[C::Files],
        [K::char('-')],
        "Lower the priority; the lowest, skip, is not downloaded"
    ),
    spec!(
        SpeedWindow,
        "graph_window",
        &[C::Speed],
        [K::char('w')],
        "Graph window: 1 min, 10 min, 1 h"
    ),
    spec!(
        AddPeer,
        "add_peer",
        &[C::Peers],
        [K::char('A')],
        "Add a peer by address (1.2.3.4:6881, [::1]:6881); kept across restarts"
    ),
    spec!(
        CloseHelp,
        "close_help",
        &[C::Help],
        [K::key(KeyCode::Esc), K::char('q'), K::ctrl('c')],
        "Close this help"
    ),
    spec!(
        SearchAccept,
        "search_accept",
        &[C::Search],
        [K::key(KeyCode::Enter)],
        "Keep the search, back to the list"
    ),
    spec!(
        SearchCancel,
        "search_cancel",
        &[C::Search],
        [K::key(KeyCode::Esc), K::ctrl('c')],
        "Clear the search"
    ),
    spec!(
        Confirm,
        "yes",
        &[C::Confirm],
        [K::char('y'), K::key(KeyCode::Enter)],
        "Yes, do it"
    ),
    spec!(
        Deny,
        "no",
        &[C::Confirm],
        [
            K::char('n'),
            K::key(KeyCode::Esc),
            K::char('q'),
            K::ctrl('c')
        ],
        "No, close the dialog"
    ),
    spec!(
        Cancel,
        "cancel",
        &[C::Form],
        [K::key(KeyCode::Esc), K::ctrl('c')],
        "Cancel the dialog (letters type into the field)"
    ),
    spec!(
        Submit,
        "submit",
        &[C::Form],
        [K::key(KeyCode::Enter)],
        "Apply the dialog"
    ),
    spec!(
        NextField,
        "next_field",
        &[C::Form],
        [K::key(KeyCode::Tab)],
        "Complete the path, or go to the next field"
    ),
    spec!(
        FieldDown,
        "field_down",
        &[C::Form],
        [K::key(KeyCode::Down)],
        "Next field"
    ),
    spec!(
        PrevField,
        "prev_field",
        &[C::Form],
        [K::key(KeyCode::BackTab), K::key(KeyCode::Up)],
        "Previous field"
    ),
    spec!(
        CategoryFilter,
        "category_filter",
        &[C::List],
        [K::char('v')],
        "Category filter: all, each category (with its subcategories), none"
    ),
    spec!(
        TagFilter,
        "tag_filter",
        &[C::List],
        [K::char('V')],
        "Tag filter: all, each tag, none"
    ),
    spec!(
        Category,
        "category",
        &[C::Torrents],
        [K::char('C')],
        "Category: pick one (Tab), type a new one (+ save path), or none"
    ),
    spec!(
        Tags,
        "tags",
        &[C::Torrents],
        [K::char('T')],
        "Tags: \"a, b\" adds, \"-a\" removes (Tab completes)"
    ),
];

/// The registry entry named `name` (the `[keys]` config key), if any.
pub fn by_name(name: &str) -> Option<&'static ActionSpec> {
    ACTIONS.iter().find(|spec| spec.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_context_sees_itself_first_and_popups_see_only_themselves() {
        for context in Context::ALL {
            let chain: Vec<Context> = context.chain().collect();
            assert_eq!(chain[0], context);
            assert!(!context.parents().contains(&context), "{context:?}");
        }
        for popup in [
            Context::Help,
            Context::Search,
            Context::Confirm,
            Context::Form,
        ] {
            assert_eq!(popup.chain().count(), 1, "{popup:?} must not see Global");
        }
        let files: Vec<Context> = Context::Files.chain().collect();
        assert_eq!(
            files,
            [
                Context::Files,
                Context::Detail,
                Context::Torrents,
                Context::Global
            ]
        );
    }

    #[test]
    fn names_are_unique_and_found_by_name() {
        let mut names: Vec<&str> = ACTIONS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a config key names two actions");
        let spec = by_name("quit").expect("quit is in the registry");
        assert_eq!(spec.action, Action::Quit);
        assert!(spec.contexts.contains(&Context::Global));
        assert!(by_name("Quit").is_none(), "names are case-sensitive");
        assert!(by_name("launch_missiles").is_none());
    }

    #[test]
    fn every_context_has_a_distinct_help_heading() {
        let mut titles: Vec<&str> = Context::ALL.iter().map(|c| c.title()).collect();
        titles.sort_unstable();
        titles.dedup();
        assert_eq!(titles.len(), Context::ALL.len());
    }
}
