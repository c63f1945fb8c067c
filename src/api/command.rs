//! Commands: what a front end asks of the engine.

use serde::{Deserialize, Serialize};

use std::path::PathBuf;

use tokio::sync::oneshot;

use super::TorrentId;
use super::error::AddError;
use super::event::EngineEvent;
use super::snapshot::FilePriority;

/// Sending end of the command channel.
pub type CommandSender = tokio::sync::mpsc::Sender<Command>;

/// A torrent to make of a file or folder and seed ([`AddSource::Create`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateSource {
    /// The file or folder to share (its parent folder is where the torrent's data is).
    #[serde(with = "super::serde_forms::path")]
    pub path: PathBuf,
    /// Where to write the .torrent file; `None`: `NAME.torrent` beside the file or folder.
    #[serde(with = "super::serde_forms::opt_path")]
    pub output: Option<PathBuf>,
    /// v1, v2 or hybrid (BEP 52).
    pub version: crate::metainfo::MetaVersion,
    /// Tiers of announce URLs (BEP 12).
    pub trackers: Vec<Vec<String>>,
    /// BEP 27 private.
    pub private: bool,
}

impl CreateSource {
    /// The .torrent file to write: [`CreateSource::output`], or `NAME.torrent` beside the
    /// file or folder.
    pub fn output_path(&self) -> PathBuf {
        self.output.clone().unwrap_or_else(|| {
            let name = self
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "new".into());
            self.path
                .parent()
                .unwrap_or_else(|| std::path::Path::new("."))
                .join(format!("{name}.torrent"))
        })
    }
}

/// What to add: a .torrent file, a magnet link, the URL or bytes of a .torrent file, or a
/// file or folder to make a torrent of. New variants go last (the control protocol encodes
/// the variant's index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AddSource {
    /// Path of a .torrent file to read.
    File(#[serde(with = "super::serde_forms::path")] PathBuf),
    /// A magnet link (BEP 9): the torrent fetches its info dictionary from peers.
    Magnet(String),
    /// The `http://` or `https://` URL of a .torrent file (a tracker's download link): the
    /// engine fetches it (bounded in size and time, see [`crate::fetch`]) and adds it as a
    /// file; a redirect to a `magnet:` link is added as that magnet link. Another scheme
    /// (`file://`, `ftp://`) is refused with the reason. Until the fetch ends the torrent
    /// does not exist, and the add's reply waits.
    Url(String),
    /// The bytes of a .torrent file a front end received (an upload to the Web API), with
    /// the name to give it in messages (the file name the client sent).
    Data {
        /// The name for messages, e.g. `show.s01e01.torrent`.
        name: String,
        /// The file's bytes.
        bytes: TorrentBytes,
    },
    /// A torrent to make of a file or folder ([`crate::metainfo::create`]): the engine
    /// hashes it off its task, writes the .torrent file, and adds it seeding (no check: the
    /// data was just hashed; each piece is hashed again before it is first sent). Until
    /// the hashing ends the torrent does not exist, and the add's reply waits.
    Create(CreateSource),
}

/// The bytes of a .torrent file ([`AddSource::Data`]): shared, and shown by their length
/// only in debug output.
#[derive(Clone, PartialEq, Eq)]
pub struct TorrentBytes(pub std::sync::Arc<[u8]>);

impl Serialize for TorrentBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for TorrentBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = TorrentBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the bytes of a .torrent file")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<TorrentBytes, E> {
                Ok(TorrentBytes(v.into()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<TorrentBytes, E> {
                Ok(TorrentBytes(v.into()))
            }
        }
        d.deserialize_bytes(Bytes)
    }
}

impl std::fmt::Debug for TorrentBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TorrentBytes({} bytes)", self.0.len())
    }
}

impl From<PathBuf> for AddSource {
    /// A .torrent file (a front end tells magnet links from paths, e.g.
    /// `cli::add_source`).
    fn from(p: PathBuf) -> AddSource {
        AddSource::File(p)
    }
}

impl AddSource {
    /// Whether the engine fetches this source before adding it (an `http://` or `https://`
    /// URL): the add's answer waits for the fetch, so a front end may say "fetching".
    pub fn is_fetched(&self) -> bool {
        matches!(self, AddSource::Url(url)
            if crate::net::url_scheme(url).is_some_and(crate::net::is_fetchable_scheme))
    }
}

