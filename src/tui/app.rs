//! The UI state machine: screens, tabs, selection, marks, the list view, dialogs, help, the
//! event log and the speed history. Pure data, testable without a terminal: feed it
//! snapshots, engine events and key events, take the commands it wants sent
//! ([`App::handle_key`], [`App::take_commands`]) and draw it on any ratatui backend (tests use
//! `TestBackend`).

use std::cell::Cell;
use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Frame;

use crate::api::{
    AddError, AddRequest, AddSource, Command, EngineEvent, EventLevel, FilePriority, Snapshot,
    TorrentDetail, TorrentId, TorrentRow, TorrentState,
};
use crate::metainfo::magnet::{Magnet, is_magnet};
use crate::units::parse_rate;

use super::action::{Action, Context};
use super::dialog::{Confirm, ConfirmKind, Dialog, Field, Form, FormKind};
use super::format;
use super::history::{History, Window};
use super::input::{TextField, expand_home};
use super::keymap::Keymap;
use super::list::{self, StateFilter, View};
use super::theme::Theme;
use super::widgets;
use super::widgets::files::FileTree;
use crate::units;

/// Most engine events kept for the log views.
pub const LOG_CAPACITY: usize = 2000;

/// The screen shown under any popup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The torrent list.
    List,
    /// One torrent's detail view.
    Detail,
    /// Every engine event.
    Log,
}

/// A tab of the detail view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    /// Info hash, paths, sizes, dates, error and what to do.
    General,
    /// Connected peers.
    Peers,
    /// The file tree with priorities.
    Files,
    /// Trackers and their state.
    Trackers,
    /// The piece map.
    Pieces,
    /// Speed graphs.
    Speed,
    /// This torrent's events.
    Log,
}

impl Tab {
    /// Every tab, in order.
    pub const ALL: [Tab; 7] = [
        Tab::General,
        Tab::Peers,
        Tab::Files,
        Tab::Trackers,
        Tab::Pieces,
        Tab::Speed,
        Tab::Log,
    ];

    /// Tab title.
    pub fn title(self) -> &'static str {
        match self {
            Tab::General => "General",
            Tab::Peers => "Peers",
            Tab::Files => "Files",
            Tab::Trackers => "Trackers",
            Tab::Pieces => "Pieces",
            Tab::Speed => "Speed",
            Tab::Log => "Log",
        }
    }

    fn step(self, forward: bool) -> Tab {
        let n = Self::ALL.len();
        let i = Self::ALL.iter().position(|t| *t == self).unwrap_or(0);
        Self::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// How a status-line message reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    /// A confirmation ("added …").
    Info,
    /// Something did not work.
    Error,
}

/// Settings of the UI that come from the config and the command line.
#[derive(Debug, Clone)]
pub struct UiOptions {
    /// Keys in effect.
    pub keymap: Keymap,
    /// Colours and symbols.
    pub theme: Theme,
    /// Added torrents keep seeding once complete.
    pub seed_after_download: bool,
    /// The log file, named in messages that say "see the log".
    pub log_path: Option<PathBuf>,
    /// Mouse events are captured.
    pub mouse: bool,
    /// `q` asks first while torrents are active (config `confirm_quit`).
    pub confirm_quit: bool,
}

impl Default for UiOptions {
    fn default() -> Self {
        UiOptions {
            keymap: Keymap::default(),
            theme: Theme::default(),
            seed_after_download: true,
            log_path: None,
            mouse: false,
            confirm_quit: true,
        }
    }
}

/// Scroll state of one scrollable area: the cursor row and the first visible row (set while
/// drawing, when the height is known).
#[derive(Debug, Default)]
pub struct Scroll {
    /// The row under the cursor.
    pub cursor: usize,
    /// First visible row.
    pub offset: Cell<usize>,
    /// Visible rows at the last draw (for paging).
    pub height: Cell<usize>,
    /// Width of the area at the last draw (the help wraps to it).
    pub cursor_width: Cell<usize>,
}

impl Scroll {
    fn apply(&mut self, action: Action, len: usize) -> bool {
        let page = self.height.get().max(1);
        let last = len.saturating_sub(1);
        let new = match action {
            Action::Down => self.cursor.saturating_add(1).min(last),
            Action::Up => self.cursor.saturating_sub(1),
            Action::PageDown => self.cursor.saturating_add(page).min(last),
            Action::PageUp => self.cursor.saturating_sub(page),
            Action::HalfPageDown => self.cursor.saturating_add(page.div_ceil(2)).min(last),
            Action::HalfPageUp => self.cursor.saturating_sub(page.div_ceil(2)),
            Action::Top => 0,
            Action::Bottom => last,
            _ => return false,
        };
        self.cursor = new;
        true
    }

    /// First row to show so the cursor is visible, moving as little as possible.
    pub fn window(&self, len: usize, visible: usize) -> usize {
        let first = widgets::scroll_offset(self.offset.get(), Some(self.cursor), len, visible);
        self.offset.set(first);
        self.height.set(visible);
        first
    }
}

