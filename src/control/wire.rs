//! The control protocol on the wire: the hello lines, the frames and the messages.
//!
//! A connection starts with one text line each way, readable by hand (`socat`):
//! - the client: `ratorrent-control 2 ratorrent/0.1.0` (the protocol version it speaks,
//!   then who it is);
//! - the daemon: `ratorrent-control 2 ok pid=1234 state=/home/u/.local/share/ratorrent`, or
//!   `ratorrent-control 2 refused REASON` (another user, another version, too many
//!   connections), after which it closes.
//!
//! The hello lines never change form, so any two builds understand why they cannot talk.
//! After them come frames: a 4-byte big-endian body length, then the body, one
//! [`ClientMsg`] or [`ServerMsg`] in postcard. A client's frame is at most
//! [`MAX_CLIENT_FRAME`] bytes, the daemon's at most [`MAX_SERVER_FRAME`]; a longer length,
//! or a body that does not decode, ends the connection with a reason
//! ([`ServerMsg::Closing`]), never the process.
//!
//! Postcard is not self-describing: both ends must share the types of [`crate::api`]
//! exactly, which [`PROTOCOL_VERSION`] stands for (a test pins the encoding of a sample of
//! every message: when it changes, the version goes up).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt,
};
use tokio::sync::oneshot;

use crate::api::{
    AddError, Command, EngineEvent, SessionSettings, SettingsReply, TorrentDetail, TorrentId,
    TrackerEditError, TrackerEditOutcome, TrackerEditReply,
};

use super::delta::SnapshotFrame;

/// The version of the control protocol this build speaks: the hello lines' second word.
pub const PROTOCOL_VERSION: u32 = 2;

/// The first word of both hello lines.
pub const HELLO_WORD: &str = "ratorrent-control";

/// Longest hello line read, newline included, bytes.
pub const MAX_HELLO_LINE: usize = 4096;

/// Largest frame body a client may send, bytes (a command: an add with its paths, a list
/// of tracker URLs).
pub const MAX_CLIENT_FRAME: u32 = 1 << 20;

/// Largest frame body the daemon sends, bytes (a first snapshot of a very large session
/// with the detail of a torrent of many files).
pub const MAX_SERVER_FRAME: u32 = 64 << 20;

/// What a client sends after its hello.
#[derive(Debug, Serialize, Deserialize)]
pub enum ClientMsg {
    /// A command for the engine. `id` is 0 when nobody waits for an answer; else the
    /// daemon answers with [`ServerMsg::Reply`] or [`ServerMsg::NoReply`] of that id.
    Command {
        /// The request id (0: no answer wanted).
        id: u64,
        /// The command, its reply sender left out.
        command: Command,
    },
    /// The client's copy of the snapshot went wrong (a difference it could not apply): the
    /// next snapshot comes whole.
    Resync,
}

/// What the daemon sends after its hello.
#[derive(Debug, Serialize, Deserialize)]
pub enum ServerMsg {
    /// The latest snapshot, as a difference from the last one sent on this connection.
    Snapshot(Box<SnapshotFrame>),
    /// One engine event (the session log), as the broadcast channel gives it.
    Event(EngineEvent),
    /// The engine's answer to request `id`.
    Reply {
        /// The request id.
        id: u64,
        /// The answer.
        reply: WireReply,
    },
    /// The engine dropped request `id` without answering (it is stopping).
    NoReply {
        /// The request id.
        id: u64,
    },
    /// The daemon closes this connection, and says why (a frame over the limit, a body
    /// that does not decode).
    Closing(String),
}

/// An answer of the engine to a command that carries a reply sender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WireReply {
    /// [`Command::Add`]: the new torrent's id, or why it was refused.
    Add(Result<TorrentId, AddError>),
    /// [`Command::RecentEvents`]: the engine's recent events, oldest first.
    Events(Vec<EngineEvent>),
    /// [`Command::Shutdown`]: the engine stopped (torrents stopped, state saved).
    Shutdown,
    /// [`Command::EditTrackers`]: how many URLs changed, or why nothing did.
    Trackers(Result<TrackerEditOutcome, TrackerEditError>),
    /// Of [`Command::Flush`]: the effect of the commands before it is published.
    Flushed,
    /// Of [`Command::Detail`].
    Detail(Option<Box<TorrentDetail>>),
    /// Of [`Command::ChangeSettings`].
    Settings(Result<SessionSettings, String>),
}

