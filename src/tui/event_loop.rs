//! The UI event loop: waits on terminal input, new snapshots, engine events, answers to
//! adds and termination signals, and draws only when something changed (no fixed frame
//! rate: an idle screen costs nothing, and a frame whose cells did not change writes
//! nothing), plus once a second while a view that changes with time alone is shown (the
//! Speed tab's graphs, the Trackers tab's countdowns: [`App::shows_time`]). On the way out it asks the engine to shut down (so trackers get `stopped`,
//! BEP 3) and restores the terminal.

use std::time::Duration;

use anyhow::{Context as _, anyhow};
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;
use ratatui::Frame;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use crate::api::{
    AddError, Client, ClientError, Command, EngineEvent, EventReceiver, SnapshotReceiver, TorrentId,
};

use super::action::{Action, Context};
use super::app::{App, UiOptions};
use super::screen::{Screen, Tab};
use super::terminal::{self, TerminalGuard};
use super::widgets;

/// How long to wait for the engine to confirm a shutdown (tracker `stopped` announces)
/// before restoring the terminal anyway.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Draws the whole screen for `app`'s state: the widgets read the model, the Speed tab's
/// points are taken from its history first (only while that tab is shown). Works at any
/// size (tiny areas simply show less).
pub fn draw(frame: &mut Frame, app: &mut App) {
    let speed =
        (app.screen() == Screen::Detail && app.tab() == Tab::Speed).then(|| app.speed_points());
    widgets::draw(frame, app, speed.as_ref());
}

/// What the UI runs with.
#[derive(Debug)]
pub struct RunOptions {
    /// The engine: where commands go, where snapshots come from.
    pub client: Client,
    /// Engine events (the session log); `None`: no log.
    pub events: Option<EventReceiver>,
    /// Shown in the message line until the first key press (e.g. a watch folder that
    /// cannot be used).
    pub notice: Option<String>,
    /// Why each add asked for before the UI started (the command line's torrents) was
    /// refused; the engine put each in the session log, the message line counts them and
    /// says where to read why.
    pub failed_adds: Vec<String>,
    /// Keys, theme and the other settings.
    pub ui: UiOptions,
}

/// Answers the loop waits for without blocking.
enum Reply {
    Added(Result<TorrentId, AddError>),
    History(Vec<EngineEvent>),
    /// A tracker edit's answer: dry run, (find, replace), the result.
    Trackers(
        bool,
        (String, String),
        Result<crate::api::TrackerEditOutcome, crate::api::TrackerEditError>,
    ),
}