/// State of the terminal UI between frames.
#[derive(Debug)]
pub struct App {
    opts: UiOptions,
    snapshot: Arc<Snapshot>,
    screen: Screen,
    tab: Tab,
    /// Filter, search and sort of the list.
    view: View,
    cache: list::Cache,
    /// Indices into `snapshot.rows` shown, in order (from `cache`).
    index: Vec<usize>,
    /// Torrents per state filter in the current snapshot.
    counts: [usize; 6],
    /// Selected torrent; `None` only when the list shows nothing.
    selected: Option<TorrentId>,
    /// Position of the selection in `index`.
    selected_pos: usize,
    /// First visible list row and visible rows (set while drawing).
    list_scroll: Scroll,
    /// Screen row of the first list row at the last draw (mouse clicks).
    list_top: Cell<u16>,
    /// Marked torrents (bulk actions).
    marks: HashSet<TorrentId>,
    /// The search line is being edited.
    searching: bool,
    search: TextField,
    /// Scroll state of the detail tabs and the session log.
    peers_scroll: Scroll,
    files_scroll: Scroll,
    trackers_scroll: Scroll,
    log_scroll: Scroll,
    tab_log_scroll: Scroll,
    general_scroll: Scroll,
    /// File tree of the focused torrent, folded folders, marked files.
    files: FileTree,
    /// Graph window.
    window: Window,
    /// Help window open, and its scroll.
    help: Option<Scroll>,
    dialog: Option<Dialog>,
    quit: bool,
    notice: Option<(String, NoticeLevel)>,
    /// Engine events, oldest first, at most [`LOG_CAPACITY`].
    events: VecDeque<EngineEvent>,
    last_event_seq: Option<u64>,
    events_lost: u64,
    history: History,
    /// Seconds since the UI started, at the last sample (what the graphs are drawn at).
    now_secs: u64,
    started: Instant,
    /// A torrent to select once a snapshot shows it (just added).
    pending_select: Option<TorrentId>,
    /// The torrent the engine was last asked to focus.
    focused: Option<TorrentId>,
    outbox: Vec<Command>,
}

impl App {
    /// A UI showing `snapshot` with the default options, the first torrent selected.
    pub fn new(snapshot: Arc<Snapshot>) -> Self {
        App::with_options(snapshot, UiOptions::default())
    }

    /// A UI showing `snapshot` with `opts`.
    pub fn with_options(snapshot: Arc<Snapshot>, opts: UiOptions) -> Self {
        let mut app = App {
            opts,
            snapshot: Arc::new(Snapshot::default()),
            screen: Screen::List,
            tab: Tab::General,
            view: View::default(),
            cache: list::Cache::default(),
            index: Vec::new(),
            counts: [0; 6],
            selected: None,
            selected_pos: 0,
            list_scroll: Scroll::default(),
            list_top: Cell::new(0),
            marks: HashSet::new(),
            searching: false,
            search: TextField::default(),
            peers_scroll: Scroll::default(),
            files_scroll: Scroll::default(),
            trackers_scroll: Scroll::default(),
            log_scroll: Scroll::default(),
            tab_log_scroll: Scroll::default(),
            general_scroll: Scroll::default(),
            files: FileTree::default(),
            window: Window::default(),
            help: None,
            dialog: None,
            quit: false,
            notice: None,
            events: VecDeque::new(),
            last_event_seq: None,
            events_lost: 0,
            history: History::default(),
            now_secs: 0,
            started: Instant::now(),
            pending_select: None,
            focused: None,
            outbox: Vec::new(),
        };
        app.set_snapshot_at(snapshot, 0);
        app
    }

    // ----- inputs -----

    /// Replaces the snapshot shown (sampled for the graphs at the current time) and keeps
    /// the selection on the same torrent. Returns whether anything visible may have changed
    /// (`false` for the same `Arc` or an equal snapshot), so the caller can skip a redraw.
    pub fn set_snapshot(&mut self, snapshot: Arc<Snapshot>) -> bool {
        let now = self.started.elapsed().as_secs();
        self.set_snapshot_at(snapshot, now)
    }

    /// [`App::set_snapshot`] at `now_secs` seconds of UI time (tests drive the graphs'
    /// clock with this).
    pub fn set_snapshot_at(&mut self, snapshot: Arc<Snapshot>, now_secs: u64) -> bool {
        // Derived PartialEq compares `seq` first, so differing snapshots are cheap to tell.
        let changed = !Arc::ptr_eq(&self.snapshot, &snapshot) && *self.snapshot != *snapshot;
        let moved = now_secs != self.now_secs;
        self.now_secs = now_secs.max(self.now_secs);
        self.history.sample(&snapshot, self.now_secs);
        if !Arc::ptr_eq(&self.snapshot, &snapshot) && self.snapshot.seq == snapshot.seq {
            self.cache.invalidate();
        }
        self.snapshot = snapshot;
        self.counts = [0; 6];
        self.counts[0] = self.snapshot.rows.len();
        for row in self.snapshot.rows.iter() {
            use TorrentState as S;
            let bucket = match row.state {
                S::Downloading | S::FetchingMetadata => 1,
                S::Seeding | S::Completed => 2,
                S::Paused => 3,
                S::Checking | S::Queued | S::Moving => 4,
                S::Error => 5,
            };
            self.counts[bucket] += 1;
        }
        self.refresh_index();
        if let Some(id) = self.pending_select
            && self.snapshot.row(id).is_some()
        {
            self.pending_select = None;
            if !self.index.iter().any(|&i| self.snapshot.rows[i].id == id) {
                // the new torrent is hidden by the filter or search: show everything
                self.view.filter = StateFilter::All;
                self.view.query.clear();
                self.search = TextField::default();
                self.refresh_index();
            }
            self.selected = Some(id);
            self.reconcile_selection();
        }
        if !self.marks.is_empty() {
            let ids: HashSet<TorrentId> = self.snapshot.rows.iter().map(|r| r.id).collect();
            self.marks.retain(|id| ids.contains(id));
        }
        if let Some(detail) = self.detail() {
            let detail = detail.clone();
            self.files.update(&detail);
        }
        if self.screen == Screen::Detail && self.selected.is_none() {
            self.close_detail();
        }
        changed || (moved && self.screen == Screen::Detail && self.tab == Tab::Speed)
    }

