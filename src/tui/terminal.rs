//! Terminal set-up and the one guard that puts it back: raw mode, alternate screen and
//! hidden cursor (and mouse capture when asked) on [`TerminalGuard::enter`]; restored on
//! [`TerminalGuard::restore`], on drop (every return path, `?` included) and in a panic hook
//! that restores *before* the panic message is printed, so the message is readable and the
//! shell is usable afterwards. Signals (SIGTERM, SIGHUP) are handled by the event loop, which
//! returns normally and so drops the guard.
//!
//! What reaches the terminal goes through two filters:
//! - [`QuietBackend`]: a frame whose cells did not change writes nothing at all (no colour
//!   reset, no cursor hide, no synchronized-update brackets), so an idle screen costs no
//!   bytes over SSH.
//! - [`AnsiWriter`]: the 16 named colours go out as SGR 30–37/90–97 (40–47/100–107), which
//!   every terminal draws with the user's palette, instead of the 256-colour indices
//!   (`38;5;N`) crossterm writes for them.

use std::io::{self, BufWriter, Stdout, Write, stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::{Hide, MoveTo, Show};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use crossterm::{execute, queue};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::{Frame, Terminal};

/// Whether the terminal is currently in our raw/alternate-screen state. Shared with the panic
/// hook so that restoring happens exactly once, whoever gets there first.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether mouse capture was turned on (to turn it off again on restore).
static MOUSE: AtomicBool = AtomicBool::new(false);
/// The panic hook is installed once per process, however often the UI starts.
static PANIC_HOOK: Once = Once::new();

/// The writer under the backend: SGR rewriting over a buffered stdout.
pub type ScreenWriter = AnsiWriter<BufWriter<Stdout>>;

/// Owns the ratatui terminal while the UI runs; restores the terminal when dropped.
pub struct TerminalGuard {
    terminal: Terminal<QuietBackend<CrosstermBackend<ScreenWriter>>>,
}

impl TerminalGuard {
    /// Installs the panic hook, enables raw mode, enters the alternate screen and clears it
    /// (a run killed with `kill -9` leaves the terminal in it, with its text, and the first
    /// frame writes only what differs from blank), hides the cursor, turns on bracketed paste (a paste arrives as one text, not as keys) and, with
    /// `mouse`, captures mouse events.
    ///
    /// Errors: any I/O error from the terminal (e.g. stdout is not a terminal); whatever was
    /// already changed is put back before returning it.
    pub fn enter(mouse: bool) -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let setup = execute!(
            stdout(),
            EnterAlternateScreen,
            crossterm::terminal::Clear(crossterm::terminal::ClearType::All),
            MoveTo(0, 0),
            Hide,
            EnableBracketedPaste
        )
        .and_then(|()| {
            if mouse {
                MOUSE.store(true, Ordering::SeqCst);
                execute!(stdout(), EnableMouseCapture)
            } else {
                Ok(())
            }
        })
        .and_then(|()| {
            let writer = AnsiWriter::new(BufWriter::with_capacity(64 * 1024, stdout()));
            Terminal::new(QuietBackend::new(CrosstermBackend::new(writer)))
        });
        match setup {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(err) => {
                let _ = restore_terminal();
                Err(err)
            }
        }
    }

    /// Draws one frame. Only changed cells are sent, inside a synchronized update (DEC mode
    /// 2026) so terminals that support it show the frame at once; an unchanged frame sends
    /// nothing.
    ///
    /// Errors: I/O errors writing to the terminal.
    pub fn draw(&mut self, render: impl FnOnce(&mut Frame)) -> io::Result<()> {
        self.terminal.draw(render).map(|_| ())
    }

    /// Forgets what is on the screen so the next [`TerminalGuard::draw`] repaints every cell
    /// (after a resize, ratatui does this by itself).
    ///
    /// Errors: I/O errors writing to the terminal.
    pub fn clear(&mut self) -> io::Result<()> {
        self.terminal.clear()
    }

    /// Puts the terminal back (raw mode off, main screen, cursor shown). Idempotent; the
    /// guard's drop does the same, this variant reports errors.
    pub fn restore(&mut self) -> io::Result<()> {
        let _ = self.terminal.backend_mut().flush();
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
    let mouse = if MOUSE.swap(false, Ordering::SeqCst) {
        execute!(stdout(), DisableMouseCapture)
    } else {
        Ok(())
    };
    let raw = disable_raw_mode();
    let screen = execute!(stdout(), DisableBracketedPaste, LeaveAlternateScreen, Show);
    raw.and(screen).and(mouse)
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

/// A backend wrapper that writes nothing for a frame without changed cells, and brackets
/// the frames that do change in a synchronized update.
///
/// ratatui's `Terminal::draw` always resets colours and hides (or moves) the cursor after
/// the cell diff, even when the diff is empty; this wrapper drops those writes unless the
/// cursor's visibility or position really changes.
#[derive(Debug)]
pub struct QuietBackend<B> {
    inner: B,
    /// Cells were written since the last flush.
    dirty: bool,
    /// Cursor shown (as last sent).
    cursor_shown: Option<bool>,
    /// Cursor position as last sent.
    cursor_at: Option<Position>,
}

impl<B> QuietBackend<B> {
    /// Wraps `inner`.
    pub fn new(inner: B) -> Self {
        QuietBackend {
            inner,
            dirty: false,
            cursor_shown: None,
            cursor_at: None,
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The wrapped backend, mutably.
    pub fn inner_mut(&mut self) -> &mut B {
        &mut self.inner
    }
}

impl<W: Write> Backend for QuietBackend<CrosstermBackend<W>> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let mut content = content.peekable();
        if content.peek().is_none() {
            return Ok(());
        }
        if !self.dirty {
            queue!(self.inner, BeginSynchronizedUpdate)?;
            self.dirty = true;
        }
        // The cursor moves while cells are written.
        self.cursor_at = None;
        self.inner.draw(content)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        if self.cursor_shown != Some(false) {
            self.cursor_shown = Some(false);
            self.dirty_begin()?;
            self.inner.hide_cursor()?;
        }
        Ok(())
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        if self.cursor_shown != Some(true) {
            self.cursor_shown = Some(true);
            self.dirty_begin()?;
            self.inner.show_cursor()?;
        }
        Ok(())
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let position = position.into();
        if self.cursor_at != Some(position) {
            self.cursor_at = Some(position);
            self.dirty_begin()?;
            queue!(self.inner, MoveTo(position.x, position.y))?;
        }
        Ok(())
    }

    fn clear(&mut self) -> io::Result<()> {
        self.dirty_begin()?;
        self.cursor_at = None;
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.dirty_begin()?;
        self.cursor_at = None;
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.dirty {
            self.dirty = false;
            queue!(self.inner, EndSynchronizedUpdate)?;
            // The cursor is put back after a frame: keep it where ratatui left it.
            Backend::flush(&mut self.inner)?;
        }
        Ok(())
    }
}

impl<W: Write> QuietBackend<CrosstermBackend<W>> {
    fn dirty_begin(&mut self) -> io::Result<()> {
        if !self.dirty {
            queue!(self.inner, BeginSynchronizedUpdate)?;
            self.dirty = true;
        }
        Ok(())
    }
}

/// Rewrites SGR colour parameters `38;5;N` / `48;5;N` with `N` < 16 (what crossterm sends for
/// the 16 named colours) into the classic SGR 30–37/90–97 and 40–47/100–107, which 16-colour
/// terminals understand and which follow the user's palette. Everything else passes
/// through unchanged; sequences split across writes are reassembled. Counts the bytes
/// written after rewriting.
#[derive(Debug)]
pub struct AnsiWriter<W> {
    inner: W,
    /// Bytes of an escape sequence seen so far (starting with ESC).
    pending: Vec<u8>,
    written: u64,
}

/// Longest escape sequence held back; longer ones pass through unchanged.
const MAX_SEQUENCE: usize = 64;

impl<W: Write> AnsiWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        AnsiWriter {
            inner,
            pending: Vec::new(),
            written: 0,
        }
    }

    /// Bytes passed on to the inner writer so far.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.written += bytes.len() as u64;
        self.inner.write_all(bytes)
    }

    /// The pending sequence is complete (or given up on): rewrite it if it is SGR, emit it.
    fn finish_sequence(&mut self) -> io::Result<()> {
        let seq = std::mem::take(&mut self.pending);
        match rewrite_sgr(&seq) {
            Some(new) => self.emit(&new),
            None => self.emit(&seq),
        }
    }
}