/// Runs the terminal UI until the user quits, a termination signal arrives or the engine
/// goes away.
///
/// Shows the snapshots published on `snapshots` (latest value wins), the engine's events,
/// and sends the user's commands (never blocking: when the engine's queue is full the
/// command is dropped and the message line says so). On quit, SIGTERM, SIGINT, SIGHUP or
/// closed terminal input it sends [`Command::Shutdown`] and waits up to
/// [`SHUTDOWN_TIMEOUT`] for the reply, showing "shutting down…" (a second quit key or
/// signal stops waiting). Attached to a daemon ([`UiOptions::attached`]), the engine is
/// the daemon's: it is stopped only by the quit-daemon action, once confirmed; quitting, a
/// signal or a lost terminal leave it running. The terminal is restored on every exit
/// path, panics included.
///
/// Must run inside a tokio runtime with the `signal` and `time` drivers enabled.
///
/// Errors: the terminal cannot be set up, read or drawn; signal handlers cannot be
/// installed; the engine went away (snapshot or command channel closed) while the UI ran.
pub async fn run(opts: RunOptions) -> anyhow::Result<()> {
    let RunOptions {
        client,
        events,
        notice,
        failed_adds,
        ui,
    } = opts;
    let mut snapshots = client.snapshots();
    let signals = Signals::new().context("installing SIGTERM/SIGHUP/SIGINT handlers")?;
    let mouse = ui.mouse;
    let attached = ui.attached.is_some();
    let mut app = App::with_options(snapshots.borrow_and_update().clone(), ui);
    app.set_notice(notice);
    app.adds_failed(&failed_adds);
    let (replies_tx, replies) = mpsc::unbounded_channel();
    if events.is_some()
        && let Ok(history) = client.try_recent_events()
    {
        let replies_tx = replies_tx.clone();
        tokio::spawn(async move {
            if let Ok(history) = history.await {
                let _ = replies_tx.send(Reply::History(history));
            }
        });
    }
    let guard = TerminalGuard::enter(mouse).context("setting up the terminal")?;
    let mut ui = Ui {
        guard,
        app,
        events: EventStream::new(),
        client,
        snapshots,
        engine_events: events,
        replies,
        replies_tx,
        signals,
        can_draw: true,
    };
    let result = match ui.main_loop().await {
        Exit::EngineGone if attached => Err(anyhow!(
            "the connection to the daemon closed (it stopped, or was killed)"
        )),
        Exit::EngineGone => Err(anyhow!(
            "the engine stopped unexpectedly (its channel to the UI closed)"
        )),
        Exit::Quit | Exit::Signal => {
            if !attached || ui.app.stops_engine() {
                ui.shutdown().await;
            }
            Ok(())
        }
        Exit::Failed(err) => {
            if !attached {
                ui.shutdown().await;
            }
            Err(err)
        }
    };
    ui.app.save_view();
    if let Err(err) = ui.guard.restore() {
        tracing::warn!("restoring the terminal failed: {err}");
    }
    result
}

/// Why the main loop ended.
enum Exit {
    /// The user quit.
    Quit,
    /// SIGTERM, SIGINT, SIGHUP, or terminal input ended.
    Signal,
    /// The engine dropped its end of a channel.
    EngineGone,
    /// The terminal failed.
    Failed(anyhow::Error),
}

/// How the shutdown request ended.
#[derive(Debug)]
enum Shutdown {
    /// The engine replied: trackers were told.
    Confirmed,
    /// The engine was already gone.
    EngineGone,
    /// No reply within [`SHUTDOWN_TIMEOUT`].
    TimedOut,
    /// The user (second `q`/Ctrl-C) or a second signal cut the wait short.
    Forced,
}

/// Everything the loop owns.
struct Ui {
    guard: TerminalGuard,
    app: App,
    events: EventStream,
    client: Client,
    snapshots: SnapshotReceiver,
    engine_events: Option<EventReceiver>,
    replies: mpsc::UnboundedReceiver<Reply>,
    replies_tx: mpsc::UnboundedSender<Reply>,
    signals: Signals,
    /// `false` once the terminal is gone (hang-up, write error, restored by a panic).
    can_draw: bool,
}