    /// Adds engine events (from the event stream or the history sent at start); events
    /// already seen (by `seq`) are skipped, gaps are counted as lost. Returns whether any
    /// was new.
    pub fn push_events(&mut self, events: impl IntoIterator<Item = EngineEvent>) -> bool {
        let mut any = false;
        for event in events {
            if self.last_event_seq.is_some_and(|s| event.seq <= s) {
                continue;
            }
            if let Some(last) = self.last_event_seq {
                self.events_lost += event.seq.saturating_sub(last + 1);
            }
            self.last_event_seq = Some(event.seq);
            if event.level == EventLevel::Error && self.notice.is_none() {
                let name = event
                    .torrent
                    .and_then(|id| self.snapshot.row(id))
                    .map(|r| format!("{}: ", r.name))
                    .unwrap_or_default();
                let key = self.opts.keymap.hint(Action::SessionLog);
                self.set_error(format!("{name}{} ({key}: event log)", event.message));
            }
            if self.events.len() == LOG_CAPACITY {
                self.events.pop_front();
            }
            self.events.push_back(event);
            any = true;
        }
        any
    }

    /// Notes that a slow reader lost `n` events from the stream.
    pub fn events_lagged(&mut self, n: u64) {
        self.events_lost += n;
    }

    /// The engine's answer to an add: selects the new torrent (or the existing one for "already
    /// added") and says so in the message line.
    pub fn add_result(&mut self, result: Result<TorrentId, AddError>) {
        match result {
            Ok(id) => {
                self.pending_select = Some(id);
                self.set_info("torrent added".to_owned());
            }
            Err(AddError::AlreadyAdded { id, name, .. }) => {
                self.pending_select = Some(id);
                self.set_info(format!(
                    "{} is already added: selected it",
                    format::clean(&name, false)
                ));
            }
            Err(e) => self.set_error(format!("not added: {e}")),
        }
        // it may be in the current snapshot already
        let snapshot = self.snapshot.clone();
        self.cache.invalidate();
        self.set_snapshot_at(snapshot, self.now_secs);
    }

    /// Handles one key event: looks it up in the active keymap for the current context and
    /// applies the action, or passes it to the focused text field. Returns the commands to
    /// send to the engine (empty for keys that only change the UI, unbound keys and
    /// releases).
    pub fn handle_key(&mut self, key: KeyEvent) -> Vec<Command> {
        // Over SSH and in tmux, Esc followed quickly by a key arrives as one Alt-chord:
        // an Alt key that means nothing here is read as Esc, then the key.
        if key.modifiers.contains(KeyModifiers::ALT)
            && matches!(key.code, KeyCode::Char(_))
            && self.opts.keymap.lookup(self.context(), &key).is_none()
        {
            self.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
            let plain =
                KeyEvent::new_with_kind(key.code, key.modifiers - KeyModifiers::ALT, key.kind);
            return self.handle_key(plain);
        }
        let context = self.context();
        match self.opts.keymap.lookup(context, &key) {
            Some(action) => {
                if !matches!(context, Context::Form | Context::Search) {
                    self.notice = None;
                }
                self.apply(action);
            }
            None => match context {
                Context::Form => {
                    if let Some(Dialog::Form(form)) = &mut self.dialog {
                        form.edit(&key);
                    }
                }
                Context::Search if self.search.handle(&key) => {
                    self.view.query = self.search.text().to_owned();
                    self.refresh_index();
                }
                _ => {}
            },
        }
        self.take_commands()
    }

    /// Handles pasted text (bracketed paste): it goes into the focused field of a dialog or
    /// into the search bar, with control characters (newlines too) dropped, so a pasted
    /// magnet link never submits or triggers key bindings. Elsewhere a paste is ignored.
    pub fn handle_paste(&mut self, text: &str) -> Vec<Command> {
        match self.context() {
            Context::Form => {
                if let Some(Dialog::Form(form)) = &mut self.dialog {
                    form.paste(text);
                }
            }
            Context::Search => {
                self.search.paste(text);
                self.view.query = self.search.text().to_owned();
                self.refresh_index();
            }
            _ => {}
        }
        self.take_commands()
    }

    /// Handles a mouse event (only delivered when mouse capture is on): the wheel moves the
    /// selection or scrolls, a left click on a list row selects it.
    pub fn handle_mouse(&mut self, event: MouseEvent) -> Vec<Command> {
        match event.kind {
            MouseEventKind::ScrollDown => self.apply(Action::Down),
            MouseEventKind::ScrollUp => self.apply(Action::Up),
            MouseEventKind::Down(MouseButton::Left)
                if self.screen == Screen::List && self.help.is_none() && self.dialog.is_none() =>
            {
                let top = self.list_top.get();
                if event.row >= top {
                    let pos = self.list_scroll.offset.get() + usize::from(event.row - top);
                    if pos < self.index.len() {
                        self.select_pos(pos);
                    }
                }
            }
            _ => {}
        }
        self.take_commands()
    }