/// `ESC [ params m` with 256-colour indices below 16 rewritten; `None` when nothing changes.
fn rewrite_sgr(seq: &[u8]) -> Option<Vec<u8>> {
    let params = seq.strip_prefix(b"\x1b[")?.strip_suffix(b"m")?;
    let text = std::str::from_utf8(params).ok()?;
    let parts: Vec<&str> = text.split(';').collect();
    let mut out: Vec<String> = Vec::with_capacity(parts.len());
    let mut changed = false;
    let mut i = 0;
    while i < parts.len() {
        let p = parts[i];
        if (p == "38" || p == "48")
            && parts.get(i + 1) == Some(&"5")
            && let Some(n) = parts.get(i + 2).and_then(|n| n.parse::<u8>().ok())
        {
            {
                if n < 16 {
                    let base = match (p == "38", n < 8) {
                        (true, true) => 30,
                        (true, false) => 90 - 8,
                        (false, true) => 40,
                        (false, false) => 100 - 8,
                    };
                    out.push((base + u32::from(n)).to_string());
                    changed = true;
                } else {
                    out.extend([p.to_owned(), "5".to_owned(), n.to_string()]);
                }
                i += 3;
                continue;
            }
        }
        if (p == "38" || p == "48") && parts.get(i + 1) == Some(&"2") {
            // truecolor: copy the whole group untouched
            let end = (i + 5).min(parts.len());
            out.extend(parts[i..end].iter().map(|s| (*s).to_owned()));
            i = end;
            continue;
        }
        out.push(p.to_owned());
        i += 1;
    }
    changed.then(|| format!("\x1b[{}m", out.join(";")).into_bytes())
}

