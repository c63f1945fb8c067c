//! Watch folder: `.torrent` files dropped into a folder are added to the session, then
//! renamed `NAME.torrent.added` (added, or already in the session) or
//! `NAME.torrent.invalid` (refused; the reason goes to the log), as Transmission and
//! rtorrent users expect. `.magnet` files (one URI inside) are added as magnet links (the
//! engine fetches the metadata from peers, BEP 9).
//!
//! How a file is judged complete: the folder is watched with inotify (the `notify` crate).
//! A file is taken once it was **closed after writing** and then left alone for
//! [`SETTLE`], or as soon as it is **renamed into** the folder (`mv`, rsync's and most
//! downloaders' temp-then-rename). A file that was written to and not yet closed is never
//! read, however long its writer pauses. Files already there when the watcher starts (or
//! found by a rescan after an inotify queue overflow) are taken once their modification
//! time is [`SETTLE`] old.
//!
//! Scale: adds go one after another with at most [`MAX_IN_FLIGHT`] waiting for the engine
//! (the engine reads the file; the watcher never holds torrent contents), so 10,000 files
//! dropped at once are processed in order without flooding the command channel the UI
//! shares. The watcher keeps one small entry per pending file name. Names it must ignore
//! (`*.added`, `*.invalid`, hidden files, other extensions) never enter; its own renames
//! cannot loop. When nothing happens it does not wake up.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::api::{AddError, AddRequest, AddSource, Client, ClientError, TorrentId};
use crate::metainfo::Magnet;

/// A file closed after writing is taken once nothing touched it for this long (a writer
/// that closes and reopens between pieces gets this much grace).
pub const SETTLE: Duration = Duration::from_millis(500);
/// Adds sent to the engine and not answered yet, at most.
pub const MAX_IN_FLIGHT: usize = 4;
/// `.magnet` files larger than this are refused without reading them (the longest link
/// accepted, with room for whitespace).
pub const MAX_MAGNET_FILE_BYTES: u64 = crate::metainfo::magnet::MAX_LINK_BYTES as u64 + 4096;
/// File-system events queued between notify's thread and the watcher task; past this they
/// are dropped and the folder is rescanned instead (memory stays bounded).
const EVENT_QUEUE: usize = 4096;
/// Rescans (after an overflow) at most this often.
const RESCAN_INTERVAL: Duration = Duration::from_secs(1);
/// While the folder is missing (or cannot be watched), look again after this long,
/// doubling up to [`MISSING_POLL_MAX`].
const MISSING_POLL: Duration = Duration::from_secs(2);
const MISSING_POLL_MAX: Duration = Duration::from_secs(30);

/// What the watcher does with a file, judged by its name alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `NAME.torrent` (any case): added through [`Client::add`].
    Torrent,
    /// `NAME.magnet` (any case): one magnet URI inside.
    Magnet,
    /// Anything else: `*.added`, `*.invalid`, hidden files (`.name…`, rsync and editor
    /// temp files), other extensions. Never read, never renamed.
    Ignored,
}

/// How a file ended: the suffix it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Added, or already in the session: `.added`.
    Added,
    /// Refused: `.invalid`.
    Invalid,
}

impl Outcome {
    /// The suffix appended to the file name, with its dot.
    pub fn suffix(self) -> &'static str {
        match self {
            Outcome::Added => ".added",
            Outcome::Invalid => ".invalid",
        }
    }
}

/// Classify a file name (the last path component).
pub fn classify(name: &OsStr) -> FileKind {
    let b = name.as_encoded_bytes();
    let ends =
        |ext: &[u8]| b.len() > ext.len() && b[b.len() - ext.len()..].eq_ignore_ascii_case(ext);
    if b.first() == Some(&b'.') {
        FileKind::Ignored
    } else if ends(b".torrent") {
        FileKind::Torrent
    } else if ends(b".magnet") {
        FileKind::Magnet
    } else {
        FileKind::Ignored
    }
}