    /// Commands queued by snapshots or actions and not yet taken.
    pub fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.outbox)
    }

    // ----- queries -----

    /// The snapshot shown.
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// The options in effect.
    pub fn options(&self) -> &UiOptions {
        &self.opts
    }

    /// The selected torrent, `None` when the list shows nothing.
    pub fn selected(&self) -> Option<TorrentId> {
        self.selected
    }

    /// The selected torrent's row.
    pub fn selected_row(&self) -> Option<&TorrentRow> {
        self.selected.and_then(|id| self.row(id))
    }

    /// Torrent `id`'s row (via the shown index when possible).
    fn row(&self, id: TorrentId) -> Option<&TorrentRow> {
        self.index
            .get(self.selected_pos)
            .and_then(|&i| self.snapshot.rows.get(i))
            .filter(|r| r.id == id)
            .map(|r| &**r)
            .or_else(|| self.snapshot.row(id))
    }

    /// The rows shown in the list, in order.
    pub fn visible_rows(&self) -> impl Iterator<Item = &Arc<TorrentRow>> {
        self.visible_range(0, self.index.len())
    }

    /// `count` rows shown from position `first` on (only these are touched).
    pub fn visible_range(
        &self,
        first: usize,
        count: usize,
    ) -> impl Iterator<Item = &Arc<TorrentRow>> {
        let start = first.min(self.index.len());
        let end = first.saturating_add(count).min(self.index.len());
        self.index[start..end]
            .iter()
            .filter_map(|&i| self.snapshot.rows.get(i))
    }

    /// Number of rows the list shows.
    pub fn visible_len(&self) -> usize {
        self.index.len()
    }

    /// Marked torrents.
    pub fn marks(&self) -> &HashSet<TorrentId> {
        &self.marks
    }

    /// The list's view (filter, search, sort).
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The screen shown.
    pub fn screen(&self) -> Screen {
        self.screen
    }

    /// The detail tab shown.
    pub fn tab(&self) -> Tab {
        self.tab
    }

    /// Whether the help window is open.
    pub fn help_open(&self) -> bool {
        self.help.is_some()
    }

    /// The open dialog.
    pub fn dialog(&self) -> Option<&Dialog> {
        self.dialog.as_ref()
    }

    /// Whether the search line is being edited.
    pub fn searching(&self) -> bool {
        self.searching
    }

    /// Whether the user asked to quit (the event loop then shuts the engine down).
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Sets or clears the message line (e.g. `"shutting down…"`).
    pub fn set_notice(&mut self, notice: Option<String>) {
        self.notice = notice.map(|n| (n, NoticeLevel::Info));
    }

    /// The message line's text, if any.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_ref().map(|(n, _)| n.as_str())
    }

    /// The message and its level.
    pub fn notice_level(&self) -> Option<(&str, NoticeLevel)> {
        self.notice.as_ref().map(|(n, l)| (n.as_str(), *l))
    }

    fn set_info(&mut self, text: String) {
        self.notice = Some((text, NoticeLevel::Info));
    }

    fn set_error(&mut self, text: String) {
        self.notice = Some((text, NoticeLevel::Error));
    }

    /// Engine events kept, oldest first.
    pub fn events(&self) -> &VecDeque<EngineEvent> {
        &self.events
    }

    /// Events a slow reader lost.
    pub fn events_lost(&self) -> u64 {
        self.events_lost
    }

    /// The focused torrent's detail, when the snapshot has it for the selected torrent.
    pub fn detail(&self) -> Option<&Arc<TorrentDetail>> {
        self.snapshot
            .detail
            .as_ref()
            .filter(|d| Some(d.id) == self.selected)
    }

    /// The file tree of the focused torrent.
    pub fn files(&self) -> &FileTree {
        &self.files
    }

    /// The graph window.
    pub fn window(&self) -> Window {
        self.window
    }

    /// Counts per state filter (in [`StateFilter::ALL`] order).
    pub fn counts(&self) -> [usize; 6] {
        self.counts
    }

    /// The search line being edited (text and cursor).
    pub fn search_field(&self) -> &TextField {
        &self.search
    }

    /// Scroll states for the widgets.
    pub(crate) fn scrolls(&self) -> Scrolls<'_> {
        Scrolls {
            list: &self.list_scroll,
            list_top: &self.list_top,
            peers: &self.peers_scroll,
            files: &self.files_scroll,
            trackers: &self.trackers_scroll,
            log: &self.log_scroll,
            tab_log: &self.tab_log_scroll,
            general: &self.general_scroll,
            help: self.help.as_ref(),
        }
    }

    /// Position of the selection among the shown rows.
    pub fn selected_pos(&self) -> Option<usize> {
        self.selected.map(|_| self.selected_pos)
    }

    /// UI time of the graphs, seconds.
    pub fn now_secs(&self) -> u64 {
        self.now_secs
    }

    /// Speed points of the session and of the selected torrent for the graph window.
    pub fn speed_points(&mut self) -> widgets::SpeedPoints {
        let now = self.now_secs;
        let window = self.window;
        let session = self.history.session(now).points(window);
        let torrent = self
            .selected
            .and_then(|id| self.history.torrent(id, now).map(|s| s.points(window)));
        (session, torrent)
    }

    /// The key context in effect.
    pub fn context(&self) -> Context {
        if self.dialog.is_some() {
            return match self.dialog {
                Some(Dialog::Confirm(_)) => Context::Confirm,
                _ => Context::Form,
            };
        }
        if self.help.is_some() {
            return Context::Help;
        }
        if self.searching {
            return Context::Search;
        }
        match (self.screen, self.tab) {
            (Screen::List, _) => Context::List,
            (Screen::Log, _) => Context::Log,
            (Screen::Detail, Tab::Files) => Context::Files,
            (Screen::Detail, Tab::Speed) => Context::Speed,
            (Screen::Detail, _) => Context::Detail,
        }
    }

    // ----- actions -----

    /// Applies `action` in the current context; commands go to the outbox.
    pub fn apply(&mut self, action: Action) {
        match action {
            Action::Help => {
                self.help = match self.help {
                    Some(_) => None,
                    None => Some(Scroll::default()),
                }
            }
            Action::CloseHelp => self.help = None,
            Action::Quit => self.request_quit(),
            Action::Down
            | Action::Up
            | Action::PageDown
            | Action::PageUp
            | Action::HalfPageDown
            | Action::HalfPageUp
            | Action::Top
            | Action::Bottom => self.navigate(action),
            Action::OpenDetail => self.open_detail(),
            Action::Back => {
                if self.screen == Screen::Detail {
                    self.close_detail();
                } else {
                    self.screen = Screen::List;
                }
            }
            Action::NextTab => self.tab = self.tab.step(true),
            Action::PrevTab => self.tab = self.tab.step(false),
            Action::ToggleMark => self.toggle_mark(),
            Action::ClearMarks => {
                self.marks.clear();
                self.clear_search();
            }
            Action::SortNext => {
                self.view.sort = self.view.sort.next();
                self.view.reverse = false;
                self.refresh_index();
            }
            Action::SortReverse => {
                self.view.reverse = !self.view.reverse;
                self.refresh_index();
            }
            Action::FilterNext | Action::FilterPrev => {
                self.view.filter = self.view.filter.step(action == Action::FilterNext);
                self.refresh_index();
            }
            Action::Search => {
                self.searching = true;
                self.search = TextField::new(self.view.query.clone());
            }
            Action::SearchAccept => self.searching = false,
            Action::SearchCancel => self.clear_search(),
            Action::SessionLog => {
                if self.screen == Screen::Detail {
                    self.close_detail();
                }
                self.screen = Screen::Log;
                self.log_scroll.cursor = self.events.len().saturating_sub(1);
            }
            Action::Add => self.open_add(),
            Action::PauseAll => self.outbox.push(Command::PauseAll),
            Action::ResumeAll => self.outbox.push(Command::ResumeAll),
            Action::TogglePause => {
                for id in self.targets() {
                    self.outbox.push(Command::TogglePause(id));
                }
            }
            Action::Recheck => {
                for id in self.targets() {
                    self.outbox.push(Command::Recheck(id));
                }
            }
            Action::Reannounce => {
                let ids = self.targets();
                if !ids.is_empty() {
                    self.set_info(format!("re-announcing {}", self.describe(&ids)));
                }
                for id in ids {
                    self.outbox.push(Command::Reannounce(id));
                }
            }
            Action::Remove | Action::RemoveDelete => {
                self.open_remove(action == Action::RemoveDelete);
            }
            Action::Limits => self.open_limits(),
            Action::MoveStorage => self.open_move(),
            Action::ToggleFold => {
                self.files.toggle_fold(self.files_scroll.cursor);
            }
            Action::PriorityUp | Action::PriorityDown => {
                self.change_priority(action == Action::PriorityUp)
            }
            Action::SpeedWindow => self.window = self.window.next(),
            Action::Confirm => self.confirm(),
            Action::Deny | Action::Cancel => self.dialog = None,
            Action::Submit => self.submit(),
            Action::NextField => {
                if let Some(Dialog::Form(form)) = &mut self.dialog {
                    form.tab();
                }
            }
            Action::FieldDown | Action::PrevField => {
                if let Some(Dialog::Form(form)) = &mut self.dialog {
                    form.move_focus(action == Action::FieldDown);
                }
            }
        }
    }

    fn navigate(&mut self, action: Action) {
        if let Some(help) = &mut self.help {
            let width = match help.cursor_width.get() {
                0 => 98,
                w => w,
            };
            let len = widgets::help::line_count(&self.opts.keymap, width);
            // the cursor of the help is its first visible line
            help.cursor = help.offset.get();
            let visible = help.height.get().max(1);
            let max_first = len.saturating_sub(visible);
            match action {
                Action::Down => help.cursor = (help.cursor + 1).min(max_first),
                Action::Up => help.cursor = help.cursor.saturating_sub(1),
                Action::Top => help.cursor = 0,
                Action::Bottom => help.cursor = max_first,
                Action::PageDown | Action::HalfPageDown => {
                    help.cursor = (help.cursor + visible).min(max_first)
                }
                _ => help.cursor = help.cursor.saturating_sub(visible),
            }
            help.offset.set(help.cursor);
            return;
        }
        match self.screen {
            Screen::List => {
                let mut scroll = Scroll {
                    cursor: self.selected_pos,
                    ..Scroll::default()
                };
                scroll.height.set(self.list_scroll.height.get());
                if scroll.apply(action, self.index.len()) {
                    self.select_pos(scroll.cursor);
                }
            }
            Screen::Log => {
                let len = self.events.len();
                self.log_scroll.apply(action, len);
            }
            Screen::Detail => {
                let len = self.tab_len();
                let scroll = match self.tab {
                    Tab::General => &mut self.general_scroll,
                    Tab::Peers => &mut self.peers_scroll,
                    Tab::Files => &mut self.files_scroll,
                    Tab::Trackers => &mut self.trackers_scroll,
                    Tab::Log => &mut self.tab_log_scroll,
                    Tab::Pieces | Tab::Speed => return,
                };
                scroll.apply(action, len);
            }
        }
    }

    /// Rows of the current detail tab (for scrolling).
    fn tab_len(&self) -> usize {
        let detail = self.detail();
        match self.tab {
            Tab::General => widgets::general::line_count(self, detail.map(|d| &**d)),
            Tab::Peers => detail.map_or(0, |d| d.peers.len()),
            Tab::Files => self.files.visible_len(),
            Tab::Trackers => detail.map_or(0, |d| d.trackers.len()),
            Tab::Log => self.torrent_events().count(),
            Tab::Pieces | Tab::Speed => 0,
        }
    }

    /// Events of the selected torrent, oldest first.
    pub fn torrent_events(&self) -> impl Iterator<Item = &EngineEvent> {
        let id = self.selected;
        self.events
            .iter()
            .filter(move |e| e.torrent.is_some() && e.torrent == id)
    }

    fn request_quit(&mut self) {
        let active = self
            .snapshot
            .rows
            .iter()
            .filter(|r| {
                r.state.is_active()
                    || matches!(r.state, TorrentState::Checking | TorrentState::Moving)
            })
            .count();
        if active == 0 || !self.opts.confirm_quit {
            self.quit = true;
            return;
        }
        let yes = self.opts.keymap.hint(Action::Confirm);
        let no = self.opts.keymap.hint(Action::Deny);
        self.dialog = Some(Dialog::Confirm(Confirm {
            kind: ConfirmKind::Quit,
            title: "Quit ratorrent?".to_owned(),
            lines: vec![
                format!(
                    "{active} torrent{} {} running: {} stop and the trackers are told.",
                    if active == 1 { "" } else { "s" },
                    if active == 1 { "is" } else { "are" },
                    if active == 1 { "it will" } else { "they" },
                ),
                String::new(),
                format!("{yes}: quit    {no}: stay"),
            ],
        }));
    }

    /// The torrents an action applies to: the marked ones, else the selected one.
    fn targets(&self) -> Vec<TorrentId> {
        if self.marks.is_empty() {
            self.selected.into_iter().collect()
        } else {
            // in list order, so confirmations read like the screen
            let mut ids: Vec<TorrentId> = self
                .snapshot
                .rows
                .iter()
                .map(|r| r.id)
                .filter(|id| self.marks.contains(id))
                .collect();
            ids.dedup();
            ids
        }
    }

    /// `"debian.iso"` or `"3 torrents"`.
    fn describe(&self, ids: &[TorrentId]) -> String {
        match ids {
            [id] => self
                .snapshot
                .row(*id)
                .map_or_else(|| id.to_string(), |r| format::clean(&r.name, false)),
            _ => format!("{} torrents", ids.len()),
        }
    }

    fn toggle_mark(&mut self) {
        if self.screen == Screen::Detail && self.tab == Tab::Files {
            self.files.toggle_mark(self.files_scroll.cursor);
            self.files_scroll.cursor =
                (self.files_scroll.cursor + 1).min(self.files.visible_len().saturating_sub(1));
            return;
        }
        if let Some(id) = self.selected {
            if !self.marks.remove(&id) {
                self.marks.insert(id);
            }
            self.select_pos((self.selected_pos + 1).min(self.index.len().saturating_sub(1)));
        }
    }

    fn clear_search(&mut self) {
        self.searching = false;
        self.search = TextField::default();
        if !self.view.query.is_empty() {
            self.view.query.clear();
            self.refresh_index();
        }
    }

    fn open_detail(&mut self) {
        let Some(id) = self.selected else {
            return;
        };
        self.screen = Screen::Detail;
        for s in [
            &mut self.peers_scroll,
            &mut self.files_scroll,
            &mut self.trackers_scroll,
            &mut self.general_scroll,
        ] {
            *s = Scroll::default();
        }
        self.tab_log_scroll = Scroll {
            cursor: usize::MAX / 2,
            ..Scroll::default()
        };
        self.files = FileTree::default();
        if let Some(detail) = self.detail().cloned() {
            self.files.update(&detail);
        }
        self.focus(Some(id));
    }

    fn close_detail(&mut self) {
        self.screen = Screen::List;
        self.focus(None);
    }

    fn focus(&mut self, id: Option<TorrentId>) {
        if self.focused != id {
            self.focused = id;
            self.outbox.push(Command::Focus(id));
        }
    }

    fn open_add(&mut self) {
        let mut form = Form::new(
            FormKind::Add,
            "Add a torrent",
            vec![
                Field::path("Torrent file or magnet link", "", false),
                Field::path("Save in (empty: the default folder)", "", true),
                Field::check("Start paused", false),
            ],
        );
        let tab = self.opts.keymap.hint(Action::NextField);
        form.intro = vec![format!(
            "{tab} completes a path or moves to the next field."
        )];
        self.dialog = Some(Dialog::Form(form));
    }

    fn open_remove(&mut self, delete_data: bool) {
        let ids = self.targets();
        if ids.is_empty() {
            return;
        }
        let mut lines = Vec::new();
        let what = self.describe(&ids);
        if delete_data {
            lines.push(format!("Remove {what} and DELETE its data from disk:"));
            let detail = self.snapshot.detail.as_ref();
            for id in ids.iter().take(5) {
                if let Some(row) = self.snapshot.row(*id) {
                    let place = detail
                        .filter(|d| d.id == *id)
                        .map(|d| format!(" in {}", d.save_path.display()))
                        .unwrap_or_default();
                    lines.push(format!(
                        "  {} ({}){place}",
                        format::clean(&row.name, false),
                        units::size(row.size)
                    ));
                }
            }
            if ids.len() > 5 {
                lines.push(format!("  … and {} more", ids.len() - 5));
            }
            lines.push("The files cannot be recovered.".to_owned());
        } else {
            lines.push(format!("Remove {what} from the list?"));
            lines.push("The downloaded data stays on disk.".to_owned());
        }
        lines.push(String::new());
        let yes = self.opts.keymap.hint(Action::Confirm);
        let no = self.opts.keymap.hint(Action::Deny);
        lines.push(format!("{yes}: remove    {no}: keep"));
        self.dialog = Some(Dialog::Confirm(Confirm {
            kind: ConfirmKind::Remove { ids, delete_data },
            title: if delete_data {
                "Remove and delete data".to_owned()
            } else {
                "Remove torrent".to_owned()
            },
            lines,
        }));
    }

    fn open_limits(&mut self) {
        let g = &self.snapshot.global;
        let human = |v: u64| {
            if v == 0 {
                "unlimited".to_owned()
            } else {
                units::rate(v)
            }
        };
        let sym = self.opts.theme.sym;
        let mut fields = vec![
            Field::text(
                format!("Session {} download", sym.down),
                human(g.down_limit),
            ),
            Field::text(format!("Session {} upload", sym.up), human(g.up_limit)),
        ];
        let torrents = self.targets();
        if !torrents.is_empty() {
            let what = self.describe(&torrents);
            let (d, u) = match torrents.as_slice() {
                [id] => self
                    .snapshot
                    .row(*id)
                    .map_or((0, 0), |r| (r.down_limit, r.up_limit)),
                _ => (0, 0),
            };
            let what = format::fit_with(&what, 30, sym.ascii, sym.ellipsis);
            fields.push(Field::text(
                format!("{what} {} download", sym.down),
                human(d),
            ));
            fields.push(Field::text(format!("{what} {} upload", sym.up), human(u)));
        }
        let mut form = Form::new(FormKind::Limits { torrents }, "Rate limits", fields);
        form.intro =
            vec!["Bytes per second: 500K, 2.5M, 1 MiB/s; 0 or unlimited for none.".to_owned()];
        self.dialog = Some(Dialog::Form(form));
    }

    fn open_move(&mut self) {
        let torrents = self.targets();
        if torrents.is_empty() {
            return;
        }
        let current = self
            .snapshot
            .detail
            .as_ref()
            .filter(|d| torrents.first() == Some(&d.id))
            .map(|d| d.save_path.display().to_string())
            .unwrap_or_default();
        let what = self.describe(&torrents);
        let mut form = Form::new(
            FormKind::Move { torrents },
            "Move storage",
            vec![
                Field::path("New folder", current, true),
                Field::check(
                    "Move the files (off: only set the location, then recheck)",
                    true,
                ),
            ],
        );
        form.intro = vec![format!("Where should {what} be stored?")];
        self.dialog = Some(Dialog::Form(form));
    }

    fn confirm(&mut self) {
        let Some(Dialog::Confirm(confirm)) = self.dialog.take() else {
            return;
        };
        match confirm.kind {
            ConfirmKind::Quit => self.quit = true,
            ConfirmKind::Remove { ids, delete_data } => {
                let what = self.describe(&ids);
                for id in &ids {
                    self.marks.remove(id);
                    self.outbox.push(Command::Remove {
                        id: *id,
                        delete_data,
                    });
                }
                self.set_info(if delete_data {
                    format!("removed {what} and deleted its data")
                } else {
                    format!("removed {what} (data kept)")
                });
            }
        }
    }

    fn submit(&mut self) {
        let Some(Dialog::Form(form)) = &mut self.dialog else {
            return;
        };
        let result = match &form.kind {
            FormKind::Add => submit_add(form, self.opts.seed_after_download),
            FormKind::Limits { torrents } => submit_limits(form, torrents, &self.snapshot),
            FormKind::Move { torrents } => submit_move(form, torrents),
        };
        match result {
            Ok((commands, message)) => {
                self.dialog = None;
                self.outbox.extend(commands);
                if let Some(m) = message {
                    self.set_info(m);
                }
            }
            Err(e) => form.error = Some(e),
        }
    }

    fn change_priority(&mut self, up: bool) {
        let Some(id) = self.selected else { return };
        let Some((files, current)) = self.files.targets(self.files_scroll.cursor) else {
            return;
        };
        use FilePriority as P;
        let order = [P::Skip, P::Low, P::Normal, P::High];
        let i = order.iter().position(|p| *p == current).unwrap_or(2);
        let new = if up {
            order[(i + 1).min(3)]
        } else {
            order[i.saturating_sub(1)]
        };
        if new == current && files.len() == 1 {
            return;
        }
        self.set_info(format!(
            "priority {} for {} file{}",
            priority_label(new),
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        ));
        self.files.set_pending(&files, new);
        self.outbox.push(Command::SetFilePriority {
            id,
            files,
            priority: new,
        });
    }

    // ----- selection -----

    fn refresh_index(&mut self) {
        self.index = self.cache.get(&self.snapshot, &self.view).to_vec();
        self.reconcile_selection();
    }

    fn select_pos(&mut self, pos: usize) {
        if let Some(&i) = self.index.get(pos) {
            self.selected = self.snapshot.rows.get(i).map(|r| r.id);
            self.selected_pos = pos;
        }
    }

    /// Keeps the selection on the same torrent, or on its neighbour if it is gone (or
    /// filtered out).
    fn reconcile_selection(&mut self) {
        let rows = &self.snapshot.rows;
        if let Some(id) = self.selected {
            // fast path: still at the same place
            if self
                .index
                .get(self.selected_pos)
                .and_then(|&i| rows.get(i))
                .is_some_and(|r| r.id == id)
            {
                return;
            }
            if let Some(pos) = self.index.iter().position(|&i| rows[i].id == id) {
                self.selected_pos = pos;
                return;
            }
        }
        if self.index.is_empty() {
            self.selected = None;
            self.selected_pos = 0;
        } else {
            let pos = self.selected_pos.min(self.index.len() - 1);
            self.select_pos(pos);
            if self.screen == Screen::Detail && self.focused != self.selected {
                // the torrent shown went away: back to the list
                self.screen = Screen::List;
                self.focus(None);
            }
        }
    }

    /// Draws the whole screen for the current state. Works at any size (tiny areas simply
    /// show less).
    pub fn draw(&mut self, frame: &mut Frame) {
        let speed = if self.screen == Screen::Detail && self.tab == Tab::Speed {
            Some(self.speed_points())
        } else {
            None
        };
        widgets::draw(self, frame, speed.as_ref());
    }
}

