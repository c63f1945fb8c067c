//! External programs run when a torrent is added (`on_added`) or completes (`on_complete`),
//! as qBittorrent's "run external program", but never through a shell: each element of
//! the configured list becomes exactly one argument, after its placeholders (`%N`, `%F`,
//! ... see [`expand`]) are replaced. Whatever a torrent's name holds (quotes, spaces,
//! `$(...)`, backticks, newlines) reaches the program as data and is never executed.
//!
//! A program runs detached from the session: a task spawns it (stdin from `/dev/null`,
//! stdout discarded, stderr captured, its last [`STDERR_TAIL`] bytes kept), at most
//! [`MAX_RUNNING_HOOKS`] at once, in a process group of its own, which is killed after
//! `hook_timeout` seconds (what the program started goes too). When it ends, one
//! [`SessionEvent::HookDone`] carries a line for the torrent's log: its exit code, signal,
//! "killed after N s" or "could not start: ...", and the tail of its stderr.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::{Semaphore, mpsc};

use super::ctx::SessionEvent;
use crate::api::{EventLevel, TorrentId};

/// Programs running at once, session-wide; more wait for a slot (300 torrents completing
/// at once do not start 300 processes).
pub const MAX_RUNNING_HOOKS: usize = 4;

/// Bytes of a program's stderr kept: the last ones written.
pub const STDERR_TAIL: usize = 2048;

/// How long the stderr of a program that ended is still read (a child of it may hold the
/// pipe open), before the tail read so far is taken.
const STDERR_GRACE: Duration = Duration::from_secs(1);

/// Which configured program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookWhen {
    /// `on_added`: a torrent was added by the user (not restored at start).
    Added,
    /// `on_complete`: every wanted piece of a torrent is verified.
    Completed,
}

impl HookWhen {
    /// The config key naming the program: `"on_added"` or `"on_complete"`.
    pub fn key(self) -> &'static str {
        match self {
            HookWhen::Added => "on_added",
            HookWhen::Completed => "on_complete",
        }
    }
}

/// The values the placeholders of an argument stand for, each as the program receives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookVars {
    /// `%N`: the torrent's name as shown (the name used on disk).
    pub name: String,
    /// `%L`: the category (`""` without one; a subcategory as `tv/hd`).
    pub category: String,
    /// `%G`: the tags, comma-separated in the order given (`""` without any).
    pub tags: String,
    /// `%F`: the content path: the single file of a single-file torrent, else its folder.
    pub content_path: String,
    /// `%R`: the root folder of a multi-file torrent; empty for a single file.
    pub root_path: String,
    /// `%D`: the save path (the folder the content is in).
    pub save_path: String,
    /// `%C`: the number of files (padding files not counted).
    pub file_count: usize,
    /// `%Z`: the payload size, bytes (padding not counted).
    pub size: u64,
    /// `%T`: the tracker that last answered, else the first one; empty without trackers.
    pub tracker: String,
    /// `%I`: the v1 info hash, 40 lower-case hex digits.
    pub info_hash_v1: String,
    /// `%J`: the v2 info hash, 64 lower-case hex digits (BEP 52); empty for a v1 torrent.
    pub info_hash_v2: String,
    /// `%K`: the torrent id as qBittorrent gives it: the info hash in hex.
    pub torrent_id: String,
}

/// `arg` with its placeholders replaced: `%N` name, `%L` category, `%G` tags, `%F` content
/// path, `%R` root path, `%D` save path, `%C` file count, `%Z` size in bytes, `%T` current
/// tracker, `%I` v1 info hash, `%J` v2 info hash, `%K` torrent id (see [`HookVars`]);
/// `%%` is a literal `%`. Any other `%x`, and a `%` at the end, stay as written. Values are
/// inserted as they are (never split, quoted or scanned for placeholders again).
///
/// `expand("name=%N (%Z bytes) 100%%", vars)` → `"name=ubuntu.iso (2048 bytes) 100%"`.
pub fn expand(arg: &str, vars: &HookVars) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut chars = arg.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(code) = chars.next() else {
            out.push('%');
            break;
        };
        match code {
            '%' => out.push('%'),
            'N' => out.push_str(&vars.name),
            'L' => out.push_str(&vars.category),
            'G' => out.push_str(&vars.tags),
            'F' => out.push_str(&vars.content_path),
            'R' => out.push_str(&vars.root_path),
            'D' => out.push_str(&vars.save_path),
            'C' => out.push_str(&vars.file_count.to_string()),
            'Z' => out.push_str(&vars.size.to_string()),
            'T' => out.push_str(&vars.tracker),
            'I' => out.push_str(&vars.info_hash_v1),
            'J' => out.push_str(&vars.info_hash_v2),
            'K' => out.push_str(&vars.torrent_id),
            other => {
                out.push('%');
                out.push(other);
            }
        }
    }
    out
}

/// The argument list to run for `template` (the config's list, program first): the
/// program as written, each argument [`expand`]ed. `None` for an empty list (off).
pub fn command_line(template: &[String], vars: &HookVars) -> Option<Vec<String>> {
    let (program, args) = template.split_first()?;
    let mut argv = Vec::with_capacity(template.len());
    argv.push(program.clone());
    argv.extend(args.iter().map(|a| expand(a, vars)));
    Some(argv)
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (its number), not our timeout.
    Signalled(i32),
    /// It ran past the timeout and was killed; the timeout, seconds.
    Killed(u64),
    /// It could not be started (the OS error: "No such file or directory (os error 2)").
    NotStarted(String),
}