/// The name `path` is renamed to: `NAME.torrent.added` / `.invalid`, or, when that name is
/// taken already (`exists` says so), `NAME.torrent.2.added`, `.3.added`, … so an earlier
/// file is never overwritten. Every candidate still ends with the suffix, so the watcher
/// ignores it.
pub fn renamed(path: &Path, outcome: Outcome, exists: impl Fn(&Path) -> bool) -> PathBuf {
    let with = |extra: &str| {
        let mut s = path.as_os_str().to_owned();
        s.push(extra);
        s.push(outcome.suffix());
        PathBuf::from(s)
    };
    let first = with("");
    if !exists(&first) {
        return first;
    }
    (2..1000u32)
        .map(|n| with(&format!(".{n}")))
        .find(|p| !exists(p))
        .unwrap_or(first)
}

/// The magnet link of a `.magnet` file's text: one `magnet:?` URI on one line (surrounding
/// whitespace and blank lines allowed), parsed by [`Magnet::parse`].
///
/// # Errors
/// Empty, more than one line, or not a valid magnet link; the text says which.
pub fn parse_magnet_file(text: &str) -> Result<Magnet, String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(uri) = lines.next() else {
        return Err("the file is empty (it should hold one magnet: URI)".into());
    };
    if lines.next().is_some() {
        return Err("the file holds more than one line (it should hold one magnet: URI)".into());
    }
    Magnet::parse(uri).map_err(|e| e.to_string())
}

/// Send one add to the engine and wait for its answer; `None` when the session is
/// shutting down.
async fn add(
    source: AddSource,
    client: &Client,
    seed: bool,
) -> Option<Result<TorrentId, AddError>> {
    match client.add(AddRequest::new(source).seed(seed)).await {
        Ok(id) => Some(Ok(id)),
        Err(ClientError::Refused(e)) => Some(Err(e)),
        Err(ClientError::EngineGone | ClientError::Busy) => None,
    }
}

/// What the watcher needs.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The folder to watch (created when missing at start).
    pub dir: PathBuf,
    /// `seed` of every [`AddRequest`] (keep seeding once complete).
    pub seed: bool,
}

/// Create the watch folder if it is missing, for the caller to report a problem at start.
///
/// # Errors
/// It exists but is not a folder, or cannot be created; the text names it.
pub fn prepare(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!("watch folder {} is not a folder", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create watch folder {}: {e}", dir.display()))?;
            tracing::info!("watch folder: created {}", dir.display());
            Ok(())
        }
        Err(e) => Err(format!("cannot use watch folder {}: {e}", dir.display())),
    }
}

/// Watch `opts.dir` and add what is dropped there through `client`, until the engine
/// shuts down (the command channel closes or an add answers
/// [`AddError::ShuttingDown`]). Never fails: problems are logged, and a folder that is
/// missing or cannot be watched is looked for again every few seconds.
pub async fn run(opts: WatchOptions, client: Client) {
    run_with_queue(opts, client, EVENT_QUEUE).await;
}

/// [`run`] with the event queue `queue` long (tests make it tiny to force overflows).
async fn run_with_queue(opts: WatchOptions, client: Client, queue: usize) {
    let dir = std::path::absolute(&opts.dir).unwrap_or(opts.dir);
    if let Err(e) = prepare(&dir) {
        tracing::warn!("{e}");
    }
    let (tx, rx) = mpsc::channel(queue);
    let batch = queue;
    let mut w = Watch {
        dir,
        seed: opts.seed,
        client,
        tx,
        rx,
        overflow: Arc::new(AtomicBool::new(false)),
        watcher: None,
        absent: false,
        missing_poll: MISSING_POLL,
        look_again: None,
        files: HashMap::new(),
        due: BinaryHeap::new(),
        seq: 0,
        in_flight: FuturesUnordered::new(),
        stuck: HashSet::new(),
        rescan_at: None,
        last_scan: None,
        tally: Tally::default(),
        batch,
    };
    w.attach().await;
    w.run().await;
}

/// One pending file name.
#[derive(Debug)]
struct Entry {
    /// Bumped by every event; a deadline or an add for an older value is stale.
    version: u64,
    /// Written to and not closed since: never read in this state.
    writing: bool,
    /// The add under way, with the `version` it was started at.
    in_flight: Option<u64>,
}

