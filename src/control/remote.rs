//! The TUI's side of the control socket: [`connect`] gives an [`api::Client`](Client) whose
//! channels are bridged to a daemon's socket. Commands sent through it go to the daemon's
//! engine (their reply senders stay here, a request id travels instead); the daemon's
//! snapshots arrive as differences and are rebuilt into whole [`Snapshot`]s on the
//! client's watch channel (latest value only, as in-process); its events come out of the
//! client's broadcast channel.
//!
//! When the connection ends (the daemon stopped or was killed), the snapshot and event
//! channels close and requests say [`ClientError::EngineGone`](crate::api::ClientError),
//! exactly as when an in-process engine ends. Dropping every clone of the client closes
//! the connection; the daemon runs on.
//!
//! Paths in commands are made absolute here (an add's .torrent file and folder, a move's
//! target): the daemon does not run in this process's folder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::api::{AddSource, Client, Command, EngineEvent, Snapshot};
use crate::lock::MutexExt;

use super::DaemonInfo;
use super::delta::Decoder;
use super::wire::{
    self, ClientMsg, FrameError, MAX_CLIENT_FRAME, MAX_SERVER_FRAME, PROTOCOL_VERSION,
    PendingReply, ServerHello, ServerMsg,
};

/// How long [`connect`] waits for the daemon's hello and first snapshot (a daemon that is
/// starting answers once its session is restored).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to a daemon.
#[derive(Debug)]
pub struct Remote {
    /// The daemon's engine, as a client handle.
    pub client: Client,
    /// Who answered.
    pub daemon: DaemonInfo,
}

/// Why [`connect`] failed.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The socket could not be reached.
    #[error("cannot connect to the daemon's control socket {}: {error}", path.display())]
    Connect {
        /// The socket.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The daemon speaks another version of the control protocol.
    #[error(
        "the daemon speaks control protocol {daemon} and this ratorrent speaks {ours}: attach with the ratorrent build the daemon runs, or restart the daemon with this one (systemctl --user restart ratorrent)"
    )]
    Version {
        /// This build's version.
        ours: u32,
        /// The daemon's.
        daemon: u32,
    },
    /// The daemon refused the connection, and said why.
    #[error("the daemon refused the connection: {0}")]
    Refused(String),
    /// The hello or the first snapshot did not come, or made no sense.
    #[error("attaching to the daemon: {0}")]
    Handshake(String),
}

/// Connect to the daemon's control socket at `path`, say hello, read its first snapshot
/// and start the bridge (two tasks on the current runtime).
///
/// # Errors
/// [`AttachError`]: no socket or no permission, another protocol version, a refusal (another
/// user, too many connections), no answer within [`HANDSHAKE_TIMEOUT`].
pub async fn connect(path: &Path) -> Result<Remote, AttachError> {
    let stream = UnixStream::connect(path)
        .await
        .map_err(|error| AttachError::Connect {
            path: path.to_path_buf(),
            error,
        })?;
    tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(stream))
        .await
        .map_err(|_| {
            AttachError::Handshake(format!(
                "no answer within {} s",
                HANDSHAKE_TIMEOUT.as_secs()
            ))
        })?
}

async fn handshake(stream: UnixStream) -> Result<Remote, AttachError> {
    let hs = |e: &dyn std::fmt::Display| AttachError::Handshake(e.to_string());
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    // a daemon that refuses at once (another user) may close before the hello is
    // written: its refusal is still there to read
    let sent = wr.write_all(wire::client_hello().as_bytes()).await;
    let line = wire::read_hello_line(&mut rd).await.map_err(|e| {
        let e = sent.err().unwrap_or(e);
        hs(&format_args!(
            "the daemon closed the connection without a hello ({e})"
        ))
    })?;
    let daemon = match ServerHello::parse(&line).map_err(|e| hs(&e))? {
        ServerHello::Accepted { version, daemon } if version == PROTOCOL_VERSION => daemon,
        ServerHello::Accepted { version, .. } => {
            return Err(AttachError::Version {
                ours: PROTOCOL_VERSION,
                daemon: version,
            });
        }
        ServerHello::Refused { version, .. } if version != PROTOCOL_VERSION => {
            return Err(AttachError::Version {
                ours: PROTOCOL_VERSION,
                daemon: version,
            });
        }
        ServerHello::Refused { reason, .. } => return Err(AttachError::Refused(reason)),
    };
    let mut buf = Vec::new();
    let mut decoder = Decoder::new();
    let first = match wire::read_frame::<_, ServerMsg>(&mut rd, &mut buf, MAX_SERVER_FRAME).await {
        Ok(ServerMsg::Snapshot(frame)) => decoder.apply(*frame).map_err(|e| hs(&e))?,
        Ok(ServerMsg::Closing(reason)) => return Err(AttachError::Refused(reason)),
        Ok(other) => {
            return Err(hs(&format_args!(
                "a first message that is not a snapshot: {other:?}"
            )));
        }
        Err(e) => return Err(hs(&e)),
    };
    let (cmd_tx, commands) = mpsc::channel(256);
    let (snap_tx, snap_rx) = watch::channel(first);
    let (ev_tx, _) = broadcast::channel(256);
    let client = Client::new(cmd_tx, snap_rx, &ev_tx);
    let pending = Arc::new(Mutex::new(HashMap::new()));
    let (resync_tx, resync) = mpsc::channel(1);
    let (lost_tx, lost) = oneshot::channel();
    tokio::spawn(read_loop(
        rd,
        decoder,
        Bridge {
            snapshots: snap_tx,
            events: ev_tx,
            pending: pending.clone(),
            resync: resync_tx,
            _lost: lost_tx,
        },
    ));
    tokio::spawn(write_loop(wr, commands, pending, resync, lost));
    Ok(Remote { client, daemon })
}