impl Outcome {
    /// Info for exit code 0, Warn otherwise.
    pub fn level(&self) -> EventLevel {
        match self {
            Outcome::Exited(0) => EventLevel::Info,
            _ => EventLevel::Warn,
        }
    }
}

/// What a finished program reports: how it ended and the last bytes of its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub outcome: Outcome,
    /// The last (at most [`STDERR_TAIL`]) bytes it wrote to stderr, as written.
    pub stderr_tail: Vec<u8>,
}

impl Finished {
    /// The log line for torrent `name`'s `when` program `program`: how it ended, and its
    /// stderr tail (made safe for a terminal: breaks and controls shown harmlessly), e.g.
    /// `on_complete program /bin/false exited with code 1; stderr: disk full`.
    pub fn message(&self, name: &str, when: HookWhen, program: &str) -> String {
        let how = match &self.outcome {
            Outcome::Exited(code) => format!("exited with code {code}"),
            Outcome::Signalled(sig) => format!("ended by signal {sig}"),
            Outcome::Killed(secs) => format!("killed after {secs} s (hook_timeout)"),
            Outcome::NotStarted(e) => format!("could not start: {e}"),
        };
        let mut msg = format!("{name}: {} program {program} {how}", when.key());
        let tail = String::from_utf8_lossy(&self.stderr_tail);
        let tail = crate::untrusted::line(tail.trim());
        if !tail.is_empty() {
            msg.push_str("; stderr: ");
            msg.push_str(&tail);
        }
        msg
    }
}

/// The session's runner of programs: the slots they take and where their results go.
#[derive(Debug, Clone)]
pub struct HookRunner {
    slots: Arc<Semaphore>,
    events: mpsc::UnboundedSender<SessionEvent>,
    timeout: Duration,
}

impl HookRunner {
    /// A runner allowing [`MAX_RUNNING_HOOKS`] programs at once, each killed after
    /// `timeout_secs` seconds (at least 1); results go to `events`.
    pub fn new(events: mpsc::UnboundedSender<SessionEvent>, timeout_secs: u32) -> HookRunner {
        HookRunner {
            slots: Arc::new(Semaphore::new(MAX_RUNNING_HOOKS)),
            events,
            timeout: Duration::from_secs(u64::from(timeout_secs.max(1))),
        }
    }

    /// Run `argv` (program first, placeholders already expanded) for torrent `torrent`
    /// named `name`, detached: this returns at once; a [`SessionEvent::HookDone`] follows
    /// when the program ends. Needs a Tokio runtime.
    pub fn spawn(&self, torrent: TorrentId, name: String, when: HookWhen, argv: Vec<String>) {
        if argv.is_empty() {
            return;
        }
        let runner = self.clone();
        tokio::spawn(async move {
            // the semaphore is never closed
            let Ok(_slot) = runner.slots.acquire().await else {
                return;
            };
            let finished = run(&argv, runner.timeout).await;
            let level = finished.outcome.level();
            let message = finished.message(&name, when, &argv[0]);
            let _ = runner.events.send(SessionEvent::HookDone {
                torrent,
                level,
                message,
            });
        });
    }
}

/// Run `argv` (program first) without a shell and wait for it, at most `timeout`; then it
/// is killed (SIGKILL). stdin is `/dev/null`, stdout discarded, stderr's tail kept.
pub async fn run(argv: &[String], timeout: Duration) -> Finished {
    let Some((program, args)) = argv.split_first() else {
        return Finished {
            outcome: Outcome::NotStarted("no program given".into()),
            stderr_tail: Vec::new(),
        };
    };
    // a process group of its own: the terminal's Ctrl-C does not reach it, and the
    // timeout kills what it started too (a script's children)
    let spawned = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return Finished {
                outcome: Outcome::NotStarted(e.to_string()),
                stderr_tail: Vec::new(),
            };
        }
    };
    // the tail so far stays readable if a child of the program keeps the pipe open
    let tail = Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = child.stderr.take().map(|mut err| {
        let tail = tail.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match err.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                        t.extend_from_slice(&buf[..n]);
                        if t.len() > STDERR_TAIL {
                            let cut = t.len() - STDERR_TAIL;
                            t.drain(..cut);
                        }
                    }
                }
            }
        })
    });
    let outcome = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => exit_outcome(status),
        Ok(Err(e)) => Outcome::NotStarted(format!("waiting for it failed: {e}")),
        Err(_) => {
            if let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) {
                // SAFETY: kill(2) on the group this child leads; no memory is touched
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
            let _ = child.start_kill();
            let _ = child.wait().await;
            Outcome::Killed(timeout.as_secs())
        }
    };
    if let Some(mut task) = reader
        && tokio::time::timeout(STDERR_GRACE, &mut task).await.is_err()
    {
        task.abort();
    }
    let stderr_tail = std::mem::take(&mut *tail.lock().unwrap_or_else(|p| p.into_inner()));
    Finished {
        outcome,
        stderr_tail,
    }
}

fn exit_outcome(status: std::process::ExitStatus) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Outcome::Exited(code),
        (None, Some(sig)) => Outcome::Signalled(sig),
        (None, None) => Outcome::Exited(-1),
    }
}

#[cfg(test)]
mod tests;