/// How a file was handled, for the loop's bookkeeping.
#[derive(Debug, PartialEq, Eq)]
enum Handled {
    /// Renamed (`.added` or `.invalid`), or gone before it could be.
    Done(Outcome),
    /// Already in the session: renamed `.added` like an added file, counted apart.
    Duplicate,
    /// Vanished before it was read or renamed.
    Vanished,
    /// The rename failed: the name is left alone until it changes again.
    Stuck,
    /// The engine is going away.
    ShuttingDown,
}

struct Finished {
    path: PathBuf,
    version: u64,
    handled: Handled,
}

/// Counts since the backlog was last empty, for one summary line after a burst.
#[derive(Debug, Default)]
struct Tally {
    added: u64,
    duplicate: u64,
    invalid: u64,
    other: u64,
}

struct Watch {
    dir: PathBuf,
    seed: bool,
    client: Client,
    /// Kept to give each new notify watcher a sender (the channel never closes).
    tx: mpsc::Sender<notify::Result<notify::Event>>,
    rx: mpsc::Receiver<notify::Result<notify::Event>>,
    /// Set by notify's thread when the queue was full and an event was dropped.
    overflow: Arc<AtomicBool>,
    watcher: Option<notify::RecommendedWatcher>,
    /// The folder is known to be missing or unwatchable (and that was logged).
    absent: bool,
    /// Wait before looking for a missing folder again (backs off).
    missing_poll: Duration,
    /// When to look for the folder again (while it is not watched).
    look_again: Option<Instant>,
    files: HashMap<PathBuf, Entry>,
    /// (deadline, order, path, version): files waiting to settle; stale ones are skipped.
    due: BinaryHeap<Reverse<(Instant, u64, PathBuf, u64)>>,
    seq: u64,
    in_flight: FuturesUnordered<BoxFuture<'static, Finished>>,
    /// Names whose rename failed: skipped by scans until an event shows they changed.
    stuck: HashSet<PathBuf>,
    rescan_at: Option<Instant>,
    last_scan: Option<Instant>,
    tally: Tally,
    /// Events taken at once before the loop looks at deadlines and adds again.
    batch: usize,
}

impl Watch {
    async fn run(&mut self) {
        loop {
            self.dispatch();
            let next_due = (self.in_flight.len() < MAX_IN_FLIGHT)
                .then(|| self.due.peek().map(|Reverse((at, ..))| *at))
                .flatten();
            let wake = [next_due, self.rescan_at, self.look_again]
                .into_iter()
                .flatten()
                .min();
            tokio::select! {
                ev = self.rx.recv() => {
                    if let Some(ev) = ev {
                        self.on_event(ev);
                        // take what else is queued (a bounded batch) before deciding anything
                        for _ in 0..self.batch {
                            let Ok(ev) = self.rx.try_recv() else { break };
                            self.on_event(ev);
                        }
                    }
                }
                Some(done) = self.in_flight.next(), if !self.in_flight.is_empty() => {
                    if !self.finished(done) {
                        tracing::debug!("watch folder: the engine is shutting down; stopping");
                        return;
                    }
                }
                _ = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {}
                _ = self.client.closed() => {
                    tracing::debug!("watch folder: the engine is gone; stopping");
                    return;
                }
            }
            if self.overflow.swap(false, Ordering::Relaxed) {
                tracing::debug!("watch folder: event queue overflowed; rescanning");
                self.schedule_rescan();
            }
            let now = Instant::now();
            if self.look_again.is_some_and(|t| t <= now) {
                self.look_again = None;
                self.attach().await;
            }
            if self.rescan_at.is_some_and(|t| t <= now) {
                self.rescan_at = None;
                // (a folder that is not watched is scanned when it is attached again)
                if self.watcher.is_some() {
                    self.scan().await;
                }
            }
            if self.in_flight.is_empty() && self.due.is_empty() {
                self.summary();
            }
        }
    }

