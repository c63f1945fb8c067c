//! The client handle: the one way into a running engine.
//!
//! A [`Client`] wraps the three channels of the engine–UI contract (commands in, snapshots
//! and events out) and offers one async method per request, so no front end builds a
//! [`Command`] with a reply channel by hand. The TUI, the headless commands, the watch
//! folder and the tests all use it; a control socket or a Web API would be further users.
//!
//! Every method that waits for room in the command queue is `async`; the `try_` forms
//! never wait (the TUI's event loop must not block on a busy engine) and say
//! [`ClientError::Busy`] instead. Requests that the engine answers ([`Client::add`],
//! [`Client::recent_events`], [`Client::shutdown`]) wait for the answer; the others return
//! once the command is queued (the engine applies commands in order, so a later snapshot
//! shows their effect).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{broadcast, oneshot};

use super::{
    AddError, AddRequest, Command, CommandSender, EngineEvent, EventReceiver, FilePriority,
    Snapshot, SnapshotReceiver, TorrentId,
};

/// Why a request through a [`Client`] did not get what it asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The engine has stopped (its command channel or the reply channel closed): after a
    /// shutdown, or if the engine task ended.
    #[error("the engine is not running")]
    EngineGone,
    /// The engine's command queue is full (only from the `try_` methods, which never
    /// wait); the command was not sent.
    #[error("the engine is busy: command not sent, try again")]
    Busy,
    /// The engine refused an add, and said why.
    #[error(transparent)]
    Refused(#[from] AddError),
}

/// A handle on a running engine: cheap to clone, one per user of the engine.
///
/// Holding a `Client` keeps the engine's command channel open: the engine ends after
/// [`Client::shutdown`], or when every `Client` (and every other sender) is dropped.
#[derive(Debug, Clone)]
pub struct Client {
    commands: CommandSender,
    snapshots: SnapshotReceiver,
    /// Weak, so that the event channel closes when the engine ends.
    events: broadcast::WeakSender<EngineEvent>,
}

/// The answer to a request queued with a `try_` method: a future that resolves to the
/// engine's reply, or [`ClientError::EngineGone`] when the engine ended before answering.
#[derive(Debug)]
#[must_use = "the reply comes through this future"]
pub struct Reply<T> {
    rx: oneshot::Receiver<T>,
}

impl<T> Future for Reply<T> {
    type Output = Result<T, ClientError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.map_err(|_| ClientError::EngineGone))
    }
}

impl Client {
    /// A client over the engine's channels: `commands` to send to, `snapshots` to read
    /// (latest value wins) and `events`, the engine's event broadcast (the client keeps no
    /// strong reference to it: subscribers see it close when the engine drops it).
    pub fn new(
        commands: CommandSender,
        snapshots: SnapshotReceiver,
        events: &broadcast::Sender<EngineEvent>,
    ) -> Client {
        Client {
            commands,
            snapshots,
            events: events.downgrade(),
        }
    }

    /// Queue `command`, waiting for room in the engine's queue.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`] when the engine has stopped.
    pub async fn send(&self, command: Command) -> Result<(), ClientError> {
        self.commands
            .send(command)
            .await
            .map_err(|_| ClientError::EngineGone)
    }

    /// Queue `command` without waiting.
    ///
    /// # Errors
    /// [`ClientError::Busy`] when the queue is full (the command is dropped),
    /// [`ClientError::EngineGone`] when the engine has stopped.
    pub fn try_send(&self, command: Command) -> Result<(), ClientError> {
        self.commands.try_send(command).map_err(|e| match e {
            TrySendError::Full(_) => ClientError::Busy,
            TrySendError::Closed(_) => ClientError::EngineGone,
        })
    }

