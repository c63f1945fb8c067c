//! The session actor: owns every torrent, accepts incoming peers, answers commands, runs
//! the one deadline queue and publishes snapshots.
//!
//! Nothing else mutates engine state. Front ends talk to it only through the
//! [`Client`](crate::api::Client) in [`SessionHandle::client`] (commands, snapshots,
//! events). The task sleeps until a command, an event from a connection, disk thread or
//! tracker task, an incoming connection, or the earliest deadline: a session whose torrents
//! are idle does not wake up.
//!
//! Rooms beside this actor loop and its dispatch: `start` (the handle and start-up),
//! `library` (the torrents by id and info hash; add and remove), `listener`
//! (incoming connections), `publish` (snapshots), `persist` (the state store: restore
//! and checkpoints), `disk_guard` (pause downloads when their volume runs full),
//! `ip_filter` (read the IP filter file, and again when it changes) and `categories`
//! (categories and tags: their commands, an add's folder, their file).

/// Borrow the session's parts as an [`Env`] next to one torrent.
macro_rules! env {
    ($s:ident, $now:expr) => {
        Env {
            ctx: &$s.ctx,
            timers: &mut $s.timers,
            log: &mut $s.log,
            checks: &mut $s.checks,
            now: $now,
            publish_now: &mut $s.publish_now,
            store: $s.persist.store(),
            queue: &$s.queue.gate,
            seeding: &$s.settings.seeding,
        }
    };
}

mod bind;
mod categories;
mod create;
mod disk_guard;
mod ip_filter;
mod library;
mod listener;
mod persist;
mod publish;
mod queue;
mod settings;
mod start;
mod tracker_edit;

pub use disk_guard::{DISK_GUARD_INTERVAL, RESUME_MARGIN};
pub use persist::{CHECKPOINT_INTERVAL, CHECKPOINT_SOON};
pub use publish::{PUBLISH_INTERVAL, PUBLISH_MIN_GAP};
pub use start::{SessionHandle, start, start_with_clock, start_with_state};

use disk_guard::DiskGuard;
use library::Library;
use persist::Persist;
use publish::{Due, Publisher};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::alt_speed::AltSpeeds;
use super::ctx::{SessionCtx, SessionEvent};
use super::event_log::EventLog;
use super::timer::Timers;
use super::torrent::state::Input;
use super::torrent::{CheckQueue, Env, STOP_ANNOUNCE_TIMEOUT, TimerKey, Torrent};
use crate::api::{AddError, AddSource, Command, EventKind, EventLevel, TorrentId, TorrentState};

struct Session {
    ctx: Arc<SessionCtx>,
    torrents: BTreeMap<TorrentId, Torrent>,
    /// Ids and the info hash registry.
    library: Library,
    timers: Timers<TimerKey>,
    log: EventLog,
    checks: CheckQueue,
    publisher: Publisher,
    /// A state changed: publish as soon as [`PUBLISH_MIN_GAP`] allows.
    publish_now: bool,
    /// The state store and what is still to be written to it.
    persist: Persist,
    /// The disk guard's rule and its last measurement of free space.
    guard: DiskGuard,
    /// The IP filter file: its last stamp, a look in progress, the count last shown.
    filter: ip_filter::FilterWatch,
    /// Alternative speed limits: the switch, both pairs, the schedule.
    alt: AltSpeeds,
    /// The download and seeding queue (`[queue]`).
    queue: queue::Queue,
    /// Categories and tags.
    categories: categories::CategoryState,
    /// The settings a front end may change while the session runs (see `settings`).
    settings: settings::Settings,
    /// [`Command::Flush`] replies owed at the next publish.
    flushes: Vec<tokio::sync::oneshot::Sender<()>>,
}

/// Most commands taken in one go before the work that follows an input (see
/// [`Session::after_input`]).
const COMMAND_BATCH: usize = 256;