/// Scroll states handed to the widgets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scrolls<'a> {
    pub list: &'a Scroll,
    pub list_top: &'a Cell<u16>,
    pub peers: &'a Scroll,
    pub files: &'a Scroll,
    pub trackers: &'a Scroll,
    pub log: &'a Scroll,
    pub tab_log: &'a Scroll,
    pub general: &'a Scroll,
    pub help: Option<&'a Scroll>,
}

/// `"skip"`, `"low"`, `"normal"`, `"high"`.
pub fn priority_label(p: FilePriority) -> &'static str {
    match p {
        FilePriority::Skip => "skip",
        FilePriority::Low => "low",
        FilePriority::Normal => "normal",
        FilePriority::High => "high",
    }
}

type Submitted = Result<(Vec<Command>, Option<String>), String>;

fn submit_add(form: &Form, seed: bool) -> Submitted {
    let text = form.fields.first().map_or("", |f| f.value()).trim();
    let save = form.fields.get(1).map_or("", |f| f.value()).trim();
    let paused = form.fields.get(2).is_some_and(Field::checked);
    if text.is_empty() {
        return Err("type the path of a .torrent file (Tab completes) or a magnet link".to_owned());
    }
    let source = if is_magnet(text) {
        // Checked here so a typo is reported in the dialog, not as a failed add.
        Magnet::parse(text).map_err(|e| e.to_string())?;
        AddSource::Magnet(text.to_owned())
    } else {
        let path = expand_home(text);
        if !path.exists() {
            return Err(format!("no such file: {}", path.display()));
        }
        if !path.is_file() {
            return Err(format!(
                "{} is a folder: give a .torrent file",
                path.display()
            ));
        }
        AddSource::File(path)
    };
    let download_dir = if save.is_empty() {
        None
    } else {
        let dir = expand_home(save);
        if dir.exists() && !dir.is_dir() {
            return Err(format!("{} is a file, not a folder", dir.display()));
        }
        Some(dir)
    };
    Ok((
        vec![Command::Add(
            AddRequest {
                source,
                download_dir,
                paused,
                seed,
            },
            None,
        )],
        Some("adding…".to_owned()),
    ))
}