impl Ui {
    async fn main_loop(&mut self) -> Exit {
        let mut dirty = true;
        loop {
            if !terminal::is_active() {
                self.can_draw = false;
                return Exit::Failed(anyhow!("the terminal was restored after a panic"));
            }
            if let Err(exit) = self.flush_commands() {
                return exit;
            }
            if dirty {
                let app = &mut self.app;
                if let Err(err) = self.guard.draw(|frame| draw(frame, app)) {
                    self.can_draw = false;
                    return Exit::Failed(anyhow::Error::new(err).context("drawing the screen"));
                }
                dirty = false;
            }
            if self.app.should_quit() {
                return Exit::Quit;
            }
            let ticking = self.app.shows_time();
            let tick = tokio::time::sleep(if ticking {
                // just past the second, so the graphs' clock has moved on
                self.app.until_next_second() + Duration::from_millis(5)
            } else {
                Duration::ZERO
            });
            tokio::select! {
                () = tick, if ticking => dirty = true,
                event = self.events.next() => match event {
                    Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                        dirty = true;
                        let commands = self.app.handle_key(key);
                        for command in commands {
                            if let Err(exit) = self.send(command) {
                                return exit;
                            }
                        }
                    }
                    Some(Ok(Event::Mouse(mouse))) => {
                        dirty = true;
                        for command in self.app.handle_mouse(mouse) {
                            if let Err(exit) = self.send(command) {
                                return exit;
                            }
                        }
                    }
                    Some(Ok(Event::Paste(text))) => {
                        dirty = true;
                        for command in self.app.handle_paste(&text) {
                            if let Err(exit) = self.send(command) {
                                return exit;
                            }
                        }
                    }
                    Some(Ok(Event::Resize(_, _))) => dirty = true,
                    Some(Ok(_)) => {}
                    Some(Err(err)) => {
                        self.can_draw = false;
                        return Exit::Failed(
                            anyhow::Error::new(err).context("reading terminal input"),
                        );
                    }
                    None => {
                        // Input ended: the terminal is gone, like a hang-up.
                        self.can_draw = false;
                        return Exit::Signal;
                    }
                },
                changed = self.snapshots.changed() => match changed {
                    Ok(()) => {
                        let snapshot = self.snapshots.borrow_and_update().clone();
                        dirty |= self.app.set_snapshot(snapshot);
                    }
                    Err(_) => return Exit::EngineGone,
                },
                event = recv_event(&mut self.engine_events) => match event {
                    Ok(event) => dirty |= self.app.push_events([event]),
                    Err(RecvError::Lagged(n)) => self.app.events_lagged(n),
                    Err(RecvError::Closed) => self.engine_events = None,
                },
                Some(reply) = self.replies.recv() => {
                    dirty = true;
                    match reply {
                        Reply::Added(result) => self.app.add_result(result),
                        Reply::History(history) => {
                            self.app.push_history(history);
                        }
                        Reply::Trackers(dry_run, texts, result) => {
                            self.app.trackers_edited(dry_run, texts, result);
                        }
                    }
                },
                signal = self.signals.recv() => {
                    if signal == TermSignal::Hangup {
                        self.can_draw = false;
                    }
                    return Exit::Signal;
                }
            }
        }
    }

    /// Sends the commands the app queued outside a key press (e.g. focus changes).
    fn flush_commands(&mut self) -> Result<(), Exit> {
        for command in self.app.take_commands() {
            self.send(command)?;
        }
        Ok(())
    }

    /// Queues `command` for the engine without waiting. An add from the dialog gets its
    /// answer back to the loop.
    fn send(&mut self, command: Command) -> Result<(), Exit> {
        let sent = match command {
            Command::Add(request, None) => self.client.try_add(request).map(|answer| {
                let replies = self.replies_tx.clone();
                tokio::spawn(async move {
                    if let Ok(result) = answer.await {
                        let _ = replies.send(Reply::Added(result));
                    }
                });
            }),
            Command::EditTrackers {
                ids,
                edit,
                dry_run,
                reply: None,
            } => {
                let texts = match &edit {
                    crate::api::TrackerEdit::Replace { find, replace } => {
                        (find.clone(), replace.clone())
                    }
                    _ => Default::default(),
                };
                self.client
                    .try_edit_trackers(ids, edit, dry_run)
                    .map(|answer| {
                        let replies = self.replies_tx.clone();
                        tokio::spawn(async move {
                            if let Ok(result) = answer.await {
                                let _ = replies.send(Reply::Trackers(dry_run, texts, result));
                            }
                        });
                    })
            }
            other => self.client.try_send(other),
        };
        match sent {
            Ok(()) => Ok(()),
            Err(ClientError::EngineGone) => Err(Exit::EngineGone),
            Err(_) => {
                self.app
                    .set_notice(Some("engine busy: command not sent, try again".to_owned()));
                Ok(())
            }
        }
    }

    /// Draws if the terminal is still there; a failure means it is not.
    fn try_draw(&mut self) {
        if self.can_draw && terminal::is_active() {
            let app = &mut self.app;
            if self.guard.draw(|frame| draw(frame, app)).is_err() {
                self.can_draw = false;
            }
        }
    }

    /// Asks the engine to shut down and waits for its reply, keeping the screen up to date.
    async fn shutdown(&mut self) -> Shutdown {
        self.app.set_notice(Some(
            "shutting down… (q again to quit without waiting)".to_owned(),
        ));
        self.try_draw();
        let client = self.client.clone();
        let wait = async move {
            match client.shutdown().await {
                Ok(()) => Shutdown::Confirmed,
                Err(_) => Shutdown::EngineGone,
            }
        };
        let deadline = tokio::time::sleep(SHUTDOWN_TIMEOUT);
        tokio::pin!(wait, deadline);
        let mut snapshots_open = true;
        let outcome = loop {
            tokio::select! {
                outcome = &mut wait => break outcome,
                () = &mut deadline => break Shutdown::TimedOut,
                _ = self.signals.recv() => break Shutdown::Forced,
                event = self.events.next(), if self.can_draw => match event {
                    Some(Ok(Event::Key(key))) => {
                        let keymap = &self.app.options().keymap;
                        if keymap.lookup(Context::Global, &key) == Some(Action::Quit) {
                            break Shutdown::Forced;
                        }
                    }
                    Some(Ok(Event::Resize(_, _))) => self.try_draw(),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => self.can_draw = false,
                },
                changed = self.snapshots.changed(), if snapshots_open => match changed {
                    Ok(()) => {
                        let snapshot = self.snapshots.borrow_and_update().clone();
                        if self.app.set_snapshot(snapshot) {
                            self.try_draw();
                        }
                    }
                    // Expected: the engine drops its sender as it ends.
                    Err(_) => snapshots_open = false,
                },
            }
        };
        match outcome {
            Shutdown::Confirmed => tracing::debug!("engine confirmed shutdown"),
            ref other => tracing::warn!("engine shutdown not confirmed: {other:?}"),
        }
        outcome
    }
}