/// The client's side of a request in flight: the reply sender taken out of the command
/// ([`take_reply`]), answered when the daemon's [`WireReply`] comes.
#[derive(Debug)]
pub enum PendingReply {
    /// Of [`Command::Add`].
    Add(oneshot::Sender<Result<TorrentId, AddError>>),
    /// Of [`Command::RecentEvents`].
    Events(oneshot::Sender<Vec<EngineEvent>>),
    /// Of [`Command::Shutdown`].
    Shutdown(oneshot::Sender<()>),
    /// Of [`Command::EditTrackers`].
    Trackers(TrackerEditReply),
    /// Of [`Command::Flush`].
    Flushed(oneshot::Sender<()>),
    /// Of [`Command::Detail`].
    Detail(oneshot::Sender<Option<Box<TorrentDetail>>>),
    /// Of [`Command::ChangeSettings`].
    Settings(SettingsReply),
}

impl PendingReply {
    /// Hand `reply` to whoever waits. Returns `false` when the answer is not of this
    /// request's kind (a confused daemon: the waiter then sees the request dropped).
    pub fn answer(self, reply: WireReply) -> bool {
        match (self, reply) {
            (PendingReply::Add(tx), WireReply::Add(r)) => {
                let _ = tx.send(r);
            }
            (PendingReply::Events(tx), WireReply::Events(r)) => {
                let _ = tx.send(r);
            }
            (PendingReply::Shutdown(tx), WireReply::Shutdown) => {
                let _ = tx.send(());
            }
            (PendingReply::Trackers(tx), WireReply::Trackers(r)) => {
                let _ = tx.send(r);
            }
            (PendingReply::Flushed(tx), WireReply::Flushed) => {
                let _ = tx.send(());
            }
            (PendingReply::Detail(tx), WireReply::Detail(r)) => {
                let _ = tx.send(r);
            }
            (PendingReply::Settings(tx), WireReply::Settings(r)) => {
                let _ = tx.send(r);
            }
            _ => return false,
        }
        true
    }
}

/// The daemon's side of a request in flight: the receiver of the reply sender it put in
/// the command ([`install_reply`]).
#[derive(Debug)]
pub enum AwaitedReply {
    /// Of [`Command::Add`].
    Add(oneshot::Receiver<Result<TorrentId, AddError>>),
    /// Of [`Command::RecentEvents`].
    Events(oneshot::Receiver<Vec<EngineEvent>>),
    /// Of [`Command::Shutdown`].
    Shutdown(oneshot::Receiver<()>),
    /// Of [`Command::EditTrackers`].
    Trackers(oneshot::Receiver<Result<TrackerEditOutcome, TrackerEditError>>),
    /// Of [`Command::Flush`].
    Flushed(oneshot::Receiver<()>),
    /// Of [`Command::Detail`].
    Detail(oneshot::Receiver<Option<Box<TorrentDetail>>>),
    /// Of [`Command::ChangeSettings`].
    Settings(oneshot::Receiver<Result<SessionSettings, String>>),
}

impl AwaitedReply {
    /// The engine's answer; `None` when it dropped the request.
    pub async fn wait(self) -> Option<WireReply> {
        match self {
            AwaitedReply::Add(rx) => rx.await.ok().map(WireReply::Add),
            AwaitedReply::Events(rx) => rx.await.ok().map(WireReply::Events),
            AwaitedReply::Shutdown(rx) => rx.await.ok().map(|()| WireReply::Shutdown),
            AwaitedReply::Trackers(rx) => rx.await.ok().map(WireReply::Trackers),
            AwaitedReply::Flushed(rx) => rx.await.ok().map(|()| WireReply::Flushed),
            AwaitedReply::Detail(rx) => rx.await.ok().map(WireReply::Detail),
            AwaitedReply::Settings(rx) => rx.await.ok().map(WireReply::Settings),
        }
    }
}

