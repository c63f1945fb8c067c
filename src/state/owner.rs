//! One engine per state folder: the owner file `engine.lock`.
//!
//! The process that runs an engine on a state folder (a TUI without a daemon, or the
//! daemon) holds an exclusive lock (`flock(2)`) on `<state folder>/engine.lock` for as long
//! as it runs, and writes in it who it is: its pid, whether it is a daemon, and the path of
//! its control socket. The kernel drops the lock when the process ends, however it ends
//! (`kill -9` included), so a stale file never blocks a restart; its text is then simply
//! written again.
//!
//! A second process reads that text to say who runs ([`Claim::Taken`]): a TUI started
//! while a daemon runs attaches to the daemon's socket; anything else refuses, naming the
//! running one by pid and state folder. The redb lock of the state store stays as a second
//! guard ([`super::StateError::Locked`]).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The owner file's name inside the state folder.
pub const OWNER_FILE: &str = "engine.lock";

/// What kind of process runs the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerKind {
    /// `ratorrent daemon`: serves a control socket a TUI can attach to.
    Daemon,
    /// The TUI with its engine in the same process (no socket).
    Tui,
}

impl OwnerKind {
    fn word(self) -> &'static str {
        match self {
            OwnerKind::Daemon => "daemon",
            OwnerKind::Tui => "tui",
        }
    }
}

/// Who runs the engine on a state folder, as its owner file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerInfo {
    /// Its process id.
    pub pid: u32,
    /// Daemon or TUI.
    pub kind: OwnerKind,
    /// The daemon's control socket (`None` for a TUI).
    pub socket: Option<PathBuf>,
}

impl OwnerInfo {
    /// The owner file's text: `pid=N`, `kind=daemon|tui` and `socket=PATH` lines.
    fn text(&self) -> String {
        let mut t = format!("pid={}\nkind={}\n", self.pid, self.kind.word());
        if let Some(s) = &self.socket {
            t.push_str(&format!("socket={}\n", s.display()));
        }
        t
    }

    /// Read [`OwnerInfo::text`] back; `None` when it is incomplete (being written).
    fn parse(text: &str) -> Option<OwnerInfo> {
        let mut pid = None;
        let mut kind = None;
        let mut socket = None;
        for line in text.lines() {
            match line.split_once('=') {
                Some(("pid", v)) => pid = v.trim().parse().ok(),
                Some(("kind", "daemon")) => kind = Some(OwnerKind::Daemon),
                Some(("kind", "tui")) => kind = Some(OwnerKind::Tui),
                Some(("socket", v)) if !v.is_empty() => socket = Some(PathBuf::from(v)),
                _ => {}
            }
        }
        Some(OwnerInfo {
            pid: pid?,
            kind: kind?,
            socket,
        })
    }

    /// `the daemon (pid 1234)` / `a ratorrent TUI (pid 1234)`, for messages.
    pub fn describe(&self) -> String {
        match self.kind {
            OwnerKind::Daemon => format!("the ratorrent daemon (pid {})", self.pid),
            OwnerKind::Tui => format!("a ratorrent TUI (pid {})", self.pid),
        }
    }
}

/// The lock on a state folder, held while this process runs its engine; released when
/// dropped (or when the process ends).
#[derive(Debug)]
pub struct Owner {
    _file: File,
    path: PathBuf,
}