impl Session {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut events: mpsc::UnboundedReceiver<SessionEvent>,
        listeners: bind::Listeners,
    ) {
        let bind::Listeners {
            tcp: listener,
            utp_incoming: mut utp_in,
            ..
        } = listeners;
        // a changed DHT node count is published (the status bar shows it)
        let mut dht_nodes = self.ctx.dht.get().map(|d| d.watch_nodes());
        let mut dht_generation = self.ctx.dht.generation();
        let mut had_nodes = false;
        // the status bar's free space, measured at once and then now and then
        self.disk_guard_wanted();
        loop {
            if self.ctx.dht.generation() != dht_generation {
                // the DHT was switched on or off while the session runs
                dht_generation = self.ctx.dht.generation();
                dht_nodes = self.ctx.dht.get().map(|d| d.watch_nodes());
                had_nodes = false;
            }
            let deadline = self.timers.next_deadline();
            tokio::select! {
                c = commands.recv() => {
                    // the commands already queued go in one batch before the work after
                    // an input (the queue's look, a publish): 10,000 adds from the
                    // command line are not 10,000 looks at the whole queue
                    let mut next = c;
                    let mut batch = 0;
                    loop {
                        match next {
                            None => { self.shutdown(&mut events).await; return; }
                            Some(Command::Shutdown(reply)) => {
                                self.shutdown(&mut events).await;
                                let _ = reply.send(());
                                return;
                            }
                            Some(c) => self.command(c),
                        }
                        batch += 1;
                        if batch == COMMAND_BATCH {
                            break;
                        }
                        match commands.try_recv() {
                            Ok(c) => next = Some(c),
                            Err(_) => break,
                        }
                    }
                },
                Some(ev) = events.recv() => {
                    self.event(ev);
                    // drain what else is queued before publishing
                    while let Ok(ev) = events.try_recv() {
                        self.event(ev);
                    }
                }
                a = async {
                    match &listener {
                        Some(l) => l.accept().await,
                        None => std::future::pending().await,
                    }
                } => match a {
                    Ok((stream, addr)) => match stream.set_nodelay(true) {
                        Ok(()) => self.incoming(stream, addr),
                        Err(e) => tracing::debug!(%addr, "incoming connection: {e}"),
                    },
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(s) = async {
                    match utp_in.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    let addr = s.peer_addr();
                    self.incoming(s, addr);
                }
                _ = sleep_until(deadline), if deadline.is_some() => self.timers_due(),
                Some(Ok(())) = async {
                    match dht_nodes.as_mut() {
                        Some(rx) => Some(rx.changed().await),
                        None => std::future::pending().await,
                    }
                } => {
                    self.publish_now = true;
                    let has = dht_nodes.as_ref().is_some_and(|rx| *rx.borrow() > 0);
                    if has && !had_nodes {
                        // lookups skipped for want of nodes go now
                        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
                        for id in ids {
                            self.with(id, |t, env| t.dht_kick(env));
                        }
                    }
                    had_nodes = has;
                }
            }
            self.grant_checks();
            self.after_input();
        }
    }

    /// Run `f` on torrent `id` with the session's parts; note it for the next publish.
    fn with<R>(
        &mut self,
        id: TorrentId,
        f: impl FnOnce(&mut Torrent, &mut Env<'_>) -> R,
    ) -> Option<R> {
        let now = Instant::now();
        let t = self.torrents.get_mut(&id)?;
        let was_publish = self.publish_now;
        let state_before = t.state();
        let mut env = env!(self, now);
        let r = f(t, &mut env);
        let goal_removal = t.take_goal_removal();
        if t.state() != state_before {
            // a slot may be free, or wanted
            self.queue.dirty = true;
        }
        let final_move = t.take_final_move();
        // any input may change what its row shows: the row is rebuilt at the next publish
        // (and shared when equal, so an input that changed nothing sends nothing)
        self.publisher.touch(id);
        if self.persist.is_on() && t.persist_dirty() {
            // a state change goes to disk within a second, counters within a minute
            let soon = self.publish_now && !was_publish;
            let at = now
                + if soon {
                    CHECKPOINT_SOON
                } else {
                    CHECKPOINT_INTERVAL
                };
            self.timers.schedule_no_later(TimerKey::Checkpoint, at);
        }
        if let Some(delete_data) = goal_removal {
            // a seeding goal's action: the remove path the user's key takes (it logs)
            self.remove(id, delete_data);
        } else if final_move {
            // complete: from the category's download path to its save path
            self.final_move(id);
        }
        Some(r)
    }

    /// Move a complete torrent's data to its final folder (not generic: [`Session::with`]
    /// calls it).
    fn final_move(&mut self, id: TorrentId) {
        self.with(id, |t, env| t.move_to_final(env));
    }

    fn grant_checks(&mut self) {
        for id in self.checks.grant() {
            if self.with(id, |t, env| t.check_slot(env)).is_none() {
                self.checks.remove(id);
            }
        }
    }

    /// After any input: publish now if a state changed, else make sure a publish is due
    /// while anything shown changes.
    fn after_input(&mut self) {
        self.queue_after_input();
        if self.publish_now {
            self.disk_guard_wanted();
        }
        // the status bar counts blocked attempts
        let blocked = self.ctx.ip_filter.blocked();
        if blocked != self.filter.blocked_shown {
            self.filter.blocked_shown = blocked;
            self.publish_now = true;
        }
        let due = self.publisher.due(Instant::now(), self.publish_now);
        self.publish_now = false;
        match due {
            Due::Now => self.publish(),
            Due::At(at) => self.timers.schedule_no_later(TimerKey::Publish, at),
            Due::Idle => {}
        }
    }

    fn timers_due(&mut self) {
        let now = Instant::now();
        while let Some(key) = self.timers.pop_due(now) {
            match key {
                TimerKey::Publish => self.publish(),
                TimerKey::DiskGuard => self.disk_guard(),
                TimerKey::IpFilter => self.ip_filter_look(),
                TimerKey::Queue => self.queue_timer(),
                TimerKey::Checkpoint => {
                    self.checkpoint();
                }
                TimerKey::AltSpeed => {
                    if self.alt.on_timer() {
                        self.alt_speed_changed("by the schedule");
                    }
                    self.schedule_alt_speed();
                }
                TimerKey::Torrent(id, t) => {
                    self.with(id, |tor, env| tor.on_timer(t, env));
                }
            }
        }
    }

    fn command(&mut self, c: Command) {
        match c {
            Command::Add(req, reply) => {
                if let AddSource::Url(url) = &req.source {
                    // answered when the fetch ends (SessionEvent::Fetched)
                    let url = url.clone();
                    self.fetch(url, req, reply);
                    return;
                }
                if let AddSource::Create(c) = &req.source {
                    // answered when the hashing ends (SessionEvent::Created)
                    let c = c.clone();
                    self.create(c, req, reply);
                    return;
                }
                let r = self.add(req);
                self.add_answered(r, reply);
            }
            Command::Pause(id) => {
                self.with(id, |t, env| t.input(Input::Pause, env));
            }
            Command::Resume(id) => {
                self.with(id, |t, env| t.resume_by_hand(env));
            }
            Command::TogglePause(id) => {
                self.with(id, |t, env| match t.state() {
                    TorrentState::Paused | TorrentState::Error | TorrentState::Completed => {
                        t.resume_by_hand(env);
                    }
                    _ => t.input(Input::Pause, env),
                });
            }
            Command::PauseAll | Command::ResumeAll => {
                let pause = matches!(c, Command::PauseAll);
                let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
                for id in ids {
                    let input = if pause { Input::Pause } else { Input::Resume };
                    self.with(id, |t, env| {
                        // resume-all leaves completed (non-seeding) torrents alone, and those
                        // a seeding goal stopped
                        if !(input == Input::Resume
                            && (t.state() == TorrentState::Completed || t.goal_stopped().is_some()))
                        {
                            t.input(input, env);
                        }
                    });
                }
            }
            Command::Recheck(id) => {
                self.with(id, |t, env| t.input(Input::Recheck, env));
            }
            Command::Reannounce(id) => {
                self.with(id, |t, env| t.reannounce(env));
            }
            Command::AddPeer { id, addr } => {
                self.with(id, |t, env| t.add_peer(addr, env));
            }
            Command::Remove { id, delete_data } => self.remove(id, delete_data),
            Command::Focus(id) => {
                self.publisher.focus(id);
                self.publish_now = true;
            }
            Command::SetLimits { download, upload } => {
                self.alt.set_in_effect((download, upload));
                self.ctx.limits.download.set_rate(download);
                self.ctx.limits.upload.set_rate(upload);
                self.publish_now = true;
                // kept across restarts, like a torrent's own limits
                if self.persist.limits_set() {
                    self.checkpoint_soon();
                }
            }
            Command::ConfigLimits {
                download,
                upload,
                alt_download,
                alt_upload,
            } => {
                self.alt
                    .reconfigure((download, upload), (alt_download, alt_upload));
                self.config_limits_changed();
            }
            Command::SetAltSpeed(on) => {
                if self.alt.set_on(on) {
                    self.alt_speed_changed("by hand");
                }
            }
            Command::ToggleAltSpeed => {
                let on = !self.alt.is_on();
                self.alt.set_on(on);
                self.alt_speed_changed("by hand");
            }
            Command::SetTorrentLimits {
                id,
                download,
                upload,
            } => {
                self.with(id, |t, _| t.set_limits(download, upload));
            }
            Command::SetShareLimits { ids, limits } => {
                for id in ids {
                    self.with(id, |t, env| t.set_share_limits(limits, env));
                }
            }
            Command::SetFilePriority {
                id,
                files,
                priority,
            } => {
                self.with(id, |t, env| t.set_file_priority(&files, priority, env));
            }
            Command::SetSequential { ids, on } => {
                for id in ids {
                    self.with(id, |t, env| t.set_sequential(on, env));
                }
            }
            Command::SetFirstLastPiecePrio { ids, on } => {
                for id in ids {
                    self.with(id, |t, env| t.set_first_last(on, env));
                }
            }
            Command::MoveStorage { id, to, move_data } => {
                let to = library::absolute(to);
                self.with(id, |t, env| t.move_storage(to, move_data, env));
            }
            Command::QueueMove { ids, to } => self.queue_move(&ids, to),
            Command::SetForceStart { ids, forced } => self.set_force_start(&ids, forced),
            Command::AddRefused { source, reason } => {
                let refused = AddError::Invalid(format!("{source}: {reason}"));
                self.add_answered(Err(refused), None);
            }
            Command::RecentEvents(reply) => {
                let _ = reply.send(self.log.recent());
            }
            Command::Rename { id, name } => {
                self.with(id, |t, env| t.rename(name, env));
            }
            Command::Flush(reply) => {
                self.flushes.push(reply);
                self.publish_now = true;
            }
            Command::Detail(id, reply) => {
                let d = self.detail_of(id);
                let _ = reply.send(d.map(Box::new));
            }
            Command::ChangeSettings(change, reply) => {
                let r = self.change_settings(change);
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
            Command::Shutdown(_) => {}
            c @ (Command::SetCategory { .. }
            | Command::CreateCategory(_)
            | Command::EditCategory(_)
            | Command::RemoveCategories(_)
            | Command::AddTags { .. }
            | Command::RemoveTags { .. }
            | Command::CreateTags(_)
            | Command::DeleteTags(_)
            | Command::SetAutoManaged { .. }) => self.category_command(c),
            Command::EditTrackers {
                ids,
                edit,
                dry_run,
                reply,
            } => {
                let r = self.edit_trackers(&ids, &edit, dry_run);
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
        }
    }

    fn event(&mut self, ev: SessionEvent) {
        match ev {
            SessionEvent::Peer {
                torrent,
                key,
                event,
            } => {
                self.with(torrent, |t, env| t.on_peer(key, event, env));
            }
            SessionEvent::Disk {
                torrent,
                disk_key,
                event,
            } => {
                self.with(torrent, |t, env| t.on_disk(disk_key, event, env));
            }
            SessionEvent::Announced {
                torrent,
                job,
                result,
            } => {
                self.with(torrent, |t, env| t.on_announced(job, result, env));
            }
            SessionEvent::Scraped {
                torrent,
                url,
                result,
            } => {
                self.with(torrent, |t, _env| t.on_scraped(&url, &result));
            }
            SessionEvent::Checked {
                torrent,
                check_key,
                result,
            } => {
                self.with(torrent, |t, env| t.on_checked(check_key, result, env));
            }
            SessionEvent::Handshaken {
                info_hash,
                addr,
                outgoing,
                remote,
                stream,
            } => {
                if let Some(id) = self.library.find(&info_hash) {
                    self.with(id, |t, env| t.admit(addr, outgoing, remote, stream, env));
                }
            }
            SessionEvent::DhtPeers { torrent, peers } => {
                self.with(torrent, |t, env| t.on_dht_peers(&peers, env));
            }
            SessionEvent::LsdPeer { info_hash, peer } => {
                if let Some(id) = self.library.find(&info_hash) {
                    self.with(id, |t, env| t.on_lsd_peer(peer, env));
                }
            }
            SessionEvent::DialFailed {
                torrent,
                addr,
                is_self,
                error,
            } => {
                self.with(torrent, |t, env| {
                    t.on_dial_failed(addr, is_self, error, env)
                });
            }
            SessionEvent::Validated {
                torrent,
                trusted,
                why,
                missing,
                ..
            } => self.on_validated(torrent, trusted, &why, missing),
            SessionEvent::Checkpointed {
                result,
                stats,
                ids,
                limits,
            } => self.on_checkpointed(result, stats, ids, limits),
            SessionEvent::Moved { torrent, result } => {
                self.with(torrent, |t, env| t.on_moved(result, env));
            }
            SessionEvent::Fetched {
                request,
                reply,
                result,
            } => {
                let r = self.add_fetched(request, result);
                self.add_answered(r, reply);
            }
            SessionEvent::Created {
                request,
                reply,
                result,
            } => {
                let r = self.add_created(request, result);
                self.add_answered(r, reply);
            }
            SessionEvent::Deleted { name, error } => self.on_deleted(name, error),
            SessionEvent::HookDone {
                torrent,
                level,
                message,
            } => self
                .log
                .push(Some(torrent), level, EventKind::Hook, message),
            SessionEvent::IpFilter(r) => self.on_ip_filter(r),
            SessionEvent::DhtStarted(node) => self.on_dht_started(node),
        }
    }

    /// Stop every torrent; keep handling announce results (so a `stopped` that follows an
    /// announce in flight goes out) until none is pending or the time is up.
    async fn shutdown(&mut self, events: &mut mpsc::UnboundedReceiver<SessionEvent>) {
        let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
        // the final checkpoint: every record, files synced and their times taken, before
        // the torrents let go of their storage
        let final_checkpoint = if self.persist.is_on() {
            while self.persist.busy() {
                match events.recv().await {
                    Some(ev @ SessionEvent::Checkpointed { .. }) => self.event(ev),
                    Some(_) => {}
                    None => break,
                }
            }
            for t in self.torrents.values_mut() {
                t.mark_persist_dirty();
            }
            self.checkpoint()
        } else {
            None
        };
        for id in &ids {
            self.with(*id, |t, env| t.shutdown(env));
        }
        let deadline = tokio::time::Instant::now() + STOP_ANNOUNCE_TIMEOUT;
        while self.torrents.values().any(Torrent::announcing) {
            let ev = tokio::select! {
                ev = events.recv() => ev,
                _ = tokio::time::sleep_until(deadline) => break,
            };
            match ev {
                Some(ev @ SessionEvent::Announced { .. }) => self.event(ev),
                Some(_) => {}
                None => break,
            }
        }
        if let Some(job) = final_checkpoint {
            let _ = job.await;
            while let Ok(ev) = events.try_recv() {
                if let SessionEvent::Checkpointed { result: Err(e), .. } = ev {
                    self.log.push(
                        None,
                        EventLevel::Error,
                        EventKind::DiskError,
                        format!("saving the session state at shutdown failed: {e}"),
                    );
                }
            }
        }
        if let Some(dht) = self.ctx.dht.take()
            && let Err(e) = dht.shutdown().await
        {
            tracing::warn!("{e}");
        }
        if let Some(lsd) = &self.ctx.lsd {
            lsd.shutdown();
        }
        self.publisher.touch_all();
        // the final state, for front ends that look once more after shutdown
        self.publish();
    }

    /// The detail of torrent `id` built once, for [`Command::Detail`] (the metainfo is
    /// loaded for it as for the focused torrent); `None` when there is no such torrent.
    fn detail_of(&mut self, id: TorrentId) -> Option<crate::api::TorrentDetail> {
        let now = Instant::now();
        let t = self.torrents.get_mut(&id)?;
        {
            let env = env!(self, now);
            let _ = t.metainfo(&env);
        }
        let mut d = t.detail(now);
        d.goals = t.goal_view(&self.settings.seeding, now);
        Some(d)
    }

    /// Publish a snapshot if anything shown changed (see [`Publisher::publish`]).
    fn publish(&mut self) {
        self.timers.cancel(TimerKey::Publish);
        let now = Instant::now();
        let mut global =
            publish::session_stats(&self.ctx, self.guard.free_space(), self.alt.is_on());
        global.categories = self.categories.shown.clone();
        global.tags = self.categories.tags_shown.clone();
        global.settings = self.settings_view();
        global.queueing = global.settings.queueing;
        let next = self
            .publisher
            .publish(now, &mut self.torrents, global, |t| {
                // a quiet or paused torrent lets go of its metainfo; the detail view needs
                // it (files, dates, comment): load it again while the torrent is looked at
                {
                    let env = env!(self, now);
                    let _ = t.metainfo(&env);
                }
                let mut d = t.detail(now);
                d.goals = t.goal_view(&self.settings.seeding, now);
                d
            });
        if let Some(at) = next {
            self.timers.schedule_no_later(TimerKey::Publish, at);
        }
        // the snapshot now shows every command handled before these
        for reply in self.flushes.drain(..) {
            let _ = reply.send(());
        }
    }
}

impl Session {
    /// Apply the switch of alternative speeds to the session limiters, log it, publish it
    /// and keep it for the next start.
    pub(super) fn alt_speed_changed(&mut self, why: &str) {
        let (down, up) = self.apply_limits();
        let msg = format!(
            "alternative speed limits {} {why}: down {}, up {}",
            if self.alt.is_on() { "on" } else { "off" },
            shown_limit(down),
            shown_limit(up)
        );
        self.log
            .push(None, EventLevel::Info, EventKind::AltSpeed, msg);
    }

    /// The config file's rate limits were read again ([`Command::ConfigLimits`]): apply
    /// the pair in effect, log both pairs, keep them for the next start.
    fn config_limits_changed(&mut self) {
        let (down, up) = self.apply_limits();
        let msg = format!(
            "rate limits read again from the config file: down {}, up {} now{}",
            shown_limit(down),
            shown_limit(up),
            if self.alt.is_on() {
                " (alternative speed limits on)"
            } else {
                ""
            }
        );
        self.log
            .push(None, EventLevel::Info, EventKind::AltSpeed, msg);
    }

    /// Set the session limiters to the pair in effect, publish it and keep it for the next
    /// start; returns the pair (download, upload, bytes/s).
    fn apply_limits(&mut self) -> (u64, u64) {
        let (down, up) = self.alt.in_effect();
        self.ctx.limits.download.set_rate(down);
        self.ctx.limits.upload.set_rate(up);
        self.publish_now = true;
        if self.persist.limits_set() {
            self.checkpoint_soon();
        }
        (down, up)
    }

    /// Set the schedule's one timer for its next boundary (none without a schedule).
    pub(super) fn schedule_alt_speed(&mut self) {
        match self.alt.next_wake() {
            Some(wait) => self
                .timers
                .schedule(TimerKey::AltSpeed, Instant::now() + wait),
            None => self.timers.cancel(TimerKey::AltSpeed),
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}

/// A session limit for the log: `unlimited` for 0, else a rate (`1.0 MiB/s`).
fn shown_limit(rate: u64) -> String {
    if rate == 0 {
        "unlimited".to_owned()
    } else {
        crate::units::rate(rate)
    }
}