fn submit_limits(form: &Form, torrents: &[TorrentId], snapshot: &Snapshot) -> Submitted {
    let mut values = Vec::new();
    for field in &form.fields {
        let v = parse_rate(field.value()).map_err(|e| format!("{}: {e}", field.label))?;
        values.push(v);
    }
    let mut commands = Vec::new();
    let g = &snapshot.global;
    if let [down, up, ..] = values[..]
        && (down != g.down_limit || up != g.up_limit)
    {
        commands.push(Command::SetLimits {
            download: down,
            upload: up,
        });
    }
    if let [_, _, down, up] = values[..] {
        for id in torrents {
            let same = snapshot
                .row(*id)
                .is_some_and(|r| r.down_limit == down && r.up_limit == up);
            if !same {
                commands.push(Command::SetTorrentLimits {
                    id: *id,
                    download: down,
                    upload: up,
                });
            }
        }
    }
    let message = if commands.is_empty() {
        "limits unchanged".to_owned()
    } else {
        let show = |v: u64| {
            if v == 0 {
                "unlimited".to_owned()
            } else {
                units::rate(v)
            }
        };
        let mut parts = vec![format!(
            "session down {} up {}",
            show(values[0]),
            show(values[1])
        )];
        if values.len() == 4 {
            parts.push(format!(
                "torrent down {} up {}",
                show(values[2]),
                show(values[3])
            ));
        }
        format!("limits: {}", parts.join(", "))
    };
    Ok((commands, Some(message)))
}

fn submit_move(form: &Form, torrents: &[TorrentId]) -> Submitted {
    let to = form.fields.first().map_or("", |f| f.value()).trim();
    let move_data = form.fields.get(1).is_some_and(Field::checked);
    if to.is_empty() {
        return Err("type the folder to move to".to_owned());
    }
    let to = expand_home(to);
    if to.exists() && !to.is_dir() {
        return Err(format!("{} is a file, not a folder", to.display()));
    }
    if !move_data && !to.is_dir() {
        return Err(format!(
            "{} does not exist: with \"move the files\" off the data must already be there",
            to.display()
        ));
    }
    let commands = torrents
        .iter()
        .map(|id| Command::MoveStorage {
            id: *id,
            to: to.clone(),
            move_data,
        })
        .collect();
    Ok((commands, Some(format!("moving to {}", to.display()))))
}