    /// Queue a command that carries the reply channel `make` is given, without waiting.
    fn try_request<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<Reply<T>, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.try_send(make(tx))?;
        Ok(Reply { rx })
    }

    /// Send a command that carries the reply channel `make` is given and wait for the answer.
    async fn request<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.send(make(tx)).await?;
        Reply { rx }.await
    }

    /// Add a torrent (a .torrent file or a magnet link, see [`AddRequest`]) and wait for
    /// its id.
    ///
    /// # Errors
    /// [`ClientError::Refused`] with the engine's [`AddError`] (already added, not a valid
    /// torrent, unsafe paths); [`ClientError::EngineGone`].
    pub async fn add(&self, request: AddRequest) -> Result<TorrentId, ClientError> {
        Ok(self.request(|tx| Command::Add(request, Some(tx))).await??)
    }

    /// Queue an add without waiting; the returned [`Reply`] gives the engine's answer.
    ///
    /// # Errors
    /// [`ClientError::Busy`], [`ClientError::EngineGone`] (nothing was sent).
    pub fn try_add(
        &self,
        request: AddRequest,
    ) -> Result<Reply<Result<TorrentId, AddError>>, ClientError> {
        self.try_request(|tx| Command::Add(request, Some(tx)))
    }

    /// Give torrent `id` a peer to dial, added by hand ([`Command::AddPeer`]).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn add_peer(
        &self,
        id: TorrentId,
        addr: std::net::SocketAddr,
    ) -> Result<(), ClientError> {
        self.send(Command::AddPeer { id, addr }).await
    }

    /// Put an add that this front end refused itself into the session log
    /// ([`Command::AddRefused`]): `source` is what was to be added, `reason` why not.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn add_refused(
        &self,
        source: super::AddSource,
        reason: String,
    ) -> Result<(), ClientError> {
        self.send(Command::AddRefused { source, reason }).await
    }

    /// Forget a torrent; with `delete_data` its payload files go too.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn remove(&self, id: TorrentId, delete_data: bool) -> Result<(), ClientError> {
        self.send(Command::Remove { id, delete_data }).await
    }

    /// Pause a torrent (peers dropped, trackers told `stopped`; data stays).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn pause(&self, id: TorrentId) -> Result<(), ClientError> {
        self.send(Command::Pause(id)).await
    }

    /// Start a paused torrent again, or retry one in Error.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn resume(&self, id: TorrentId) -> Result<(), ClientError> {
        self.send(Command::Resume(id)).await
    }

    /// Hash a torrent's data on disk again.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn recheck(&self, id: TorrentId) -> Result<(), ClientError> {
        self.send(Command::Recheck(id)).await
    }

    /// Publish the detail (peers, files, trackers, pieces) of torrent `id` in every
    /// snapshot from now on; `None` stops.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn focus(&self, id: Option<TorrentId>) -> Result<(), ClientError> {
        self.send(Command::Focus(id)).await
    }

    /// Set the session-wide rate limits, bytes/s (0 = unlimited).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn set_limits(&self, download: u64, upload: u64) -> Result<(), ClientError> {
        self.send(Command::SetLimits { download, upload }).await
    }

    /// Switch alternative speed limits on or off ([`Command::SetAltSpeed`]).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn set_alt_speed(&self, on: bool) -> Result<(), ClientError> {
        self.send(Command::SetAltSpeed(on)).await
    }

    /// Flip alternative speed limits ([`Command::ToggleAltSpeed`]).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn toggle_alt_speed(&self) -> Result<(), ClientError> {
        self.send(Command::ToggleAltSpeed).await
    }

    /// Set one torrent's own rate limits, bytes/s (0 = none; the session's apply on top).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn set_torrent_limits(
        &self,
        id: TorrentId,
        download: u64,
        upload: u64,
    ) -> Result<(), ClientError> {
        self.send(Command::SetTorrentLimits {
            id,
            download,
            upload,
        })
        .await
    }

    /// Set the seeding goals (share limits) of torrents `ids`: -2 the session's `[seeding]`
    /// value, -1 none, >= 0 the limit (ratio; minutes).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn set_share_limits(
        &self,
        ids: Vec<TorrentId>,
        limits: super::ShareLimits,
    ) -> Result<(), ClientError> {
        self.send(Command::SetShareLimits { ids, limits }).await
    }

    /// Set the priority of files of a torrent (`files`: indices into
    /// [`TorrentDetail::files`](super::TorrentDetail::files)).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn set_file_priority(
        &self,
        id: TorrentId,
        files: Vec<usize>,
        priority: FilePriority,
    ) -> Result<(), ClientError> {
        self.send(Command::SetFilePriority {
            id,
            files,
            priority,
        })
        .await
    }

    /// Sequential download on or off for torrents `ids` (see [`Command::SetSequential`]).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn set_sequential(&self, ids: Vec<TorrentId>, on: bool) -> Result<(), ClientError> {
        self.send(Command::SetSequential { ids, on }).await
    }

    /// First and last pieces first on or off for torrents `ids` (see
    /// [`Command::SetFirstLastPiecePrio`]).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn set_first_last_piece_prio(
        &self,
        ids: Vec<TorrentId>,
        on: bool,
    ) -> Result<(), ClientError> {
        self.send(Command::SetFirstLastPiecePrio { ids, on }).await
    }

    /// Put a torrent's files in folder `to`: moved there (`move_data`), or only pointed
    /// there and rechecked (see [`Command::MoveStorage`]).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn move_storage(
        &self,
        id: TorrentId,
        to: PathBuf,
        move_data: bool,
    ) -> Result<(), ClientError> {
        self.send(Command::MoveStorage { id, to, move_data }).await
    }

    /// The engine's most recent events, oldest first (at most its history size).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn recent_events(&self) -> Result<Vec<EngineEvent>, ClientError> {
        self.request(Command::RecentEvents).await
    }

    /// [`Client::recent_events`] without waiting for room in the queue.
    ///
    /// # Errors
    /// [`ClientError::Busy`], [`ClientError::EngineGone`] (nothing was sent).
    pub fn try_recent_events(&self) -> Result<Reply<Vec<EngineEvent>>, ClientError> {
        self.try_request(Command::RecentEvents)
    }

    /// Edit the tracker URLs of torrents `ids` ([`Command::EditTrackers`]); with `dry_run`
    /// only count what would change. The inner result is the engine's answer.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn edit_trackers(
        &self,
        ids: Vec<TorrentId>,
        edit: super::TrackerEdit,
        dry_run: bool,
    ) -> Result<Result<super::TrackerEditOutcome, super::TrackerEditError>, ClientError> {
        self.request(|tx| Command::EditTrackers {
            ids,
            edit,
            dry_run,
            reply: Some(tx),
        })
        .await
    }

    /// [`Client::edit_trackers`] without waiting for room in the queue.
    ///
    /// # Errors
    /// [`ClientError::Busy`], [`ClientError::EngineGone`] (nothing was sent).
    pub fn try_edit_trackers(
        &self,
        ids: Vec<TorrentId>,
        edit: super::TrackerEdit,
        dry_run: bool,
    ) -> Result<Reply<Result<super::TrackerEditOutcome, super::TrackerEditError>>, ClientError>
    {
        self.try_request(|tx| Command::EditTrackers {
            ids,
            edit,
            dry_run,
            reply: Some(tx),
        })
    }

    /// Wait until a snapshot showing the effect of every command this client sent before
    /// is published ([`Command::Flush`]).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn flush(&self) -> Result<(), ClientError> {
        self.request(Command::Flush).await
    }

    /// The detail (peers, files, trackers, pieces, goals) of torrent `id`, built once for
    /// this request (the focus of the snapshots stays); `None` when there is no such
    /// torrent.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn detail(
        &self,
        id: TorrentId,
    ) -> Result<Option<Box<super::TorrentDetail>>, ClientError> {
        self.request(|tx| Command::Detail(id, tx)).await
    }

    /// Change session settings ([`Command::ChangeSettings`]); the inner result is the
    /// settings in effect, or why the change was refused.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`].
    pub async fn change_settings(
        &self,
        change: super::SettingsChange,
    ) -> Result<Result<super::SessionSettings, String>, ClientError> {
        self.request(|tx| Command::ChangeSettings(change, Some(tx)))
            .await
    }

    /// Stop every torrent, tell the trackers, save the session state, and end the engine;
    /// returns when the engine confirms (callers bound the wait with a timeout).
    ///
    /// # Errors
    /// [`ClientError::EngineGone`]: the engine had stopped already, or ended without
    /// confirming.
    pub async fn shutdown(&self) -> Result<(), ClientError> {
        self.request(Command::Shutdown).await
    }

    /// Resolves when the engine has stopped (its command channel closed).
    pub async fn closed(&self) {
        self.commands.closed().await;
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }

    /// A receiver of snapshots (latest value wins; `changed()` wakes on the next one).
    pub fn snapshots(&self) -> SnapshotReceiver {
        self.snapshots.clone()
    }

    /// Wait until a snapshot satisfies `ready` (the current one included) and return it.
    ///
    /// # Errors
    /// [`ClientError::EngineGone`]: the engine stopped publishing first.
    pub async fn wait_for(
        &self,
        mut ready: impl FnMut(&Snapshot) -> bool,
    ) -> Result<Arc<Snapshot>, ClientError> {
        let mut rx = self.snapshots.clone();
        let snap = rx
            .wait_for(|s| ready(s))
            .await
            .map_err(|_| ClientError::EngineGone)?;
        Ok(snap.clone())
    }

    /// Receive the engine's events from now on (see [`Client::recent_events`] for the
    /// history); a reader that falls behind loses the oldest.
    /// Once the engine has stopped, the receiver reports the channel closed.
    pub fn subscribe(&self) -> EventReceiver {
        match self.events.upgrade() {
            Some(events) => events.subscribe(),
            None => broadcast::channel(1).1,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::{mpsc, watch};

    use super::*;
    use crate::api::{AddSource, EventKind, EventLevel};

    /// The engine's ends of a client's channels, for a stand-in engine.
    struct Engine {
        commands: mpsc::Receiver<Command>,
        snapshots: watch::Sender<Arc<Snapshot>>,
        events: broadcast::Sender<EngineEvent>,
    }

    fn pair(queue: usize) -> (Client, Engine) {
        let (cmd_tx, commands) = mpsc::channel(queue);
        let (snapshots, snap_rx) = watch::channel(Arc::new(Snapshot::default()));
        let (events, _) = broadcast::channel(16);
        (
            Client::new(cmd_tx, snap_rx, &events),
            Engine {
                commands,
                snapshots,
                events,
            },
        )
    }

    fn event(seq: u64, message: &str) -> EngineEvent {
        EngineEvent {
            seq,
            at: std::time::SystemTime::UNIX_EPOCH,
            torrent: None,
            level: EventLevel::Info,
            kind: EventKind::Added,
            message: message.to_owned(),
        }
    }

    #[tokio::test]
    async fn add_returns_the_engines_answer() {
        let (client, mut engine) = pair(4);
        let stand_in = tokio::spawn(async move {
            let mut n = 0;
            while let Some(c) = engine.commands.recv().await {
                let Command::Add(req, Some(reply)) = c else {
                    panic!("not an add with a reply: {c:?}");
                };
                n += 1;
                let answer = match req.source {
                    AddSource::File(p) if p.ends_with("dup.torrent") => {
                        Err(AddError::AlreadyAdded {
                            id: TorrentId(1),
                            name: "dup".into(),
                            info_hash: "ab".repeat(20),
                            merged: None,
                        })
                    }
                    AddSource::File(p) if p.ends_with("gone.torrent") => {
                        drop(reply);
                        continue;
                    }
                    _ => Ok(TorrentId(n)),
                };
                reply.send(answer).unwrap();
            }
        });
        let ok = client
            .add(AddRequest::new(PathBuf::from("/x/a.torrent")))
            .await;
        assert_eq!(ok, Ok(TorrentId(1)));
        let dup = client
            .add(AddRequest::new(PathBuf::from("/x/dup.torrent")))
            .await;
        assert!(
            matches!(
                dup,
                Err(ClientError::Refused(AddError::AlreadyAdded {
                    id: TorrentId(1),
                    ..
                }))
            ),
            "{dup:?}"
        );
        let magnet = AddRequest::new(AddSource::Magnet(format!(
            "magnet:?xt=urn:btih:{}",
            "cd".repeat(20)
        )));
        let pending = client.try_add(magnet).unwrap();
        assert_eq!(pending.await, Ok(Ok(TorrentId(3))));
        // the engine dropped the reply without answering
        let gone = client
            .add(AddRequest::new(PathBuf::from("/x/gone.torrent")))
            .await;
        assert_eq!(gone, Err(ClientError::EngineGone));
        drop(client);
        stand_in.await.unwrap();
    }

    #[tokio::test]
    async fn requests_to_a_stopped_engine_say_it_is_gone() {
        let (client, engine) = pair(4);
        drop(engine);
        assert_eq!(
            client
                .add(AddRequest::new(PathBuf::from("a.torrent")))
                .await,
            Err(ClientError::EngineGone)
        );
        assert_eq!(
            client.pause(TorrentId(1)).await,
            Err(ClientError::EngineGone)
        );
        assert_eq!(client.shutdown().await, Err(ClientError::EngineGone));
        assert_eq!(client.recent_events().await, Err(ClientError::EngineGone));
        assert_eq!(
            client.try_send(Command::PauseAll),
            Err(ClientError::EngineGone)
        );
        assert!(client.try_recent_events().is_err());
        assert!(client.wait_for(|_| false).await.is_err());
        // closed() resolves at once
        tokio::time::timeout(Duration::from_secs(5), client.closed())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn try_send_never_waits_on_a_full_queue() {
        let (client, mut engine) = pair(1);
        client.try_send(Command::PauseAll).unwrap();
        assert_eq!(client.try_send(Command::ResumeAll), Err(ClientError::Busy));
        assert!(matches!(
            client.try_add(AddRequest::new(PathBuf::from("a.torrent"))),
            Err(ClientError::Busy)
        ));
        assert!(matches!(
            engine.commands.recv().await,
            Some(Command::PauseAll)
        ));
        // room again
        client.try_send(Command::ResumeAll).unwrap();
        assert!(matches!(
            engine.commands.recv().await,
            Some(Command::ResumeAll)
        ));
    }

    #[tokio::test]
    async fn commands_arrive_in_order_with_their_arguments() {
        let (client, mut engine) = pair(16);
        let id = TorrentId(7);
        client.pause(id).await.unwrap();
        client.resume(id).await.unwrap();
        client.recheck(id).await.unwrap();
        client.focus(Some(id)).await.unwrap();
        client.set_limits(1000, 2000).await.unwrap();
        client.set_torrent_limits(id, 3, 4).await.unwrap();
        client.set_alt_speed(true).await.unwrap();
        client.toggle_alt_speed().await.unwrap();
        client
            .set_file_priority(id, vec![0, 2], FilePriority::High)
            .await
            .unwrap();
        client
            .move_storage(id, PathBuf::from("/new"), true)
            .await
            .unwrap();
        client.remove(id, true).await.unwrap();
        drop(client);
        let mut got = Vec::new();
        while let Some(c) = engine.commands.recv().await {
            got.push(format!("{c:?}"));
        }
        assert_eq!(
            got,
            [
                "Pause(TorrentId(7))",
                "Resume(TorrentId(7))",
                "Recheck(TorrentId(7))",
                "Focus(Some(TorrentId(7)))",
                "SetLimits { download: 1000, upload: 2000 }",
                "SetTorrentLimits { id: TorrentId(7), download: 3, upload: 4 }",
                "SetAltSpeed(true)",
                "ToggleAltSpeed",
                "SetFilePriority { id: TorrentId(7), files: [0, 2], priority: High }",
                "MoveStorage { id: TorrentId(7), to: \"/new\", move_data: true }",
                "Remove { id: TorrentId(7), delete_data: true }",
            ]
        );
    }

    #[tokio::test]
    async fn shutdown_waits_for_the_engines_confirmation() {
        let (client, mut engine) = pair(4);
        let confirmed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = confirmed.clone();
        let stand_in = tokio::spawn(async move {
            match engine.commands.recv().await {
                Some(Command::Shutdown(reply)) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                    reply.send(()).unwrap();
                }
                other => panic!("{other:?}"),
            }
        });
        client.shutdown().await.unwrap();
        assert!(confirmed.load(std::sync::atomic::Ordering::SeqCst));
        stand_in.await.unwrap();
        // the engine ended: a second shutdown has nobody to ask
        assert_eq!(client.shutdown().await, Err(ClientError::EngineGone));
    }

    #[tokio::test]
    async fn recent_events_and_subscriptions() {
        let (client, mut engine) = pair(4);
        let mut early = client.subscribe();
        engine.events.send(event(1, "first")).unwrap();
        let late = client.clone().subscribe();
        engine.events.send(event(2, "second")).unwrap();
        assert_eq!(early.recv().await.unwrap().message, "first");
        assert_eq!(early.recv().await.unwrap().message, "second");
        let mut late = late;
        assert_eq!(
            late.recv().await.unwrap().message,
            "second",
            "starts when subscribed"
        );
        let stand_in = tokio::spawn(async move {
            if let Some(Command::RecentEvents(reply)) = engine.commands.recv().await {
                reply
                    .send(vec![event(1, "first"), event(2, "second")])
                    .unwrap();
            }
            engine
        });
        let history = client.recent_events().await.unwrap();
        assert_eq!(history.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        // the engine ends: subscribers see the channel close, and so do later ones
        drop(stand_in.await.unwrap());
        assert!(matches!(
            early.recv().await,
            Err(broadcast::error::RecvError::Closed)
        ));
        assert!(matches!(
            client.subscribe().recv().await,
            Err(broadcast::error::RecvError::Closed)
        ));
    }

    #[tokio::test]
    async fn wait_for_returns_the_first_snapshot_that_satisfies() {
        let (client, engine) = pair(4);
        assert_eq!(client.snapshot().seq, 0);
        let waiter = {
            let client = client.clone();
            tokio::spawn(async move { client.wait_for(|s| s.seq >= 2).await })
        };
        for seq in 1..=3 {
            engine.snapshots.send_replace(Arc::new(Snapshot {
                seq,
                ..Snapshot::default()
            }));
            tokio::task::yield_now().await;
        }
        let got = waiter.await.unwrap().unwrap();
        assert!(got.seq >= 2, "{}", got.seq);
        // the current snapshot counts too
        assert_eq!(client.wait_for(|s| s.seq == 3).await.unwrap().seq, 3);
        assert_eq!(client.snapshot().seq, 3);
        assert_eq!(client.snapshots().borrow().seq, 3);
    }
}
