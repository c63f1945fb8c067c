//! The daemon's side of the control socket: accept, check who connects, answer the hello,
//! then per connection a reader (commands in, forwarded to the engine through the daemon's
//! [`Client`]) and a writer (snapshots, events and answers out).
//!
//! Nothing here can hold the engine up: the writer reads snapshots from the engine's
//! watch channel (latest value only: a TUI that reads slowly, or not at all, gets the
//! newest snapshot when it reads again, as a difference from the last one it got), events
//! from a broadcast receiver of its own (a reader that falls behind loses the oldest), and
//! answers from the engine's reply channels. A connection costs the engine nothing while
//! its TUI is stuck. Input is untrusted even from the same user: a frame over
//! [`MAX_CLIENT_FRAME`] or one that does not decode closes that connection with the reason
//! ([`ServerMsg::Closing`]) and a log line.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinSet;

use crate::api::Client;

use super::DaemonInfo;
use super::delta::Encoder;
use super::wire::{
    self, AwaitedReply, ClientMsg, FrameError, MAX_CLIENT_FRAME, MAX_SERVER_FRAME,
    PROTOCOL_VERSION, ServerHello, ServerMsg,
};

/// Most connections served at once; more are refused with the reason.
pub const MAX_CONNECTIONS: usize = 32;

/// How long a client has to send its hello line.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Bind the control socket at `path` with mode 0600. A file already there is removed
/// first when it is a socket (left by a daemon that was killed: the caller holds the
/// state folder's owner lock, so no daemon serves it); anything else there is an error.
///
/// # Errors
/// The path holds something other than a socket, or the socket cannot be bound.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ));
        }
        Err(_) => {}
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("binding {}: {e}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// The running accept loop.
#[derive(Debug)]
pub struct Server {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

/// Serve `listener`: each connection of this process's user drives the engine behind
/// `client`; `daemon` is named in the hello.
pub fn serve(listener: UnixListener, client: Client, daemon: DaemonInfo) -> Server {
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, client, Arc::new(daemon), stopped));
    Server { stop, task }
}

impl Server {
    /// Stop accepting, let each connection send the answers still in flight (the
    /// engine's confirmation of a shutdown that a TUI asked for) and close, waiting at most
    /// `grace`; connections still open then are dropped.
    pub async fn stop(self, grace: Duration) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout(grace, &mut task).await.is_err() {
            task.abort();
        }
    }
}

async fn accept_loop(
    listener: UnixListener,
    client: Client,
    daemon: Arc<DaemonInfo>,
    mut stopped: watch::Receiver<bool>,
) {
    // SAFETY: geteuid(2) cannot fail
    let me = unsafe { libc::geteuid() };
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            () = until_stopped(&mut stopped) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    while conns.try_join_next().is_some() {}
                    if conns.len() >= MAX_CONNECTIONS {
                        tracing::warn!("control socket: {MAX_CONNECTIONS} connections already; one more refused");
                        tokio::spawn(async move {
                            let (_, mut wr) = stream.into_split();
                            refuse(&mut wr, "too many connections to this daemon").await;
                        });
                        continue;
                    }
                    conns.spawn(connection(stream, client.clone(), daemon.clone(), stopped.clone(), me));
                }
                Err(e) => {
                    tracing::warn!("control socket: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    while conns.join_next().await.is_some() {}
}

/// Send a refusal hello and close.
async fn refuse(wr: &mut OwnedWriteHalf, reason: &str) {
    let line = ServerHello::Refused {
        version: PROTOCOL_VERSION,
        reason: reason.to_owned(),
    }
    .line();
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let _ = wr.write_all(line.as_bytes()).await;
        let _ = wr.shutdown().await;
    })
    .await;
}

/// What the reader tells the writer.
enum FromReader {
    /// A request the engine will answer: its id and the reply's receiver.
    Awaited(u64, AwaitedReply),
    /// Request `id` gets no answer (the command does not answer).
    NoReply(u64),
    /// The client asked for a whole snapshot.
    Resync,
    /// The client sent what cannot be read: close with the reason.
    Closing(String),
}