/// Why [`Owner::claim`] did not get the state folder.
#[derive(Debug, thiserror::Error)]
pub enum Claim {
    /// Another process runs an engine on it; `owner` is what its file says (`None` when
    /// it could not be read).
    #[error("{} is already running with the state in {}{}", owner.as_ref().map_or_else(|| "another ratorrent".to_owned(), OwnerInfo::describe), dir.display(), hint(owner.as_ref()))]
    Taken {
        /// The state folder.
        dir: PathBuf,
        /// Who holds it.
        owner: Option<OwnerInfo>,
    },
    /// The owner file could not be created, locked or written.
    #[error("session state in {}: {error}", dir.display())]
    Io {
        /// The state folder.
        dir: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

fn hint(owner: Option<&OwnerInfo>) -> &'static str {
    match owner.map(|o| o.kind) {
        Some(OwnerKind::Daemon) => {
            " (attach to it with `ratorrent attach`, or stop it first: `systemctl --user stop ratorrent` or kill it)"
        }
        _ => " (quit it first, or give this one another data directory with XDG_DATA_HOME)",
    }
}

/// How long a reader waits for an owner that holds the lock but has not written its file
/// yet (it is starting).
const WRITE_WAIT: Duration = Duration::from_secs(2);

impl Owner {
    /// Take the state folder `dir` (created if missing) for this process, writing `info`
    /// in its owner file.
    ///
    /// # Errors
    /// [`Claim::Taken`] when another process holds it (with what its file says);
    /// [`Claim::Io`] when the file cannot be opened or written.
    pub fn claim(dir: &Path, info: &OwnerInfo) -> Result<Owner, Claim> {
        let io = |error| Claim::Io {
            dir: dir.to_path_buf(),
            error,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let path = dir.join(OWNER_FILE);
        // never truncated before the lock is ours: the text is the running owner's
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Claim::Taken {
                    dir: dir.to_path_buf(),
                    owner: read_owner(&mut file),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(info.text().as_bytes()).map_err(io)?;
        Ok(Owner { _file: file, path })
    }

    /// Who runs an engine on `dir` now, if anyone: `None` when nobody holds the lock (or
    /// there is no owner file).
    pub fn running(dir: &Path) -> Option<OwnerInfo> {
        let mut file = File::open(dir.join(OWNER_FILE)).ok()?;
        match file.try_lock_shared() {
            // free: nobody runs (our shared lock goes with the file)
            Ok(()) => None,
            Err(TryLockError::WouldBlock) => read_owner(&mut file),
            Err(TryLockError::Error(_)) => None,
        }
    }

    /// The owner file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The text of a locked owner file, waiting up to [`WRITE_WAIT`] while it is still empty
/// (its owner has just taken the lock).
fn read_owner(file: &mut File) -> Option<OwnerInfo> {
    let start = std::time::Instant::now();
    loop {
        let mut text = String::new();
        let read = file.rewind().and_then(|()| file.read_to_string(&mut text));
        if let Some(info) = read.ok().and_then(|_| OwnerInfo::parse(&text)) {
            return Some(info);
        }
        if start.elapsed() > WRITE_WAIT {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daemon(pid: u32) -> OwnerInfo {
        OwnerInfo {
            pid,
            kind: OwnerKind::Daemon,
            socket: Some(PathBuf::from("/run/user/1000/ratorrent/control-ab.sock")),
        }
    }

    #[test]
    fn the_text_round_trips_and_an_incomplete_one_is_none() {
        let d = daemon(42);
        assert_eq!(OwnerInfo::parse(&d.text()), Some(d));
        let t = OwnerInfo {
            pid: 7,
            kind: OwnerKind::Tui,
            socket: None,
        };
        assert_eq!(OwnerInfo::parse(&t.text()), Some(t));
        assert_eq!(OwnerInfo::parse(""), None);
        assert_eq!(OwnerInfo::parse("pid=3\n"), None);
        assert_eq!(OwnerInfo::parse("pid=x\nkind=tui\n"), None);
    }

    #[test]
    fn a_second_claim_is_refused_naming_the_first_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        assert_eq!(Owner::running(&state), None, "no file yet");
        let first = Owner::claim(&state, &daemon(1234)).unwrap();
        assert_eq!(first.path(), state.join(OWNER_FILE));
        assert_eq!(Owner::running(&state), Some(daemon(1234)));
        // a lock is per open file: a second open in this process is refused like
        // another process
        let err = Owner::claim(&state, &daemon(99)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("the ratorrent daemon (pid 1234) is already running with the state in")
                && text.contains(&state.display().to_string())
                && text.contains("ratorrent attach"),
            "{text}"
        );
        assert!(
            matches!(&err, Claim::Taken { owner: Some(o), .. } if o.pid == 1234),
            "{err:?}"
        );
        // the file still names the first owner
        assert_eq!(Owner::running(&state), Some(daemon(1234)));
        drop(first);
        assert_eq!(Owner::running(&state), None, "released with the owner");
        // a shorter text replaces a longer one whole
        let tui = OwnerInfo {
            pid: 5,
            kind: OwnerKind::Tui,
            socket: None,
        };
        let _second = Owner::claim(&state, &tui).unwrap();
        assert_eq!(Owner::running(&state), Some(tui.clone()));
        let err = Owner::claim(&state, &daemon(6)).unwrap_err().to_string();
        assert!(
            err.starts_with("a ratorrent TUI (pid 5) is already running")
                && err.contains("quit it first"),
            "{err}"
        );
    }
}
