//! The UI's model: screens, tabs, selection, marks, the list view, the open dialog, help,
//! the event log and the speed history. Pure data, testable without a terminal: feed it
//! snapshots, engine events and key events, and take the commands it wants sent
//! ([`App::handle_key`], [`App::take_commands`]). It never draws and imports no widget: the
//! event loop draws it ([`super::draw`]) on any ratatui backend (tests use `TestBackend`),
//! and the dialogs are rooms of their own ([`super::popups`]).

use std::cell::Cell;
use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use crate::api::{
    AddError, Command, EngineEvent, EventLevel, QueueMove, Snapshot, TorrentDetail, TorrentId,
    TorrentRow, TorrentState,
};

use super::action::{Action, Context};
use super::events::EventLog;
use super::file_tree::{FileTree, priority_label, step_priority};
use super::format;
use super::general;
use super::help;
use super::history::{History, SpeedPoints, Window};
use super::input::TextField;
use super::keymap::Keymap;
use super::list::{self, SortColumn, StateFilter, View};
use super::notice::{Notice, NoticeLevel};
use super::popups::confirm::ConfirmKind;
use super::popups::form::{FormKind, Outcome};
use super::popups::{self, Dialog};
use super::screen::{Screen, Tab, TabScrolls};
use super::scroll::Scroll;
use super::selection::Selection;
use super::theme::Theme;

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
    /// Attached to a daemon (its pid; `None`: the engine is this process's own).
    pub attached: Option<u32>,
    /// The list's columns (config `columns`, read by [`list::parse_columns`]; the name
    /// column is always among them): all by default.
    pub columns: Vec<SortColumn>,
    /// Where the list's sort and filter are kept across runs ([`super::view_file`]);
    /// `None`: not kept (tests, embedders).
    pub view_file: Option<PathBuf>,
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
            attached: None,
            columns: SortColumn::ALL.to_vec(),
            view_file: None,
        }
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
    /// The rows shown and the selected one.
    selection: Selection,
    /// Torrents per state filter in the current snapshot.
    counts: [usize; list::FILTERS],
    /// First visible list row and visible rows (set while drawing).
    list_scroll: Scroll,
    /// Screen row of the first list row at the last draw (mouse clicks).
    list_top: Cell<u16>,
    /// The sort columns the list showed at the last draw ([`SortColumn::bit`]s; 0 before
    /// the first): `s` cycles through these.
    list_sorts: Cell<u16>,
    /// Marked torrents (bulk actions).
    marks: HashSet<TorrentId>,
    /// The search line is being edited.
    searching: bool,
    search: TextField,
    /// Scroll state of the detail tabs.
    tab_scrolls: TabScrolls,
    /// Scroll state of the session log.
    log_scroll: Scroll,
    /// File tree of the focused torrent, folded folders, marked files.
    files: FileTree,
    /// Graph window.
    window: Window,
    /// Help window open, and its scroll.
    help: Option<Scroll>,
    dialog: Option<Dialog>,
    /// Quit: `Some(true)` stopping the engine, `Some(false)` leaving the daemon running.
    quit: Option<bool>,
    notice: Notice,
    /// Engine events for the log views.
    events: EventLog,
    history: History,
    /// Seconds since the UI started, at the last sample or draw (the graphs' clock: the
    /// wall clock at draw time, never behind a sample).
    now_secs: u64,
    started: Instant,
    /// A torrent to select once a snapshot shows it (just added).
    pending_select: Option<TorrentId>,
    /// The .torrent path of a create-and-seed just asked for: its add's answer names it.
    pending_create: Option<String>,
    /// Adds of one dialog submission (a glob) whose answers are still coming: their
    /// outcome is told once, counted, when the last answer comes.
    add_batch: Option<AddBatch>,
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
            selection: Selection::default(),
            counts: [0; list::FILTERS],
            list_scroll: Scroll::default(),
            list_top: Cell::new(0),
            list_sorts: Cell::new(0),
            marks: HashSet::new(),
            searching: false,
            search: TextField::default(),
            tab_scrolls: TabScrolls::default(),
            log_scroll: Scroll::default(),
            files: FileTree::default(),
            window: Window::default(),
            help: None,
            dialog: None,
            quit: None,
            notice: Notice::default(),
            events: EventLog::default(),
            history: History::default(),
            now_secs: 0,
            started: Instant::now(),
            pending_select: None,
            pending_create: None,
            add_batch: None,
            focused: None,
            outbox: Vec::new(),
        };
        // the sort and filter of the last run
        if let Some(saved) = app
            .opts
            .view_file
            .as_deref()
            .and_then(super::view_file::load)
        {
            app.view.sort = saved.sort;
            app.view.reverse = saved.reverse;
            app.view.filter = saved.filter;
            app.view.category = saved.category;
            app.view.tag = saved.tag;
        }
        app.set_snapshot_at(snapshot, 0);
        app
    }

    /// Keep the list's sort and filter for the next run (when the options name a file);
    /// the UI calls it when it ends. A file that cannot be written is logged, not fatal.
    pub fn save_view(&self) {
        if let Some(path) = &self.opts.view_file
            && let Err(e) = super::view_file::save(path, &self.view)
        {
            tracing::warn!("cannot keep the list's sort in {}: {e}", path.display());
        }
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
            self.selection.invalidate();
        }
        self.snapshot = snapshot;
        let snap = &self.snapshot;
        self.notice.update(snap.seq, |id| {
            snap.row(id)
                .map(|r| (r.state == TorrentState::Moving, r.save_path.clone()))
        });
        self.counts = list::counts(&self.snapshot.rows);
        self.refresh_index();
        if let Some(id) = self.pending_select
            && self.snapshot.row(id).is_some()
        {
            self.pending_select = None;
            if !self.selection.shows(id, &self.snapshot) {
                // the new torrent is hidden by the filter or search: show everything
                self.clear_filters();
                self.view.query.clear();
                self.search = TextField::default();
                self.refresh_index();
            }
            let moved = self.selection.select(id, &self.snapshot);
            self.leave_detail_if_gone(moved);
        }
        if !self.marks.is_empty() {
            let ids: HashSet<TorrentId> = self.snapshot.rows.iter().map(|r| r.id).collect();
            self.marks.retain(|id| ids.contains(id));
        }
        if let Some(detail) = self.detail() {
            let detail = detail.clone();
            self.files.update(&detail);
        }
        if self.screen == Screen::Detail && self.selection.selected().is_none() {
            self.close_detail();
        }
        changed || (moved && self.screen == Screen::Detail && self.tab == Tab::Speed)
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
        // Enter never says yes to a question that cannot be undone
        if let Some(Dialog::Confirm(question)) = &self.dialog
            && question.enter_denies
            && key.code == KeyCode::Enter
            && key.kind != crossterm::event::KeyEventKind::Release
        {
            self.apply(Action::Deny);
            return self.take_commands();
        }
        let context = self.context();
        match self.opts.keymap.lookup(context, &key) {
            Some(action) => {
                if !matches!(context, Context::Form | Context::Search) {
                    self.notice.clear();
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
                    if pos < self.selection.len() {
                        self.selection.select_pos(pos, &self.snapshot);
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
        self.selection.selected()
    }

    /// The selected torrent's row.
    pub fn selected_row(&self) -> Option<&TorrentRow> {
        let id = self.selection.selected()?;
        self.selection.row(id, &self.snapshot)
    }

    /// The rows shown in the list, in order.
    pub fn visible_rows(&self) -> impl Iterator<Item = &Arc<TorrentRow>> {
        self.visible_range(0, self.selection.len())
    }

    /// `count` rows shown from position `first` on (only these are touched).
    pub fn visible_range(
        &self,
        first: usize,
        count: usize,
    ) -> impl Iterator<Item = &Arc<TorrentRow>> {
        self.selection
            .range(first, count)
            .iter()
            .filter_map(|&i| self.snapshot.rows.get(i))
    }

    /// Number of rows the list shows.
    pub fn visible_len(&self) -> usize {
        self.selection.len()
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

    /// Whether the user asked to quit (the event loop then shuts the engine down, see
    /// [`App::stops_engine`]).
    pub fn should_quit(&self) -> bool {
        self.quit.is_some()
    }

    /// Sets or clears the message line (e.g. `"shutting down…"`).
    pub fn set_notice(&mut self, notice: Option<String>) {
        self.notice.set(notice);
    }

    /// The message line's text, if any.
    pub fn notice(&self) -> Option<&str> {
        self.notice.get().map(|(n, _)| n)
    }

    /// The message and its level.
    pub fn notice_level(&self) -> Option<(&str, NoticeLevel)> {
        self.notice.get()
    }

    /// Messages waiting behind the one shown (the next key shows the next).
    pub fn notices_queued(&self) -> usize {
        self.notice.queued()
    }

    fn set_info(&mut self, text: String) {
        self.notice.info(text);
    }

    fn set_error(&mut self, text: String) {
        self.notice.error(text);
    }

    /// Engine events kept, oldest first.
    pub fn events(&self) -> &VecDeque<EngineEvent> {
        self.events.all()
    }

    /// Events a slow reader lost.
    pub fn events_lost(&self) -> u64 {
        self.events.lost()
    }

    /// The focused torrent's detail, when the snapshot has it for the selected torrent.
    pub fn detail(&self) -> Option<&Arc<TorrentDetail>> {
        self.snapshot
            .detail
            .as_ref()
            .filter(|d| Some(d.id) == self.selection.selected())
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
    pub fn counts(&self) -> [usize; list::FILTERS] {
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
            list_sorts: &self.list_sorts,
            peers: &self.tab_scrolls.peers,
            files: &self.tab_scrolls.files,
            trackers: &self.tab_scrolls.trackers,
            log: &self.log_scroll,
            tab_log: &self.tab_scrolls.log,
            general: &self.tab_scrolls.general,
            help: self.help.as_ref(),
        }
    }

    /// Position of the selection among the shown rows.
    pub fn selected_pos(&self) -> Option<usize> {
        let pos = self.selection.pos();
        self.selection.selected().map(|_| pos)
    }

    /// UI time of the graphs, seconds.
    pub fn now_secs(&self) -> u64 {
        self.now_secs
    }

    /// Moves the graphs' clock to `now_secs` seconds of UI time if that is later (tests
    /// stand in for the wall clock with this; [`App::speed_points`] reads the wall clock).
    pub fn advance_clock(&mut self, now_secs: u64) {
        self.now_secs = self.now_secs.max(now_secs);
    }

    /// Whether what is shown changes with time alone (the Speed tab's graphs, the
    /// Trackers tab's countdowns): the event loop then redraws once a second; otherwise
    /// an idle UI stays asleep.
    pub fn shows_time(&self) -> bool {
        self.screen == Screen::Detail && matches!(self.tab, Tab::Speed | Tab::Trackers)
    }

    /// Time until the graphs' clock reaches its next whole second (the event loop's
    /// redraw tick while [`App::shows_time`]).
    pub fn until_next_second(&self) -> std::time::Duration {
        let elapsed = self.started.elapsed();
        std::time::Duration::from_secs(elapsed.as_secs() + 1).saturating_sub(elapsed)
    }

    /// Speed points of the session and of the selected torrent for the graph window, at
    /// the wall clock now: seconds without a snapshot are 0 B/s (see [`History`]).
    pub fn speed_points(&mut self) -> SpeedPoints {
        self.advance_clock(self.started.elapsed().as_secs());
        let now = self.now_secs;
        let window = self.window;
        let session = self.history.session(now).points(window);
        let torrent = self
            .selection
            .selected()
            .and_then(|id| self.history.torrent(id, now).map(|s| s.points(window)));
        (session, torrent)
    }

    /// The key context in effect.
    pub fn context(&self) -> Context {
        if let Some(dialog) = &self.dialog {
            return dialog.context();
        }
        if self.help.is_some() {
            return Context::Help;
        }
        if self.searching {
            return Context::Search;
        }
        self.screen.context(self.tab)
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
            Action::QuitDaemon => self.request_quit_daemon(),
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
                let before = self.view.clone();
                self.clear_filters();
                if self.view != before {
                    self.refresh_index();
                }
            }
            Action::SortNext => {
                self.view.sort = self.view.sort.next_shown(self.list_sorts.get());
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
                self.log_scroll.cursor = self.events.all().len().saturating_sub(1);
            }
            Action::Add => self.open_add(),
            Action::Create => self.open_create(),
            Action::PauseAll | Action::ResumeAll => self.all(action == Action::PauseAll),
            Action::TogglePause => self.toggle_pause(),
            Action::Recheck => {
                let ids = self.targets();
                if !ids.is_empty() {
                    self.set_info(format!("rechecking {}", self.describe(&ids)));
                }
                for id in ids {
                    self.outbox.push(Command::Recheck(id));
                }
            }
            Action::Reannounce => self.reannounce(),
            Action::Remove | Action::RemoveDelete => {
                self.open_remove(action == Action::RemoveDelete);
            }
            Action::Limits => self.open_limits(),
            Action::Goals => self.open_goals(),
            Action::AltSpeed => {
                let on = !self.snapshot.global.alt_speed;
                self.set_info(format!(
                    "alternative speed limits {}",
                    if on { "on" } else { "off" }
                ));
                self.outbox.push(Command::SetAltSpeed(on));
            }
            Action::QueueUp => self.queue_move(QueueMove::Up),
            Action::QueueDown => self.queue_move(QueueMove::Down),
            Action::QueueTop => self.queue_move(QueueMove::Top),
            Action::QueueBottom => self.queue_move(QueueMove::Bottom),
            Action::ForceStart => self.toggle_force_start(),
            Action::Sequential | Action::FirstLast => {
                self.toggle_piece_order(action == Action::Sequential)
            }
            Action::MoveStorage => self.open_move(),
            Action::EditTrackers => self.open_trackers(),
            Action::ToggleFold => {
                self.files.toggle_fold(self.tab_scrolls.files.cursor);
            }
            Action::PriorityUp | Action::PriorityDown => {
                self.change_priority(action == Action::PriorityUp)
            }
            Action::SpeedWindow => self.window = self.window.next(),
            Action::AddPeer => self.open_add_peer(),
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
            Action::CategoryFilter => {
                let names: Vec<String> = (self.snapshot.global.categories.iter())
                    .map(|c| c.category.name.clone())
                    .collect();
                self.view.category = self.view.category.next(&names);
                self.refresh_index();
            }
            Action::TagFilter => {
                let names: Vec<String> = self.snapshot.global.tags.to_vec();
                self.view.tag = self.view.tag.next(&names);
                self.refresh_index();
            }
            Action::Category => self.open_category(),
            Action::Tags => self.open_tags(),
        }
    }

    /// Show every torrent: no state, category or tag filter.
    fn clear_filters(&mut self) {
        self.view.filter = StateFilter::All;
        self.view.category = list::LabelFilter::All;
        self.view.tag = list::LabelFilter::All;
    }

    /// Pauses (`pause`) or resumes every torrent, saying how many it concerns.
    fn all(&mut self, pause: bool) {
        let rows = &self.snapshot.rows;
        let paused = rows
            .iter()
            .filter(|r| r.state == TorrentState::Paused)
            .count();
        let n = if pause { rows.len() - paused } else { paused };
        let s = if n == 1 { "" } else { "s" };
        self.set_info(match (pause, n) {
            (true, 0) => "nothing to pause: every torrent is paused".to_owned(),
            (false, 0) => "nothing to resume: no torrent is paused".to_owned(),
            (true, n) => format!("pausing {n} torrent{s}"),
            (false, n) => format!("resuming {n} paused torrent{s}"),
        });
        self.outbox.push(if pause {
            Command::PauseAll
        } else {
            Command::ResumeAll
        });
    }

    /// Asks the trackers of the target torrents for peers now; a torrent without a
    /// tracker is not sent (nothing to ask) and the message says where its peers come from.
    fn reannounce(&mut self) {
        let ids = self.targets();
        let (tracked, trackerless): (Vec<TorrentId>, Vec<TorrentId>) = ids
            .into_iter()
            .partition(|id| self.snapshot.row(*id).is_some_and(|r| r.has_trackers));
        if !tracked.is_empty() {
            let mut text = format!("re-announcing {}", self.describe(&tracked));
            if !trackerless.is_empty() {
                text.push_str(&format!(
                    "; {} without a tracker",
                    self.describe(&trackerless)
                ));
            }
            self.set_info(text);
        } else if !trackerless.is_empty() {
            // what matters first: a long name is cut at the end of the line
            let what = self.describe(&trackerless);
            // only the sources in effect, as the Trackers tab says them: the torrent's own
            // when its detail is here (peers added by hand, a magnet's), else the session's
            let g = &self.snapshot.global;
            let on = (g.dht_nodes.is_some(), g.lsd);
            let from = match (trackerless.as_slice(), &self.snapshot.detail) {
                ([id], Some(d)) if d.id == *id => general::no_trackers_line(d, on),
                _ => general::session_sources_line(false, on).to_owned(),
            };
            let from = from.trim_start();
            let from = from.strip_prefix("no trackers: ").unwrap_or(from);
            self.set_info(format!("no tracker to re-announce to; {from} — {what}"));
        }
        for id in tracked {
            self.outbox.push(Command::Reannounce(id));
        }
    }

    fn navigate(&mut self, action: Action) {
        if let Some(help) = &mut self.help {
            let width = match help.cursor_width.get() {
                0 => 98,
                w => w,
            };
            help.scroll_text(
                action,
                help::lines(
                    &self.opts.keymap,
                    width,
                    self.opts.confirm_quit,
                    self.opts.attached.is_some(),
                )
                .len(),
            );
            return;
        }
        match self.screen {
            Screen::List => {
                let mut scroll = Scroll::at(self.selection.pos());
                scroll.height.set(self.list_scroll.height.get());
                if scroll.apply(action, self.selection.len()) {
                    self.selection.select_pos(scroll.cursor, &self.snapshot);
                }
            }
            Screen::Log => {
                let len = self.events.all().len();
                self.log_scroll.apply(action, len);
            }
            Screen::Detail => {
                let len = self.tab_len();
                if let Some(scroll) = self.tab_scrolls.of_mut(self.tab) {
                    scroll.apply(action, len);
                }
            }
        }
    }

    /// Rows of the current detail tab (for scrolling).
    fn tab_len(&self) -> usize {
        let detail = self.detail();
        match self.tab {
            Tab::General => self.selected_row().map_or(0, |row| {
                let detail = detail.map(|d| &**d);
                general::facts(row, detail, &self.opts.keymap, &self.opts.theme.sym).len()
            }),
            Tab::Peers => detail.map_or(0, |d| d.peers.len() + d.web_seeds.len()),
            Tab::Files => self.files.visible_len(),
            Tab::Trackers => detail.map_or(0, |d| d.trackers.len() + d.web_seeds.len()),
            Tab::Log => self.torrent_events().count(),
            Tab::Pieces | Tab::Speed => 0,
        }
    }

    /// Events of the selected torrent, oldest first.
    pub fn torrent_events(&self) -> impl Iterator<Item = &EngineEvent> {
        self.events.of_torrent(self.selection.selected())
    }

    /// The torrents an action applies to: the marked ones, else the selected one.
    fn targets(&self) -> Vec<TorrentId> {
        if self.marks.is_empty() {
            self.selection.selected().into_iter().collect()
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
            let cursor = &mut self.tab_scrolls.files.cursor;
            self.files.toggle_mark(*cursor);
            *cursor = (*cursor + 1).min(self.files.visible_len().saturating_sub(1));
            return;
        }
        if let Some(id) = self.selection.selected() {
            if !self.marks.remove(&id) {
                self.marks.insert(id);
            }
            let next = (self.selection.pos() + 1).min(self.selection.len().saturating_sub(1));
            self.selection.select_pos(next, &self.snapshot);
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
        let Some(id) = self.selection.selected() else {
            return;
        };
        self.screen = Screen::Detail;
        self.tab_scrolls = TabScrolls::opened();
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

    fn change_priority(&mut self, up: bool) {
        let Some(id) = self.selection.selected() else {
            return;
        };
        let Some((files, current)) = self.files.targets(self.tab_scrolls.files.cursor) else {
            return;
        };
        let new = step_priority(current, up);
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
        let moved = self.selection.refresh(&self.snapshot, &self.view);
        self.leave_detail_if_gone(moved);
    }

    /// Back to the list when the selection moved off the torrent the detail view shows.
    /// The detail's torrent is no longer the selected one: gone, the list comes back; only
    /// filtered out (paused under the Downloading filter, say), the filter and search are
    /// cleared so the detail, and the keys pressed in it, stay on that torrent.
    fn leave_detail_if_gone(&mut self, moved: bool) {
        if !(moved && self.screen == Screen::Detail && self.focused != self.selection.selected()) {
            return;
        }
        if let Some(id) = self.focused
            && let Some(row) = self.snapshot.row(id)
        {
            let name = format::clean(&row.name, self.opts.theme.sym.ascii);
            self.clear_filters();
            self.view.query.clear();
            self.search = TextField::default();
            self.selection.refresh(&self.snapshot, &self.view);
            self.selection.select(id, &self.snapshot);
            self.set_info(format!("{name} left the filter: showing all torrents"));
            return;
        }
        self.screen = Screen::List;
        self.focus(None);
    }
}

/// Scroll states handed to the widgets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scrolls<'a> {
    pub list: &'a Scroll,
    pub list_top: &'a Cell<u16>,
    pub list_sorts: &'a Cell<u16>,
    pub peers: &'a Scroll,
    pub files: &'a Scroll,
    pub trackers: &'a Scroll,
    pub log: &'a Scroll,
    pub tab_log: &'a Scroll,
    pub general: &'a Scroll,
    pub help: Option<&'a Scroll>,
}

mod dialogs;
mod messages;
mod pause;
mod piece_order;
mod queue;

pub(crate) use messages::AddBatch;

#[cfg(test)]
mod tests;