    /// Start watching the folder (again) and scan it; when that fails, look again later.
    async fn attach(&mut self) {
        match self.make_watcher() {
            Ok(w) => {
                if std::mem::take(&mut self.absent) {
                    tracing::info!("watch folder: {} is back", self.dir.display());
                }
                self.watcher = Some(w);
                self.missing_poll = MISSING_POLL;
                self.look_again = None;
                tracing::info!("watch folder: watching {}", self.dir.display());
                self.scan().await;
            }
            Err(e) => {
                // logged once per loss, then looked for quietly, less and less often
                if !std::mem::replace(&mut self.absent, true) {
                    tracing::warn!(
                        "watch folder: cannot watch {}: {e}; looking for it again every few seconds",
                        self.dir.display()
                    );
                }
                self.look_again = Some(Instant::now() + self.missing_poll);
                self.missing_poll = (self.missing_poll * 2).min(MISSING_POLL_MAX);
            }
        }
    }

    fn make_watcher(&self) -> Result<notify::RecommendedWatcher, String> {
        match std::fs::metadata(&self.dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err("it is not a folder".into()),
            Err(e) => return Err(e.to_string()),
        }
        let tx = self.tx.clone();
        let overflow = Arc::clone(&self.overflow);
        let mut w = notify::recommended_watcher(move |ev| {
            // never block notify's thread: a full queue means "rescan" instead
            if tx.try_send(ev).is_err() {
                overflow.store(true, Ordering::Relaxed);
            }
        })
        .map_err(|e| e.to_string())?;
        w.watch(&self.dir, RecursiveMode::NonRecursive)
            .map_err(|e| e.to_string())?;
        Ok(w)
    }

    /// The folder itself went away (deleted or moved): stop watching, forget what was
    /// pending there, and look for it again.
    fn lost(&mut self, how: &str) {
        if self.watcher.take().is_none() {
            return;
        }
        tracing::warn!(
            "watch folder: {} was {how}; waiting for it to come back",
            self.dir.display()
        );
        self.files.retain(|_, e| e.in_flight.is_some());
        self.due.clear();
        self.stuck.clear();
        self.rescan_at = None;
        self.absent = true;
        self.missing_poll = MISSING_POLL;
        self.look_again = Some(Instant::now() + MISSING_POLL);
    }

    fn schedule_rescan(&mut self) {
        if self.rescan_at.is_none() {
            let earliest = self
                .last_scan
                .map_or_else(Instant::now, |t| t + RESCAN_INTERVAL);
            self.rescan_at = Some(earliest.max(Instant::now()));
        }
    }