/// Whether `command` answers through a reply sender, and `Some` with it taken out (the
/// command keeps a sender whose receiver is gone). Every command is named here: a new one
/// does not build until it is sorted into those that answer or not.
pub fn take_reply(command: &mut Command) -> Option<PendingReply> {
    match command {
        Command::Add(_, reply) => reply.take().map(PendingReply::Add),
        Command::RecentEvents(tx) => Some(PendingReply::Events(std::mem::replace(
            tx,
            oneshot::channel().0,
        ))),
        Command::Shutdown(tx) => Some(PendingReply::Shutdown(std::mem::replace(
            tx,
            oneshot::channel().0,
        ))),
        Command::EditTrackers { reply, .. } => reply.take().map(PendingReply::Trackers),
        Command::Flush(tx) => Some(PendingReply::Flushed(std::mem::replace(
            tx,
            oneshot::channel().0,
        ))),
        Command::Detail(_, tx) => Some(PendingReply::Detail(std::mem::replace(
            tx,
            oneshot::channel().0,
        ))),
        Command::ChangeSettings(_, reply) => reply.take().map(PendingReply::Settings),
        Command::Rename { .. }
        | Command::Pause(_)
        | Command::Resume(_)
        | Command::TogglePause(_)
        | Command::PauseAll
        | Command::ResumeAll
        | Command::Remove { .. }
        | Command::Recheck(_)
        | Command::Reannounce(_)
        | Command::AddPeer { .. }
        | Command::Focus(_)
        | Command::SetLimits { .. }
        | Command::SetAltSpeed(_)
        | Command::ToggleAltSpeed
        | Command::SetTorrentLimits { .. }
        | Command::SetShareLimits { .. }
        | Command::SetFilePriority { .. }
        | Command::MoveStorage { .. }
        | Command::AddRefused { .. }
        | Command::QueueMove { .. }
        | Command::SetForceStart { .. }
        | Command::SetCategory { .. }
        | Command::CreateCategory(_)
        | Command::EditCategory(_)
        | Command::RemoveCategories(_)
        | Command::AddTags { .. }
        | Command::RemoveTags { .. }
        | Command::CreateTags(_)
        | Command::DeleteTags(_)
        | Command::SetAutoManaged { .. }
        | Command::ConfigLimits { .. }
        | Command::SetSequential { .. }
        | Command::SetFirstLastPiecePrio { .. } => None,
    }
}

/// Give a command read from the wire a reply sender of its own, when it is one that
/// answers; returns the receiver.
pub fn install_reply(command: &mut Command) -> Option<AwaitedReply> {
    match command {
        Command::Add(_, reply) => {
            let (tx, rx) = oneshot::channel();
            *reply = Some(tx);
            Some(AwaitedReply::Add(rx))
        }
        Command::RecentEvents(reply) => {
            let (tx, rx) = oneshot::channel();
            *reply = tx;
            Some(AwaitedReply::Events(rx))
        }
        Command::Shutdown(reply) => {
            let (tx, rx) = oneshot::channel();
            *reply = tx;
            Some(AwaitedReply::Shutdown(rx))
        }
        Command::EditTrackers { reply, .. } => {
            let (tx, rx) = oneshot::channel();
            *reply = Some(tx);
            Some(AwaitedReply::Trackers(rx))
        }
        Command::Flush(reply) => {
            let (tx, rx) = oneshot::channel();
            *reply = tx;
            Some(AwaitedReply::Flushed(rx))
        }
        Command::Detail(_, reply) => {
            let (tx, rx) = oneshot::channel();
            *reply = tx;
            Some(AwaitedReply::Detail(rx))
        }
        Command::ChangeSettings(_, reply) => {
            let (tx, rx) = oneshot::channel();
            *reply = Some(tx);
            Some(AwaitedReply::Settings(rx))
        }
        _ => None,
    }
}

/// The client's hello line (newline included).
pub fn client_hello() -> String {
    format!(
        "{HELLO_WORD} {PROTOCOL_VERSION} ratorrent/{}\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The version a client's hello line names.
///
/// # Errors
/// The line is not a hello of this protocol (the text says what it looked like).
pub fn parse_client_hello(line: &str) -> Result<u32, String> {
    let mut words = line.split_ascii_whitespace();
    if words.next() != Some(HELLO_WORD) {
        return Err(format!(
            "not a ratorrent control client (its first line must start with \"{HELLO_WORD} VERSION\")"
        ));
    }
    words
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("the hello names no protocol version (\"{HELLO_WORD} VERSION\")"))
}

/// The daemon's hello: accepted, or refused with a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerHello {
    /// Frames follow.
    Accepted {
        /// The protocol version the daemon speaks.
        version: u32,
        /// Who it is.
        daemon: super::DaemonInfo,
    },
    /// The daemon closes the connection.
    Refused {
        /// The protocol version the daemon speaks.
        version: u32,
        /// Why, in words.
        reason: String,
    },
}

impl ServerHello {
    /// The line (newline included).
    pub fn line(&self) -> String {
        match self {
            ServerHello::Accepted { version, daemon } => format!(
                "{HELLO_WORD} {version} ok pid={} state={}\n",
                daemon.pid,
                daemon.state_dir.display()
            ),
            ServerHello::Refused { version, reason } => {
                let reason = reason.replace(['\n', '\r'], " ");
                format!("{HELLO_WORD} {version} refused {reason}\n")
            }
        }
    }