impl std::fmt::Display for AddSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddSource::File(p) => write!(f, "{}", p.display()),
            AddSource::Magnet(m) | AddSource::Url(m) => {
                write!(f, "{}", crate::net::mask_passkey(m))
            }
            AddSource::Data { name, .. } => f.write_str(name),
            AddSource::Create(c) => write!(f, "a new torrent of {}", c.path.display()),
        }
    }
}

/// Add a torrent from a .torrent file or a magnet link.
#[derive(Debug, Serialize, Deserialize)]
pub struct AddRequest {
    /// The .torrent file or magnet link.
    pub source: AddSource,
    /// Where to store the payload; the session default when `None`.
    #[serde(with = "super::serde_forms::opt_path")]
    pub download_dir: Option<PathBuf>,
    /// Add in the paused state.
    pub paused: bool,
    /// Keep seeding once complete (`false`: stop at completion, state `Completed`).
    pub seed: bool,
    /// Its category (`tv/hd`); empty: none. A category the session does not have is
    /// created, with the implicit save path (qBittorrent does the same); an invalid name
    /// refuses the add ([`check_category_name`](super::check_category_name)).
    pub category: String,
    /// Its tags (each checked with [`check_tag`](super::check_tag); duplicates dropped).
    pub tags: Vec<String>,
    /// Automatic management (the data goes where the category says: its download path
    /// while downloading, its save path once complete). `None`: on when a category is
    /// given and no `download_dir`, else off.
    pub auto_managed: Option<bool>,
    /// Download the pieces in index order (qBittorrent's `sequentialDownload`); see
    /// [`Command::SetSequential`].
    pub sequential: bool,
    /// The first and last pieces of each file first, for previews (qBittorrent's
    /// `firstLastPiecePrio`); see [`Command::SetFirstLastPiecePrio`].
    pub first_last: bool,
    /// Skip the hash check: the data on disk is known to be complete (cross-seeding;
    /// qBittorrent's `skip_checking`). The torrent starts with every piece had but
    /// *unchecked*, seeding at once; a piece is hashed before its first block is sent to
    /// anyone, and one that does not match is never sent: it leaves the pieces had, the
    /// event log says so and the torrent downloads it again. A recheck checks them all.
    /// Files missing or too short stop it with "files missing" instead. Ignored for a
    /// magnet link (its data is checked once the metadata is in).
    pub skip_check: bool,
}

impl AddRequest {
    /// Add `source` into the session's default folder, started at once, seeding once
    /// complete; the builder methods below change one of these.
    pub fn new(source: impl Into<AddSource>) -> AddRequest {
        AddRequest {
            source: source.into(),
            download_dir: None,
            paused: false,
            seed: true,
            category: String::new(),
            tags: Vec::new(),
            auto_managed: None,
            sequential: false,
            first_last: false,
            skip_check: false,
        }
    }

    /// Store the payload in `dir` (`None`: the session default).
    pub fn download_dir(mut self, dir: Option<PathBuf>) -> AddRequest {
        self.download_dir = dir;
        self
    }

    /// Add in the paused state (`true`) or start at once (`false`).
    pub fn paused(mut self, paused: bool) -> AddRequest {
        self.paused = paused;
        self
    }

    /// Keep seeding once complete (`true`) or stop at completion (`false`).
    pub fn seed(mut self, seed: bool) -> AddRequest {
        self.seed = seed;
        self
    }

    /// Put it in `category` (`""`: none).
    pub fn category(mut self, category: impl Into<String>) -> AddRequest {
        self.category = category.into();
        self
    }

    /// Give it `tags`.
    pub fn tags(mut self, tags: Vec<String>) -> AddRequest {
        self.tags = tags;
        self
    }

    /// Automatic management on or off (`None`: the default, see
    /// [`AddRequest::auto_managed`](AddRequest#structfield.auto_managed)).
    pub fn auto_managed(mut self, on: Option<bool>) -> AddRequest {
        self.auto_managed = on;
        self
    }

    /// Download in index order (`true`) or rarest first (`false`, the default).
    pub fn sequential(mut self, on: bool) -> AddRequest {
        self.sequential = on;
        self
    }

    /// The first and last pieces of each file first (`true`) or not (`false`).
    pub fn first_last(mut self, on: bool) -> AddRequest {
        self.first_last = on;
        self
    }

    /// Skip the hash check (`true`: the data is taken as complete, each piece checked when
    /// first sent; see [`AddRequest::skip_check`](AddRequest#structfield.skip_check)).
    pub fn skip_check(mut self, on: bool) -> AddRequest {
        self.skip_check = on;
        self
    }

