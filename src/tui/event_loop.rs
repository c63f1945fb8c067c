//! The UI event loop: waits on terminal input, new snapshots and termination signals, and
//! draws only when something changed (no fixed frame rate: an idle screen costs nothing).
//! On the way out it asks the engine to shut down (so trackers get `stopped`, BEP 3) and
//! restores the terminal.

use std::time::Duration;

use anyhow::{Context as _, anyhow};
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::oneshot;

use crate::api::{Command, CommandSender, SnapshotReceiver};

use super::action::{Action, Context};
use super::app::App;
use super::keymap;
use super::terminal::{self, TerminalGuard};

/// How long to wait for the engine to confirm a shutdown (tracker `stopped` announces)
/// before restoring the terminal anyway.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the terminal UI until the user quits, a termination signal arrives or the engine
/// goes away.
///
/// Shows the snapshots published on `snapshots` (latest value wins) and sends the user's
/// commands on `commands` (never blocking: when the engine's queue is full the command is
/// dropped and the status bar says so). On quit (`q`, Ctrl-C), SIGTERM, SIGINT, SIGHUP or
/// closed terminal input it sends [`Command::Shutdown`] and waits up to
/// [`SHUTDOWN_TIMEOUT`] for the reply, showing "shutting down…" (a second `q` or signal
/// stops waiting). The terminal is restored on every exit path, panics included.
///
/// Must run inside a tokio runtime with the `signal` and `time` drivers enabled.
///
/// Errors: the terminal cannot be set up, read or drawn; signal handlers cannot be
/// installed; the engine went away (snapshot or command channel closed) while the UI ran.
pub async fn run(commands: CommandSender, snapshots: SnapshotReceiver) -> anyhow::Result<()> {
    run_with_notice(commands, snapshots, None).await
}

/// [`run`], showing `notice` in the status bar until the first key press (e.g. a torrent
/// from the command line that could not be added).
///
/// Errors: as [`run`].
pub async fn run_with_notice(
    commands: CommandSender,
    mut snapshots: SnapshotReceiver,
    notice: Option<String>,
) -> anyhow::Result<()> {
    let signals = Signals::new().context("installing SIGTERM/SIGHUP/SIGINT handlers")?;
    let mut app = App::new(snapshots.borrow_and_update().clone());
    app.set_notice(notice);
    let guard = TerminalGuard::enter().context("setting up the terminal")?;
    let mut ui = Ui {
        guard,
        app,
        events: EventStream::new(),
        commands,
        snapshots,
        signals,
        can_draw: true,
    };
    let result = match ui.main_loop().await {
        Exit::EngineGone => Err(anyhow!(
            "the engine stopped unexpectedly (its channel to the UI closed)"
        )),
        Exit::Quit | Exit::Signal => {
            ui.shutdown().await;
            Ok(())
        }
        Exit::Failed(err) => {
            ui.shutdown().await;
            Err(err)
        }
    };
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
    commands: CommandSender,
    snapshots: SnapshotReceiver,
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
            if dirty {
                let app = &self.app;
                if let Err(err) = self.guard.draw(|frame| app.draw(frame)) {
                    self.can_draw = false;
                    return Exit::Failed(anyhow::Error::new(err).context("drawing the screen"));
                }
                dirty = false;
            }
            if self.app.should_quit() {
                return Exit::Quit;
            }
            tokio::select! {
                event = self.events.next() => match event {
                    Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                        dirty = true;
                        for command in self.app.handle_key(key) {
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
                signal = self.signals.recv() => {
                    if signal == TermSignal::Hangup {
                        self.can_draw = false;
                    }
                    return Exit::Signal;
                }
            }
        }
    }

    /// Queues `command` for the engine without waiting.
    fn send(&mut self, command: Command) -> Result<(), Exit> {
        match self.commands.try_send(command) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.app
                    .set_notice(Some("engine busy: command not sent, try again".to_owned()));
                Ok(())
            }
            Err(TrySendError::Closed(_)) => Err(Exit::EngineGone),
        }
    }

    /// Draws if the terminal is still there; a failure means it is not.
    fn try_draw(&mut self) {
        if self.can_draw && terminal::is_active() {
            let app = &self.app;
            if self.guard.draw(|frame| app.draw(frame)).is_err() {
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
        let (reply, replied) = oneshot::channel();
        let commands = self.commands.clone();
        let wait = async move {
            if commands.send(Command::Shutdown(reply)).await.is_err() {
                return Shutdown::EngineGone;
            }
            match replied.await {
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
                        if keymap::lookup(Context::Global, &key) == Some(Action::Quit) {
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

    use super::*;

    /// The binary may `tokio::spawn` the UI, so its future must be `Send` (checked at
    /// compile time; the future is never polled, so no terminal is touched).
    #[test]
    fn run_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let (commands, _engine_side) = tokio::sync::mpsc::channel(1);
        let (_publisher, snapshots) = tokio::sync::watch::channel(Arc::new(Snapshot::default()));
        let future = run(commands, snapshots);
        assert_send(&future);
    }
}