async fn connection(
    stream: UnixStream,
    client: Client,
    daemon: Arc<DaemonInfo>,
    stopped: watch::Receiver<bool>,
    me: u32,
) {
    let cred = stream.peer_cred();
    let (rd, mut wr) = stream.into_split();
    match cred {
        Ok(c) if c.uid() == me => {}
        Ok(c) => {
            tracing::warn!(
                "control socket: refused a connection of uid {} (pid {}): only uid {me} may use it",
                c.uid(),
                c.pid().map_or_else(|| "?".to_owned(), |p| p.to_string())
            );
            refuse(
                &mut wr,
                &format!(
                    "uid {} may not use this daemon's control socket (only its own user, uid {me})",
                    c.uid()
                ),
            )
            .await;
            return;
        }
        Err(e) => {
            tracing::warn!("control socket: peer credentials unknown ({e}): refused");
            refuse(&mut wr, "peer credentials unknown").await;
            return;
        }
    }
    let mut rd = BufReader::new(rd);
    let hello = tokio::time::timeout(HELLO_TIMEOUT, wire::read_hello_line(&mut rd)).await;
    let line = match hello {
        Ok(Ok(line)) => line,
        Ok(Err(e)) => {
            tracing::debug!("control socket: no hello: {e}");
            refuse(&mut wr, &format!("no hello line: {e}")).await;
            return;
        }
        Err(_) => {
            refuse(&mut wr, "no hello line in time").await;
            return;
        }
    };
    match wire::parse_client_hello(&line) {
        Ok(v) if v == PROTOCOL_VERSION => {}
        Ok(v) => {
            tracing::warn!(
                "control socket: a client of protocol {v} refused (this daemon speaks {PROTOCOL_VERSION})"
            );
            refuse(
                &mut wr,
                &format!(
                    "this daemon speaks control protocol {PROTOCOL_VERSION}, the client {v}: attach with the ratorrent build the daemon runs, or restart the daemon with this one"
                ),
            )
            .await;
            return;
        }
        Err(e) => {
            tracing::warn!("control socket: {e}");
            refuse(&mut wr, &e).await;
            return;
        }
    }
    let accepted = ServerHello::Accepted {
        version: PROTOCOL_VERSION,
        daemon: (*daemon).clone(),
    };
    if wr.write_all(accepted.line().as_bytes()).await.is_err() {
        return;
    }
    tracing::info!("control socket: a client attached");
    let (notes_tx, notes) = mpsc::channel(64);
    let reader = tokio::spawn(read_loop(rd, client.clone(), notes_tx));
    let why = write_loop(wr, &client, notes, stopped).await;
    reader.abort();
    tracing::info!("control socket: a client left ({why})");
}

/// Commands in: forwarded to the engine in order.
async fn read_loop(
    mut rd: BufReader<OwnedReadHalf>,
    client: Client,
    notes: mpsc::Sender<FromReader>,
) {
    let mut buf = Vec::new();
    loop {
        let note = match wire::read_frame::<_, ClientMsg>(&mut rd, &mut buf, MAX_CLIENT_FRAME).await
        {
            Ok(ClientMsg::Command { id, mut command }) => {
                if id != 0 {
                    let note = match wire::install_reply(&mut command) {
                        Some(awaited) => FromReader::Awaited(id, awaited),
                        None => FromReader::NoReply(id),
                    };
                    // before the command goes: the answer is awaited from now on
                    if notes.send(note).await.is_err() {
                        return;
                    }
                }
                if client.send(command).await.is_err() {
                    return;
                }
                continue;
            }
            Ok(ClientMsg::Resync) => FromReader::Resync,
            Err(FrameError::Closed) => return,
            Err(e @ (FrameError::TooLarge { .. } | FrameError::Decode(_))) => {
                tracing::warn!("control socket: {e}: closing that connection");
                FromReader::Closing(e.to_string())
            }
            Err(e) => {
                tracing::debug!("control socket: {e}");
                return;
            }
        };
        let closing = matches!(note, FromReader::Closing(_));
        if notes.send(note).await.is_err() || closing {
            return;
        }
    }
}