    fn on_event(&mut self, ev: notify::Result<notify::Event>) {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                tracing::warn!("watch folder: {}: {e}; rescanning", self.dir.display());
                self.schedule_rescan();
                return;
            }
        };
        if ev.need_rescan() {
            self.schedule_rescan();
        }
        let Some(path) = ev.paths.first() else {
            return;
        };
        if *path == self.dir {
            match ev.kind {
                EventKind::Remove(_) => self.lost("deleted"),
                EventKind::Modify(ModifyKind::Name(_)) => self.lost("moved away"),
                _ => {}
            }
            return;
        }
        if path.parent() != Some(self.dir.as_path())
            || path
                .file_name()
                .is_none_or(|n| classify(n) == FileKind::Ignored)
        {
            return;
        }
        let path = path.clone();
        match ev.kind {
            EventKind::Create(CreateKind::File | CreateKind::Any) => {
                // a new empty file is being written; one that has bytes at once (a hard
                // link) is complete
                let empty = std::fs::symlink_metadata(&path).map_or(true, |m| m.len() == 0);
                if empty {
                    self.touch(path, true, Duration::ZERO);
                } else {
                    self.touch(path, false, SETTLE);
                }
            }
            EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) => {
                self.touch(path, true, Duration::ZERO);
            }
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
                self.touch(path, false, SETTLE);
            }
            EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
                // renamed into the folder: complete already
                self.touch(path, false, Duration::ZERO);
            }
            EventKind::Modify(ModifyKind::Name(RenameMode::From)) | EventKind::Remove(_) => {
                // gone (an add under way is left to finish: our own rename lands here)
                self.stuck.remove(&path);
                if self.files.get(&path).is_some_and(|e| e.in_flight.is_none()) {
                    self.files.remove(&path);
                }
            }
            // opens and read-closes (the engine reading the file), attribute changes and
            // the paired `Both` rename event need nothing
            _ => {}
        }
    }

    /// Something happened to `path`: it is being written (`writing`), or complete and due
    /// after `settle`.
    fn touch(&mut self, path: PathBuf, writing: bool, settle: Duration) {
        self.stuck.remove(&path);
        let e = self.files.entry(path.clone()).or_insert(Entry {
            version: 0,
            writing,
            in_flight: None,
        });
        e.version += 1;
        e.writing = writing;
        let version = e.version;
        if !writing {
            self.seq += 1;
            self.due
                .push(Reverse((Instant::now() + settle, self.seq, path, version)));
        }
    }

    /// List the folder: every candidate not pending already is due once its modification
    /// time is [`SETTLE`] old.
    async fn scan(&mut self) {
        self.last_scan = Some(Instant::now());
        let dir = self.dir.clone();
        let listed = tokio::task::spawn_blocking(move || list(&dir)).await;
        let found = match listed {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                tracing::warn!("watch folder: cannot list {}: {e}", self.dir.display());
                return;
            }
            Err(_) => return,
        };
        let now = Instant::now();
        for (path, age) in found {
            if self.stuck.contains(&path) {
                continue;
            }
            let settle = SETTLE.saturating_sub(age);
            match self.files.get_mut(&path) {
                None => {
                    self.files.insert(
                        path.clone(),
                        Entry {
                            version: 1,
                            writing: false,
                            in_flight: None,
                        },
                    );
                    self.seq += 1;
                    self.due.push(Reverse((now + settle, self.seq, path, 1)));
                }
                // a close lost in an overflow: trust the modification time instead
                Some(e) if e.writing && e.in_flight.is_none() => {
                    e.version += 1;
                    e.writing = false;
                    self.seq += 1;
                    self.due
                        .push(Reverse((now + settle, self.seq, path, e.version)));
                }
                Some(_) => {}
            }
        }
    }

    /// Start adds for files that are due, up to [`MAX_IN_FLIGHT`].
    fn dispatch(&mut self) {
        let now = Instant::now();
        while self.in_flight.len() < MAX_IN_FLIGHT {
            match self.due.peek() {
                Some(Reverse((at, ..))) if *at <= now => {}
                _ => return,
            }
            let Some(Reverse((_, _, path, version))) = self.due.pop() else {
                return;
            };
            let Some(e) = self.files.get_mut(&path) else {
                continue;
            };
            if e.version != version || e.writing || e.in_flight.is_some() {
                continue;
            }
            let Some(kind) = path.file_name().map(classify) else {
                continue;
            };
            e.in_flight = Some(version);
            let client = self.client.clone();
            let seed = self.seed;
            self.in_flight.push(Box::pin(async move {
                let handled = handle(&path, kind, &client, seed).await;
                Finished {
                    path,
                    version,
                    handled,
                }
            }));
        }
    }

    /// Book an add that finished; `false` when the engine is going away.
    fn finished(&mut self, done: Finished) -> bool {
        match done.handled {
            Handled::ShuttingDown => return false,
            Handled::Done(Outcome::Added) => self.tally.added += 1,
            Handled::Duplicate => self.tally.duplicate += 1,
            Handled::Done(Outcome::Invalid) => self.tally.invalid += 1,
            Handled::Stuck => {
                self.tally.other += 1;
                self.stuck.insert(done.path.clone());
            }
            Handled::Vanished => self.tally.other += 1,
        }
        if let Some(e) = self.files.get_mut(&done.path) {
            e.in_flight = None;
            if e.version == done.version {
                self.files.remove(&done.path);
            } else if !e.writing {
                // written again (a new file of the same name) while it was being added
                self.seq += 1;
                let version = e.version;
                self.due.push(Reverse((
                    Instant::now() + SETTLE,
                    self.seq,
                    done.path,
                    version,
                )));
            }
        }
        true
    }

    fn summary(&mut self) {
        if let Some(line) = std::mem::take(&mut self.tally).line() {
            tracing::info!("{line}");
        }
    }
}

impl Tally {
    /// The summary line after a burst of more than one file, `None` for one or none.
    fn line(&self) -> Option<String> {
        let handled = self.added + self.duplicate + self.invalid + self.other;
        (handled > 1).then(|| {
            format!(
                "watch folder: {handled} files handled: {} added, {} already in the session, {} invalid, {} gone or not renamed",
                self.added, self.duplicate, self.invalid, self.other
            )
        })
    }
}