/// Requests waiting for the daemon's answer, by id.
type Pending = Arc<Mutex<HashMap<u64, PendingReply>>>;

/// What the reader feeds: the client's channels, the answers awaited, the writer.
struct Bridge {
    snapshots: watch::Sender<Arc<Snapshot>>,
    events: broadcast::Sender<EngineEvent>,
    pending: Pending,
    resync: mpsc::Sender<()>,
    /// Dropped when the reader ends: the writer stops too.
    _lost: oneshot::Sender<()>,
}

async fn read_loop(mut rd: BufReader<OwnedReadHalf>, mut decoder: Decoder, bridge: Bridge) {
    let mut buf = Vec::new();
    let mut resync_asked = false;
    loop {
        match wire::read_frame::<_, ServerMsg>(&mut rd, &mut buf, MAX_SERVER_FRAME).await {
            Ok(ServerMsg::Snapshot(frame)) => match decoder.apply(*frame) {
                Ok(snap) => {
                    resync_asked = false;
                    bridge.snapshots.send_replace(snap);
                }
                Err(e) => {
                    decoder.expect_whole();
                    if !resync_asked {
                        tracing::warn!("control connection: {e}; asking for a whole snapshot");
                        resync_asked = true;
                        let _ = bridge.resync.try_send(());
                    }
                }
            },
            Ok(ServerMsg::Event(e)) => {
                let _ = bridge.events.send(e);
            }
            Ok(ServerMsg::Reply { id, reply }) => {
                let waiter = bridge.pending.locked().remove(&id);
                if let Some(waiter) = waiter
                    && !waiter.answer(reply)
                {
                    tracing::warn!("control connection: an answer of another kind to request {id}");
                }
            }
            Ok(ServerMsg::NoReply { id }) => {
                bridge.pending.locked().remove(&id);
            }
            Ok(ServerMsg::Closing(reason)) => {
                tracing::warn!("control connection: the daemon closed it: {reason}");
                break;
            }
            Err(FrameError::Closed) => {
                tracing::info!("control connection: the daemon closed it");
                break;
            }
            Err(e) => {
                tracing::warn!("control connection: {e}");
                break;
            }
        }
    }
    // every request still waiting hears that the engine is gone
    bridge.pending.locked().clear();
}

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut commands: mpsc::Receiver<Command>,
    pending: Pending,
    mut resync: mpsc::Receiver<()>,
    mut lost: oneshot::Receiver<()>,
) {
    let mut buf = Vec::new();
    let mut next_id = 1u64;
    loop {
        let msg = tokio::select! {
            command = commands.recv() => match command {
                Some(mut command) => {
                    absolute_paths(&mut command);
                    let id = match wire::take_reply(&mut command) {
                        Some(waiter) => {
                            let id = next_id;
                            next_id += 1;
                            pending.locked().insert(id, waiter);
                            id
                        }
                        None => 0,
                    };
                    (id, ClientMsg::Command { id, command })
                }
                // every client handle is gone: the TUI quit
                None => break,
            },
            Some(()) = resync.recv() => (0, ClientMsg::Resync),
            _ = &mut lost => break,
        };
        let (id, msg) = msg;
        match wire::write_frame(&mut wr, &msg, &mut buf, MAX_CLIENT_FRAME).await {
            Ok(_) => {}
            Err(FrameError::Encode(e)) => {
                tracing::warn!("control connection: a command not sent: {e}");
                // its waiter hears "engine gone" rather than nothing
                pending.locked().remove(&id);
            }
            Err(e) => {
                tracing::debug!("control connection: {e}");
                break;
            }
        }
    }
    let _ = wr.shutdown().await;
}

/// Make the paths of `command` absolute against this process's folder.
fn absolute_paths(command: &mut Command) {
    let absolute = |p: &mut PathBuf| {
        if let Ok(a) = std::path::absolute(&*p) {
            *p = a;
        }
    };
    match command {
        Command::Add(request, _) => {
            if let AddSource::File(p) = &mut request.source {
                absolute(p);
            }
            if let Some(d) = &mut request.download_dir {
                absolute(d);
            }
        }
        Command::MoveStorage { to, .. } => absolute(to),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
