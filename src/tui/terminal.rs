//! Terminal set-up and the one guard that puts it back: raw mode, alternate screen and
//! hidden cursor on [`TerminalGuard::enter`]; restored on [`TerminalGuard::restore`], on drop
//! (every return path, `?` included) and in a panic hook that restores *before* the panic
//! message is printed, so the message is readable and the shell is usable afterwards.
//! Signals (SIGTERM, SIGHUP) are handled by the event loop, which returns normally and so
//! drops the guard.

use std::io::{self, Stdout, stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::{Hide, Show};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use crossterm::{execute, queue};
use ratatui::backend::CrosstermBackend;
use ratatui::{Frame, Terminal};

/// Whether the terminal is currently in our raw/alternate-screen state. Shared with the panic
/// hook so that restoring happens exactly once, whoever gets there first.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The panic hook is installed once per process, however often the UI starts.
static PANIC_HOOK: Once = Once::new();

/// Owns the ratatui terminal while the UI runs; restores the terminal when dropped.
pub struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    /// Installs the panic hook, enables raw mode, enters the alternate screen and hides the
    /// cursor.
    ///
    /// Errors: any I/O error from the terminal (e.g. stdout is not a terminal); whatever was
    /// already changed is put back before returning it.
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let setup = execute!(stdout(), EnterAlternateScreen, Hide)
            .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match setup {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(err) => {
                let _ = restore_terminal();
                Err(err)
            }
        }
    }

    /// Draws one frame inside a synchronized update (DEC mode 2026), so terminals that
    /// support it show the frame at once instead of tearing over slow links; others ignore
    /// the escape sequences. ratatui sends only the cells that changed since the last frame.
    ///
    /// Errors: I/O errors writing to the terminal.
    pub fn draw(&mut self, render: impl FnOnce(&mut Frame)) -> io::Result<()> {
        queue!(self.terminal.backend_mut(), BeginSynchronizedUpdate)?;
        let drawn = self.terminal.draw(render).map(|_| ());
        // End the update even if drawing failed half-way, or the terminal stays frozen.
        let ended = execute!(self.terminal.backend_mut(), EndSynchronizedUpdate);
        drawn.and(ended)
    }

    /// Puts the terminal back (raw mode off, main screen, cursor shown). Idempotent; the
    /// guard's drop does the same, this variant reports errors.
    pub fn restore(&mut self) -> io::Result<()> {
        restore_terminal()
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = restore_terminal();
    }
}

/// Restores the terminal if [`TerminalGuard::enter`] changed it and nobody restored it yet.
/// Tries every step even if one fails and returns the first error.
///
/// Public so a binary can call it from its own fatal-error paths; calling it when the UI is
/// not running does nothing.
pub fn restore_terminal() -> io::Result<()> {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let raw = disable_raw_mode();
    let screen = execute!(stdout(), LeaveAlternateScreen, Show);
    raw.and(screen)
}

/// Whether the terminal is still in the UI state. Turns `false` when a panic on any thread
/// (e.g. a task elsewhere in the process) restored it; the UI loop then stops drawing.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Chains a hook in front of the current panic hook that restores the terminal first.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = restore_terminal();
            previous(info);
        }));
    });
}