    /// Read a daemon's hello line.
    ///
    /// # Errors
    /// The line is not one (the text says so).
    pub fn parse(line: &str) -> Result<ServerHello, String> {
        let line = line.trim_end_matches(['\n', '\r']);
        let not = || {
            format!(
                "the socket did not answer as a ratorrent daemon does (it said {:?})",
                crate::untrusted::line(&line.chars().take(80).collect::<String>())
            )
        };
        let rest = line.strip_prefix(HELLO_WORD).ok_or_else(not)?;
        let rest = rest.strip_prefix(' ').ok_or_else(not)?;
        let (version, rest) = rest.split_once(' ').ok_or_else(not)?;
        let version: u32 = version.parse().map_err(|_| not())?;
        if let Some(reason) = rest.strip_prefix("refused") {
            return Ok(ServerHello::Refused {
                version,
                reason: crate::untrusted::line(reason.trim()).into_owned(),
            });
        }
        let rest = rest.strip_prefix("ok pid=").ok_or_else(not)?;
        let (pid, state) = rest.split_once(" state=").ok_or_else(not)?;
        Ok(ServerHello::Accepted {
            version,
            daemon: super::DaemonInfo {
                pid: pid.parse().map_err(|_| not())?,
                state_dir: state.into(),
            },
        })
    }
}

/// Read one hello line of at most [`MAX_HELLO_LINE`] bytes (the newline is cut off).
///
/// # Errors
/// The stream ended or failed first, or the line is longer than the limit or not UTF-8.
pub async fn read_hello_line<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<String> {
    let mut line = Vec::new();
    let n = r
        .take(MAX_HELLO_LINE as u64)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    if line.last() != Some(&b'\n') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("no hello line within {MAX_HELLO_LINE} bytes"),
        ));
    }
    line.pop();
    String::from_utf8(line)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "hello is not UTF-8"))
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream ended at a frame boundary (the other side closed).
    #[error("the connection closed")]
    Closed,
    /// The stream failed, or ended inside a frame.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A length over the limit (nothing of the body was read).
    #[error("a frame of {len} bytes is over the limit of {max} bytes")]
    TooLarge {
        /// The length it announced, bytes.
        len: u32,
        /// The limit, bytes.
        max: u32,
    },
    /// The body does not decode as the message expected.
    #[error("a frame that does not decode: {0}")]
    Decode(String),
    /// A message that cannot be encoded (or whose body is over the limit).
    #[error("a message that cannot be sent: {0}")]
    Encode(String),
}

/// Encode `msg` as one frame (length and body) into `buf` (cleared first); returns the
/// frame's length in bytes, header included.
///
/// # Errors
/// [`FrameError::Encode`]: serde refused the message, or its body is over `max` bytes.
pub fn encode_frame(
    msg: &impl Serialize,
    buf: &mut Vec<u8>,
    max: u32,
) -> Result<usize, FrameError> {
    buf.clear();
    buf.extend_from_slice(&[0; 4]);
    let mut body = postcard::to_extend(msg, std::mem::take(buf))
        .map_err(|e| FrameError::Encode(e.to_string()))?;
    let len = body.len() - 4;
    if len > max as usize {
        *buf = body;
        return Err(FrameError::Encode(format!(
            "a body of {len} bytes is over the limit of {max} bytes"
        )));
    }
    body[..4].copy_from_slice(&(len as u32).to_be_bytes());
    *buf = body;
    Ok(buf.len())
}

/// Write `msg` as one frame, `buf` the scratch space; returns its length in bytes.
///
/// # Errors
/// [`FrameError::Encode`], [`FrameError::Io`].
pub async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut W,
    msg: &impl Serialize,
    buf: &mut Vec<u8>,
    max: u32,
) -> Result<usize, FrameError> {
    let n = encode_frame(msg, buf, max)?;
    w.write_all(buf).await?;
    w.flush().await?;
    Ok(n)
}

/// Read one frame of at most `max` body bytes into `buf` and decode it.
///
/// # Errors
/// [`FrameError::Closed`] at the end of the stream; [`FrameError::TooLarge`],
/// [`FrameError::Io`], [`FrameError::Decode`].
pub async fn read_frame<R: AsyncRead + Unpin, T: DeserializeOwned>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: u32,
) -> Result<T, FrameError> {
    let mut head = [0u8; 4];
    match r.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(head);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    buf.clear();
    buf.resize(len as usize, 0);
    r.read_exact(buf).await?;
    postcard::from_bytes(buf).map_err(|e| FrameError::Decode(e.to_string()))
}

#[cfg(test)]
mod tests;