/// The next engine event; never resolves without a receiver.
async fn recv_event(events: &mut Option<EventReceiver>) -> Result<EngineEvent, RecvError> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Signals that end the UI.
#[cfg_attr(not(unix), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TermSignal {
    /// SIGTERM.
    Terminate,
    /// SIGHUP: the terminal (SSH session) is gone; do not draw any more.
    Hangup,
    /// SIGINT sent from outside (in raw mode Ctrl-C arrives as a key, not as SIGINT).
    Interrupt,
}

/// SIGTERM, SIGHUP and SIGINT listeners.
#[cfg(unix)]
struct Signals {
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// The next signal received.
    async fn recv(&mut self) -> TermSignal {
        tokio::select! {
            _ = self.terminate.recv() => TermSignal::Terminate,
            _ = self.hangup.recv() => TermSignal::Hangup,
            _ = self.interrupt.recv() => TermSignal::Interrupt,
        }
    }
}

/// Elsewhere only Ctrl-C (as a key) ends the UI.
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Signals)
    }

    async fn recv(&mut self) -> TermSignal {
        std::future::pending().await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::api::Snapshot;
    use crate::tui::UiOptions;

    use super::*;

    /// The binary may `tokio::spawn` the UI, so its future must be `Send` (checked at
    /// compile time; the future is never polled, so no terminal is touched).
    #[test]
    fn run_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let (commands, _engine_side) = tokio::sync::mpsc::channel(1);
        let (_publisher, snapshots) = tokio::sync::watch::channel(Arc::new(Snapshot::default()));
        let (events, _) = tokio::sync::broadcast::channel(1);
        let future = run(RunOptions {
            client: Client::new(commands, snapshots, &events),
            events: None,
            notice: None,
            failed_adds: Vec::new(),
            ui: UiOptions::default(),
        });
        assert_send(&future);
    }
}