impl<W: Write> Write for AnsiWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        for (i, &b) in buf.iter().enumerate() {
            if self.pending.is_empty() {
                if b == 0x1b {
                    self.emit(&buf[start..i])?;
                    self.pending.push(b);
                    start = i + 1;
                }
                continue;
            }
            self.pending.push(b);
            start = i + 1;
            let len = self.pending.len();
            let done = if len == 2 {
                // only CSI (ESC [) sequences are examined
                b != b'['
            } else {
                (0x40..=0x7e).contains(&b) || len >= MAX_SEQUENCE
            };
            if done {
                self.finish_sequence()?;
            }
        }
        if self.pending.is_empty() {
            self.emit(&buf[start..])?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.finish_sequence()?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Style};
    use ratatui::text::Line;

    use super::*;

    fn through(chunks: &[&[u8]]) -> Vec<u8> {
        let mut w = AnsiWriter::new(Vec::new());
        for c in chunks {
            w.write_all(c).unwrap();
        }
        w.flush().unwrap();
        w.inner
    }

    #[test]
    fn named_colours_become_classic_sgr() {
        assert_eq!(through(&[b"\x1b[38;5;6m"]), b"\x1b[36m");
        assert_eq!(through(&[b"\x1b[38;5;14;48;5;4m"]), b"\x1b[96;44m");
        assert_eq!(through(&[b"\x1b[48;5;9m"]), b"\x1b[101m");
        // split across writes, with text around
        assert_eq!(
            through(&[b"ab\x1b[", b"38;5;", b"2", b"mcd\x1b[0m"]),
            b"ab\x1b[32mcd\x1b[0m"
        );
        // 256-colour and truecolor untouched; other sequences untouched
        assert_eq!(through(&[b"\x1b[38;5;200m"]), b"\x1b[38;5;200m");
        assert_eq!(through(&[b"\x1b[38;2;1;5;6m"]), b"\x1b[38;2;1;5;6m");
        assert_eq!(
            through(&[b"\x1b[2J\x1b[?2026h\x1b7x"]),
            b"\x1b[2J\x1b[?2026h\x1b7x"
        );
    }

    /// A writer whose bytes the test can read while the terminal owns it.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn unchanged_frames_write_nothing() {
        let out = Shared::default();
        let writer = AnsiWriter::new(out.clone());
        let mut terminal = Terminal::with_options(
            QuietBackend::new(CrosstermBackend::new(writer)),
            ratatui::TerminalOptions {
                viewport: ratatui::Viewport::Fixed(ratatui::layout::Rect::new(0, 0, 20, 2)),
            },
        )
        .unwrap();
        let mut draw = |text: &str| {
            terminal
                .draw(|f| {
                    f.render_widget(
                        Line::styled(text.to_owned(), Style::new().fg(Color::Cyan)),
                        f.area(),
                    )
                })
                .unwrap();
            out.0.lock().unwrap().len()
        };
        let first = draw("hello");
        assert!(first > 0);
        let second = draw("hello");
        assert_eq!(second, first, "an unchanged frame writes nothing");
        let third = draw("hellp");
        assert!(third > second && third - second < 60, "{}", third - second);
        let bytes = out.0.lock().unwrap().clone();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.contains("\x1b[36;49m") || text.contains("\x1b[36m"),
            "{text:?}"
        );
        assert!(!text.contains("38;5;"), "{text:?}");
    }
}