/// Candidate files in `dir` (regular files, or links to them) with the age of their
/// modification time, sorted by name.
fn list(dir: &Path) -> std::io::Result<Vec<(PathBuf, Duration)>> {
    let now = SystemTime::now();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        if classify(&entry.file_name()) == FileKind::Ignored {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or(Duration::ZERO);
        out.push((path, age));
    }
    out.sort();
    Ok(out)
}

fn display_name(path: &Path) -> std::borrow::Cow<'_, str> {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
}

/// Add one file and rename it after the engine's answer.
async fn handle(path: &Path, kind: FileKind, client: &Client, seed: bool) -> Handled {
    match tokio::fs::metadata(path).await {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Handled::Vanished,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Handled::Vanished,
        // unreadable in some other way: the engine's read reports it as invalid
        Err(_) => {}
    }
    let name = display_name(path);
    let answer = match kind {
        FileKind::Torrent => match add(AddSource::File(path.to_path_buf()), client, seed).await {
            Some(r) => r,
            None => return Handled::ShuttingDown,
        },
        FileKind::Magnet => match read_magnet(path).await {
            Ok(magnet) => match add(AddSource::Magnet(magnet.to_link()), client, seed).await {
                Some(r) => r,
                None => return Handled::ShuttingDown,
            },
            Err(why) => {
                // refused here, before the engine: it goes to the session log all the same
                let source = AddSource::File(path.to_path_buf());
                let refused = AddError::Invalid(format!("{source}: {why}"));
                if client.add_refused(source, why).await.is_err() {
                    return Handled::ShuttingDown;
                }
                Err(refused)
            }
        },
        FileKind::Ignored => return Handled::Vanished,
    };
    let mut duplicate = false;
    let outcome = match answer {
        Ok(id) => {
            tracing::info!("watch folder: {name}: added as {id}");
            Outcome::Added
        }
        Err(AddError::AlreadyAdded {
            id, name: tname, ..
        }) => {
            tracing::info!("watch folder: {name}: already added as {id} ({tname})");
            duplicate = true;
            Outcome::Added
        }
        Err(AddError::ShuttingDown) => return Handled::ShuttingDown,
        Err(AddError::Invalid(why) | AddError::Storage(why)) => {
            if !tokio::fs::try_exists(path).await.unwrap_or(true) {
                tracing::debug!("watch folder: {name}: vanished before it was read");
                return Handled::Vanished;
            }
            tracing::warn!("watch folder: {name}: not added, renamed .invalid: {why}");
            Outcome::Invalid
        }
    };
    match rename(path, outcome).await {
        Handled::Done(Outcome::Added) if duplicate => Handled::Duplicate,
        handled => handled,
    }
}

/// The magnet link in the `.magnet` file at `path`. Errors: why not, without the path
/// (the caller names it).
async fn read_magnet(path: &Path) -> Result<Magnet, String> {
    use tokio::io::AsyncReadExt;
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("cannot read it: {e}"))?;
    let mut data = Vec::new();
    file.take(MAX_MAGNET_FILE_BYTES + 1)
        .read_to_end(&mut data)
        .await
        .map_err(|e| format!("cannot read it: {e}"))?;
    if data.len() as u64 > MAX_MAGNET_FILE_BYTES {
        return Err(format!(
            "larger than {MAX_MAGNET_FILE_BYTES} bytes, not a .magnet file"
        ));
    }
    let text = String::from_utf8(data).map_err(|_| "not UTF-8 text".to_owned())?;
    parse_magnet_file(&text)
}

async fn rename(path: &Path, outcome: Outcome) -> Handled {
    // a few stat calls on the local folder: cheap enough to make here
    let to = renamed(path, outcome, |p| p.symlink_metadata().is_ok());
    match tokio::fs::rename(path, &to).await {
        Ok(()) => Handled::Done(outcome),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Handled::Vanished,
        Err(e) => {
            tracing::warn!(
                "watch folder: cannot rename {} to {}: {e}; leaving it as it is until it changes",
                path.display(),
                display_name(&to)
            );
            Handled::Stuck
        }
    }
}

#[cfg(test)]
mod tests;