/// Snapshots, events and answers out; returns why it ended.
async fn write_loop(
    mut wr: OwnedWriteHalf,
    client: &Client,
    mut notes: mpsc::Receiver<FromReader>,
    mut stopped: watch::Receiver<bool>,
) -> String {
    let mut snapshots = client.snapshots();
    let mut events = client.subscribe();
    let mut encoder = Encoder::new();
    let mut buf = Vec::new();
    let mut answers = FuturesUnordered::new();
    let mut snapshots_open = true;
    let mut events_open = true;
    let first = snapshots.borrow_and_update().clone();
    let frame = ServerMsg::Snapshot(Box::new(encoder.frame(&first)));
    if let Err(e) = wire::write_frame(&mut wr, &frame, &mut buf, MAX_SERVER_FRAME).await {
        return e.to_string();
    }
    let why = loop {
        let msg = tokio::select! {
            biased;
            () = until_stopped(&mut stopped) => break "the daemon stops".to_owned(),
            note = notes.recv() => match note {
                Some(FromReader::Awaited(id, awaited)) => {
                    answers.push(answer(id, awaited));
                    continue;
                }
                Some(FromReader::NoReply(id)) => ServerMsg::NoReply { id },
                Some(FromReader::Resync) => {
                    encoder.reset();
                    let snap = snapshots.borrow_and_update().clone();
                    ServerMsg::Snapshot(Box::new(encoder.frame(&snap)))
                }
                Some(FromReader::Closing(reason)) => {
                    let _ = wire::write_frame(&mut wr, &ServerMsg::Closing(reason.clone()), &mut buf, MAX_SERVER_FRAME).await;
                    break reason;
                }
                None => break "it closed the connection".to_owned(),
            },
            Some((id, answer)) = answers.next(), if !answers.is_empty() => answer_msg(id, answer),
            event = events.recv(), if events_open => match event {
                Ok(e) => ServerMsg::Event(e),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::debug!("control socket: a slow client lost {n} events");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    events_open = false;
                    continue;
                }
            },
            changed = snapshots.changed(), if snapshots_open => match changed {
                Ok(()) => {
                    let snap = snapshots.borrow_and_update().clone();
                    ServerMsg::Snapshot(Box::new(encoder.frame(&snap)))
                }
                Err(_) => {
                    snapshots_open = false;
                    continue;
                }
            },
        };
        match wire::write_frame(&mut wr, &msg, &mut buf, MAX_SERVER_FRAME).await {
            Ok(_) => {}
            Err(FrameError::Encode(e)) => {
                tracing::warn!("control socket: not sent: {e}");
                // the client's copy did not get this difference: the next one is whole
                encoder.reset();
            }
            Err(e) => break e.to_string(),
        }
    };
    // the daemon stops: the answers the engine gave on its way out (a shutdown's
    // confirmation) still go out
    while let Ok(note) = notes.try_recv() {
        if let FromReader::Awaited(id, awaited) = note {
            answers.push(answer(id, awaited));
        }
    }
    let flush = async {
        while let Some((id, answer)) = answers.next().await {
            if wire::write_frame(&mut wr, &answer_msg(id, answer), &mut buf, MAX_SERVER_FRAME)
                .await
                .is_err()
            {
                break;
            }
        }
        let _ = wr.shutdown().await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), flush).await;
    why
}

/// Resolves once the daemon stops (the flag turns `true`, or its sender is gone).
async fn until_stopped(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Request `id`'s answer, when the engine gives it.
async fn answer(id: u64, awaited: AwaitedReply) -> (u64, Option<wire::WireReply>) {
    (id, awaited.wait().await)
}

fn answer_msg(id: u64, answer: Option<wire::WireReply>) -> ServerMsg {
    match answer {
        Some(reply) => ServerMsg::Reply { id, reply },
        None => ServerMsg::NoReply { id },
    }
}