    /// Whether automatic management is on for this add: as asked, else on when a
    /// category is given and no save folder.
    pub fn auto_managed_in_effect(&self) -> bool {
        self.auto_managed
            .unwrap_or(!self.category.is_empty() && self.download_dir.is_none())
    }
}

/// Where [`Command::QueueMove`] moves torrents in the queue (qBittorrent's
/// increasePrio / decreasePrio / topPrio / bottomPrio).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueMove {
    /// One place up (towards the first).
    Up,
    /// One place down.
    Down,
    /// To the first places.
    Top,
    /// To the last places.
    Bottom,
}

/// A request to the engine. Commands that can fail carry a oneshot for the answer, so a
/// front end can show the error (e.g. "already added" and select the existing torrent).
/// Commands naming a torrent that is gone are ignored.
///
/// Commands are serialisable (the daemon's control socket carries them, see
/// [`crate::control`]); a reply sender is `#[serde(skip)]` and does not travel: the
/// control protocol gives the request an id and carries the answer back
/// (`control/wire.rs` lists the commands that answer: a new one goes there too).
#[derive(Debug, Serialize, Deserialize)]
pub enum Command {
    /// Add a torrent; replies with its id or why it was refused.
    Add(
        AddRequest,
        #[serde(skip)] Option<oneshot::Sender<Result<TorrentId, AddError>>>,
    ),
    /// Stop a torrent's peers and announce `stopped`; data stays.
    Pause(TorrentId),
    /// Start a paused torrent again; from Error, retry (rechecking first when the data may
    /// have changed).
    Resume(TorrentId),
    /// Pause if running, resume if paused or in Error.
    TogglePause(TorrentId),
    /// Pause every torrent.
    PauseAll,
    /// Resume every paused torrent.
    ResumeAll,
    /// Forget a torrent; with `delete_data`, also delete its files (and the folders they
    /// leave empty) from the download folder.
    Remove {
        /// The torrent.
        id: TorrentId,
        /// Delete its payload files too.
        delete_data: bool,
    },
    /// Hash the torrent's data on disk again (cancels a check in progress and starts over).
    Recheck(TorrentId),
    /// Announce to every tracker now (as far as their `min interval` allows).
    Reannounce(TorrentId),
    /// Give a torrent a peer to dial (IPv4 or IPv6 address and port), added by hand: kept
    /// across restarts like a magnet link's `x.pe` peers, dialled whenever the torrent runs.
    /// The outcome goes to the event stream.
    AddPeer {
        /// The torrent.
        id: TorrentId,
        /// The peer's address.
        addr: std::net::SocketAddr,
    },
    /// Publish the detail (peers, files, trackers, pieces) of this torrent in every snapshot
    /// from now on; `None` stops. Only one torrent is focused at a time.
    Focus(Option<TorrentId>),
    /// Set the session-wide rate limits in effect, bytes/s (0 = unlimited): the normal
    /// pair (kept across restarts), or while alternative speeds are on the alternative pair
    /// (for this run).
    SetLimits {
        /// Download limit, bytes/s.
        download: u64,
        /// Upload limit, bytes/s.
        upload: u64,
    },
    /// Switch alternative speed limits on (`true`: the session limits become
    /// `alt_download_rate_limit` / `alt_upload_rate_limit`) or off (back to the normal
    /// pair). Holds until the next boundary of `[alt_speed_schedule]`, if one is enabled;
    /// kept across restarts.
    SetAltSpeed(bool),
    /// Flip alternative speed limits (as [`Command::SetAltSpeed`] with the opposite of
    /// the current switch, [`GlobalStats::alt_speed`](super::GlobalStats::alt_speed)).
    ToggleAltSpeed,
    /// Set one torrent's own rate limits, bytes/s (0 = none); the session's limits apply
    /// on top.
    SetTorrentLimits {
        /// The torrent.
        id: TorrentId,
        /// Download limit, bytes/s.
        download: u64,
        /// Upload limit, bytes/s.
        upload: u64,
    },
    /// Set the seeding goals (share limits) of torrents `ids`: -2 use the session's
    /// `[seeding]` value, -1 none, >= 0 the limit (ratio; minutes). A torrent stopped by a
    /// goal that the new limits no longer reach may be resumed again.
    SetShareLimits {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// Their new limits.
        limits: super::ShareLimits,
    },
    /// Set the download priority of files of a torrent: `files` are indices into
    /// [`TorrentDetail::files`](super::TorrentDetail::files) (its non-padding files in
    /// payload order). Pieces only in skipped files are not requested and a skipped file is
    /// not created.
    SetFilePriority {
        /// The torrent.
        id: TorrentId,
        /// Which files.
        files: Vec<usize>,
        /// Their new priority.
        priority: FilePriority,
    },
    /// Sequential download on or off for torrents `ids` (qBittorrent's
    /// `torrents/toggleSequentialDownload`, as a setter): new pieces are started in index
    /// order among the wanted ones (higher file priorities first) instead of rarest first;
    /// pieces in progress and end game go on as before. Kept across restarts.
    SetSequential {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// On or off.
        on: bool,
    },
    /// "First and last pieces first" on or off for torrents `ids` (qBittorrent's
    /// `torrents/toggleFirstLastPiecePrio`, as a setter): the first and last pieces of each
    /// wanted file (1% of the file at each end, at least one piece) are picked before any
    /// other, so a player can open it early. Kept across restarts.
    SetFirstLastPiecePrio {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// On or off.
        on: bool,
    },
    /// Put a torrent's files in another folder. `move_data`: move them (renamed on the same
    /// file system, else copied, sizes checked, then deleted; on failure nothing is left at
    /// the target and the torrent stays where it was); otherwise "set location": the files
    /// are already there (the user moved them), the torrent just points there and rechecks.
    MoveStorage {
        /// The torrent.
        id: TorrentId,
        /// The new save folder.
        #[serde(with = "super::serde_forms::path")]
        to: PathBuf,
        /// Move the data (true) or only set the location (false).
        move_data: bool,
    },
    /// A front end refused an add itself, before the engine saw it (a watch folder's
    /// `.magnet` file that holds no valid magnet link): the engine puts it in the session
    /// log as it does its own refusals ([`EventKind::AddRefused`](super::EventKind), level
    /// error, `not added: SOURCE: REASON`), so every failed add can be read in one place.
    AddRefused {
        /// What was to be added (a watch folder's file).
        source: AddSource,
        /// Why it was refused, without the source, e.g. `magnet link has no
        /// "xt=urn:btih:" (the info hash)`.
        reason: String,
    },
    /// Move torrents in the queue (`[queue]`); several keep their order among themselves.
    /// The order is kept across restarts, and kept while queueing is off.
    QueueMove {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// Where to.
        to: QueueMove,
    },
    /// Force start torrents (`forced`: they run whatever the queue says and are not
    /// counted; a stopped one starts) or give them back to the queue. qBittorrent's
    /// "force start"; kept across restarts.
    SetForceStart {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// Force started or not.
        forced: bool,
    },
    /// The most recent engine events (oldest first; at most the history size).
    RecentEvents(#[serde(skip, default = "unanswered")] oneshot::Sender<Vec<EngineEvent>>),
    /// Stop every torrent, send `stopped` to trackers, then reply and end the engine.
    Shutdown(#[serde(skip, default = "unanswered")] oneshot::Sender<()>),
    /// Reply once a snapshot that shows the effect of every command sent before this one
    /// is published (at once when nothing changed): a front end that answers its own
    /// client after a change (the Web API) answers with the change visible.
    Flush(#[serde(skip, default = "unanswered")] oneshot::Sender<()>),
    /// Build the detail (peers, files, trackers, pieces, goals) of torrent `id` once and
    /// reply with it (`None`: no such torrent), without touching the focus the snapshots
    /// follow ([`Command::Focus`]): a Web API asks for any torrent while the TUI shows
    /// another.
    Detail(
        TorrentId,
        #[serde(skip, default = "unanswered")]
        oneshot::Sender<Option<Box<super::snapshot::TorrentDetail>>>,
    ),
    /// Change session settings while the session runs (default folder, seeding goals,
    /// queue limits, DHT: qBittorrent's `app/setPreferences`); for this run, the config
    /// file is not rewritten. Replies with the settings in effect, or why the change was
    /// refused (nothing changed).
    ChangeSettings(
        super::SettingsChange,
        #[serde(skip)] Option<super::SettingsReply>,
    ),
    /// Show torrent `id` as `name` (qBittorrent's `torrents/rename`): its name in the list
    /// and the API, kept across restarts; its files and `content_path` stay as they are.
    /// `None`: its own name again.
    Rename {
        /// The torrent.
        id: TorrentId,
        /// The name to show (one line; a front end checks it), or `None`.
        name: Option<String>,
    },
    /// Put torrents `ids` in `category` (qBittorrent's `torrents/setCategory`; `""`: no
    /// category). A category the session does not have is refused (the event log says
    /// so). Those with automatic management on move their data where the new category
    /// says (the session's download folder for none), as [`Command::MoveStorage`] does.
    SetCategory {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// The category's name, or `""`.
        category: String,
    },
    /// Create a category (`torrents/createCategory`); its missing parents are created
    /// too (with implicit paths). Refused, in the event log, when the name is invalid or
    /// taken.
    CreateCategory(super::Category),
    /// Change an existing category's paths and goals (`torrents/editCategory`); the
    /// auto-managed torrents in it move to its new path. Refused when it does not exist.
    EditCategory(super::Category),
    /// Remove categories and their subcategories (`torrents/removeCategories`): their
    /// torrents are left without a category and with automatic management off; their
    /// data stays where it is.
    RemoveCategories(Vec<String>),
    /// Add `tags` to torrents `ids` (`torrents/addTags`): each tag once per torrent, after
    /// those it has; new tags join the session's list. An invalid tag refuses the whole
    /// command (in the event log).
    AddTags {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// The tags.
        tags: Vec<String>,
    },
    /// Take `tags` off torrents `ids` (`torrents/removeTags`; an empty list: every tag).
    /// The tags stay in the session's list.
    RemoveTags {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// The tags.
        tags: Vec<String>,
    },
    /// Add tags to the session's list without giving them to a torrent
    /// (`torrents/createTags`).
    CreateTags(Vec<String>),
    /// Delete tags from the session's list and from every torrent (`torrents/deleteTags`).
    DeleteTags(Vec<String>),
    /// Automatic management on or off for torrents `ids` (`torrents/setAutoManagement`).
    /// Switched on, the data moves where the torrent's category says; switched off, it
    /// stays where it is.
    SetAutoManaged {
        /// The torrents.
        ids: Vec<TorrentId>,
        /// On or off.
        on: bool,
    },
    /// The config file was read again (the daemon's SIGHUP) and its session rate limits
    /// changed, bytes/s (0 = unlimited): the normal pair (`download_rate_limit`,
    /// `upload_rate_limit`) replaces the one in force, also one set live, and is kept as
    /// the config's values across restarts; the alternative pair
    /// (`alt_download_rate_limit`, `alt_upload_rate_limit`) replaces the alternative one.
    /// The pair in effect (normal or alternative) applies at once.
    ConfigLimits {
        /// `download_rate_limit`, bytes/s.
        download: u64,
        /// `upload_rate_limit`, bytes/s.
        upload: u64,
        /// `alt_download_rate_limit`, bytes/s.
        alt_download: u64,
        /// `alt_upload_rate_limit`, bytes/s.
        alt_upload: u64,
    },
    /// Edit the tracker URLs of torrents `ids` (see [`TrackerEdit`](super::TrackerEdit)):
    /// a find/replace across many torrents (a new passkey or host), or add, remove or
    /// change URLs. New URLs must be `http`, `https` or `udp`; the whole edit is refused
    /// when one is not, and nothing changes. The edited list is kept across restarts; a
    /// changed or removed tracker gets a `stopped` (when it had us in its swarm) and no
    /// further announces; a new one gets `started` at once while the torrent runs. Replies
    /// how many URLs in how many torrents changed; with `dry_run`, only counts.
    EditTrackers {
        /// The torrents (gone ones are skipped).
        ids: Vec<TorrentId>,
        /// What to change.
        edit: super::TrackerEdit,
        /// Count only: change nothing.
        dry_run: bool,
        /// Where the answer goes (`None`: nobody waits for it).
        #[serde(skip)]
        reply: Option<super::TrackerEditReply>,
    },
}

/// A reply sender whose receiver is gone: what a command read from the wire holds until
/// the control server gives it one of its own.
fn unanswered<T>() -> oneshot::Sender<T> {
    oneshot::channel().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_http_or_https_url_is_fetched_and_it_shows_masked() {
        let url = AddSource::Url("HTTPS://t.example/dl/1.torrent?passkey=s3cr3t".to_owned());
        assert!(url.is_fetched());
        assert_eq!(
            url.to_string(),
            "HTTPS://t.example/dl/1.torrent?passkey=***"
        );
        assert!(!AddSource::Url("file:///tmp/a.torrent".to_owned()).is_fetched());
        assert!(!AddSource::Magnet("magnet:?xt=urn:btih:00".to_owned()).is_fetched());
        assert!(!AddSource::File(PathBuf::from("http://x")).is_fetched());
    }
}
