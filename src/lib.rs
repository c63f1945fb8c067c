//! ratorrent: a BitTorrent client library behind a terminal UI.
//!
//! This page is the architecture map: the layers, what may import what, where each concept
//! lives, the contract between the engine and its front ends, and how a received block and
//! a key press travel. `README.md` ("Layout") lists the rooms in short and points here.
//!
//! # Layers
//!
//! From the top down; a module imports its own layer or the ones below it, never one
//! above, and no two files import each other in a circle.
//!
//! | layer | modules | what it is |
//! |---|---|---|
//! | front ends | `main.rs` (the binary), [`tui`], [`webui`], [`headless`], [`creator`], [`daemon`], [`watch`], [`cli`] | start-up, the terminal UI, the qBittorrent-compatible Web API, `download`/`info`/`check`, `create`, `ratorrent daemon`, the watch folder, the arguments |
//! | the contract | [`api`], [`control`] | plain data both sides share ([`api::Snapshot`], [`api::Command`], [`api::EngineEvent`], typed errors) and [`api::Client`], the one way into a running engine; the same contract over the daemon's Unix socket |
//! | the engine | [`engine`], configured by [`config::engine`] | the session actor that owns every torrent, the torrent state machines, peer connections, the picker, the deadline queue |
//! | services | [`storage`], [`state`], [`tracker`], [`fetch`], [`webseed`], [`peer`], [`dht`], [`lsd`] | payload files and disk threads, the state store, announces and scrapes, a .torrent fetched by URL, web seeds' URLs and checked Range requests, the peer wire protocol, peer sources |
//! | domain | [`metainfo`], [`piece`], [`bencode`], [`units`], [`net`], [`untrusted`], [`lock`], [`atomic_write`] | .torrent files and magnet links, piece geometry and file layout, sizes and rates, address scope, text fit for a terminal |
//!
//! What may import what, besides "downwards only":
//! - A front end reaches a running engine only through [`api::Client`] (commands, replies,
//!   snapshots, events). `main.rs`, [`headless`] and [`daemon`] start it with
//!   [`engine::session::start`], which hands back the client; an attached TUI gets its
//!   client from [`control::remote::connect`] instead, and cannot tell the difference.
//! - [`control`] imports [`api`] and the domain, never [`engine`]: the daemon's side serves an
//!   [`api::Client`] it is given.
//! - [`tui`] imports [`api`] and the domain, never [`engine`], [`storage`] or a service: it
//!   draws snapshots and sends commands. [`webui`] likewise: it answers HTTP requests from
//!   snapshots ([`api::Client::detail`] for one torrent's detail, the focus untouched) and
//!   sends commands ([`api::Client::flush`] answers once their effect shows); it reads
//!   `[webui]` ([`config::webui`]) and is started by [`webui::serve`], the one entry point
//!   the TUI process and a daemon call.
//! - [`api`] is pure data: it imports nothing above the domain ([`net`] for masking a
//!   tracker's passkey when an error names its URL).
//! - [`config`] sits below the front ends and the engine and imports neither: it reads the
//!   one TOML file into a part per reader. The engine receives only its part,
//!   [`config::engine::EngineConfig`] (ports, paths, limits, storage, DHT, LSD), never the
//!   whole [`config::Config`]; the front ends read the file and hand it over. `[keys]` and
//!   `[colors]` stay plain text with their lines ([`config::ui::UiConfig`]); the TUI gives
//!   them meaning (`tui/keymap.rs`, `tui/theme.rs`) and checks them when it starts.
//!
//! # Where each concept lives
//!
//! | concept | room |
//! |---|---|
//! | the session actor: loop and dispatch | `engine/session/mod.rs` |
//! | start-up, the handle | `engine/session/start.rs` ([`engine::session::SessionHandle`]) |
//! | torrents by id and info hash, add and remove | `engine/session/library.rs` |
//! | the listen port: TCP and uTP bound on one number | `engine/session/bind.rs` |
//! | incoming connections (TCP and uTP) routed by info hash (BEP 3), plaintext or MSE/PE by their first bytes | `engine/session/listener.rs` (the torrent of an MSE handshake: `HASH('req2', info hash)` in `engine/session/library.rs`'s registry) |
//! | snapshots: rows, the focused torrent's detail, pacing | `engine/session/publish.rs` |
//! | the state store's side: restore, checkpoints | `engine/session/persist.rs` over [`state`] |
//! | one engine per state folder: who runs it (pid, daemon or TUI, socket) | `state/owner.rs` ([`state::Owner`]) |
//! | the daemon: start-up, signals, SIGHUP reload | [`daemon`] over `config/reload.rs` (what a reload changes) |
//! | the control socket: hello and frames, snapshots as differences, the daemon's side, the TUI's side (an [`api::Client`] bridged to the socket) | [`control`] (`wire.rs`, `delta.rs`, `server.rs`, `remote.rs`) |
//! | pausing downloads on a full volume | `engine/session/disk_guard.rs` |
//! | one torrent: life cycle, inputs, timers | `engine/torrent/` (`state.rs` the pure machine whose `Checking` and `Moving` states own their `jobs`, `mod.rs` the `Torrent`, one file per kind of input: `swarm`, `trackers`, `disk`, `magnet`, `relocate`, `dht`, `lsd`; `wanted`, `summary`, `view`, `persist`, `goals` the seeding goals (share limits), `piece_order` sequential download and first/last pieces first, `unchecked` pieces added without a hash check (skip hash check)) |
//! | what a torrent and its connections share | `engine/link/` |
//! | one peer connection: handshake, protocol, uploads, metadata | `engine/peer_conn/` |
//! | MSE/PE encryption: the handshake as a state machine fed bytes (DH, keys, RC4, pads, sync windows); on a live stream; the RC4 stream after it | `peer/mse.rs`; `engine/peer_conn/mse.rs`; `engine/link/encrypted.rs` |
//! | which block to request next (rarest first, or in index order; priority levels from file priorities and first/last pieces) | `engine/picker/` |
//! | choking, announce schedule, peer book | `engine/torrent/{choke,announce,peer_book}.rs` |
//! | the one deadline queue, rate limits, the event log | `engine/{timer,rate,event_log}.rs` |
//! | alternative ("turtle") speed limits: the switch, both pairs, the schedule's timer and clock | `engine/alt_speed.rs` over `config/schedule.rs` (the schedule and its pure time arithmetic) |
//! | `on_added` / `on_complete` programs: placeholders, running them without a shell | `engine/hooks.rs` (a torrent's values: `engine/torrent/hook.rs`) |
//! | payload files: a façade over layout, open, skip, files, delete, handles, backends | [`storage`] |
//! | disk and hash threads (a piece added without a check hashed before its first upload), recheck, moving data | `storage/{disk,check,mover}.rs` |
//! | piece geometry, blocks, bitfields, the file layout | [`piece`] |
//! | .torrent reading and writing, magnet links (BEP 9), paths | [`metainfo`] |
//! | wire codec, extensions (BEP 10), PEX (BEP 11), metadata (BEP 9), the MSE/PE handshake | [`peer`] |
//! | uTP (BEP 29): packets, LEDBAT, one connection's state machine, the UDP socket and its task, the stream | [`peer::utp`] (`packet`, `ledbat`, `conn`, `socket`, `stream`) |
//! | dialling over the configured transports in order, with a fallback, each plain or MSE/PE | `engine/peer_conn/mod.rs` (`dial`) |
//! | HTTP and UDP trackers (BEP 3/15/23/48) | [`tracker`] |
//! | a .torrent file fetched by http(s) URL (add from URL) | [`fetch`] |
//! | web seeds (BEP 19): file URLs, one checked Range GET, back-off | [`webseed`] (the service), `engine/webseed/` (a server's task: runs of blocks from the picker, blocks to the disk threads), `engine/picker/web.rs` (what a web seed gets), `engine/torrent/webseeds.rs` (the torrent's servers, their hash failures and rows) |
//! | the DHT node (BEP 5/32), Local Service Discovery (BEP 14) | [`dht`], [`lsd`] |
//! | sizes, rates, durations: format and parse | [`units`] |
//! | address scope, tracker URLs fit to show, IP filter lists (parse, look up) | [`net`] |
//! | categories and tags: their paths (subcategories), goals and file; the commands; a torrent's category, tags, automatic management and final move | `engine/categories.rs` (the rules), `engine/session/categories.rs`, `engine/torrent/category.rs`; the names' rules in `api/categories.rs` |
//! | settings changed while the session runs (default folder, `[seeding]` goals, queue, DHT on/off: qBittorrent's preferences) | `engine/session/settings.rs` (the DHT node's slot: [`dht::DhtSlot`]); what a front end reads: [`api::SessionSettings`] |
//! | the qBittorrent Web API v2: connections and limits, logins and bans, endpoints, parameters, the torrent list and its state strings, adds, actions, categories and tags | [`webui`] (`server`, `auth` + `password`, `dispatch`, `params`, `app`, `info`, `details`, `add`, `actions`, `labels`) |
//! | the IP filter in force, its file read and re-read, the blocked count | `engine/ip_filter.rs`, `engine/session/ip_filter.rs`; held back in `engine/torrent/peer_book.rs` |
//! | untrusted text on a terminal | [`untrusted`] |
//! | the TUI: model, event loop, dialogs, widgets, keys, theme | [`tui`] (`app.rs` the model, `event_loop.rs`, `popups/`, `widgets/`, `action`/`keymap`/`key`, `theme`) |
//! | settings file: one flat TOML file, read into a part per reader (engine, TUI, watch folder, Web API) | [`config`] (`config.rs` the file, `config/engine.rs`, `config/ui.rs`, `config/webui.rs`; `config/default.toml` lists every key) |
//!
//! # The engine-UI contract
//!
//! The session task owns every torrent as plain data. It sleeps until a command, an event
//! (a peer connection, a disk thread, a tracker answer), an incoming connection or the
//! earliest deadline. Front ends hold an [`api::Client`]:
//! - commands go over a bounded channel ([`api::Command`]); those that answer (add, recent
//!   events, shutdown) carry a one-shot reply, and the client's methods wait for it and
//!   return a typed [`api::ClientError`] (the engine is gone, the add was refused with its
//!   [`api::AddError`]);
//! - state comes back as `Arc<Snapshot>` over a `tokio::sync::watch` channel (latest value
//!   only: a slow terminal never queues stale frames), published at most twice a second
//!   while something changes, at once when a state changes, not at all when nothing does;
//!   rows that did not change are shared, not rebuilt; only the focused torrent
//!   ([`api::Command::Focus`]) gets a detail (peers, files, trackers, pieces);
//! - log lines come as [`api::EngineEvent`]s on a broadcast channel;
//! - over the daemon's control socket ([`control`]) the same three travel as postcard frames:
//!   commands with a request id standing in for a reply sender, snapshots as differences from
//!   the last one sent on that connection (rebuilt whole on the TUI's side, unchanged rows
//!   shared), events as they come.
//!
//! # How a block travels
//!
//! 1. A peer connection task (`engine/peer_conn/protocol.rs`) decodes a `piece` message
//!    ([`peer::wire`]); the block's bytes stay in the read buffer, split off as `Bytes`.
//! 2. It marks the block received in the torrent's picker (`engine/picker/`, shared with
//!    the other connections through `engine/link/`) and queues the bytes for the disk
//!    ([`storage::disk`]), waiting while the disk queue is full.
//! 3. A disk thread writes the block where the file layout puts it and hashes the piece as
//!    its blocks arrive; a complete piece is reported as a `DiskEvent` (verified, failed or
//!    an error) to the session, which hands it to the torrent (`engine/torrent/disk.rs`):
//!    the piece is marked had, peers hear `have`, and a finished torrent completes.
//!
//! No copy of the block is made on the way and no lock is held across an await.
//!
//! # How a key press travels
//!
//! 1. The TUI's event loop (`tui/event_loop.rs`) reads a key from the terminal.
//! 2. The model (`tui/app.rs`) looks it up in the keymap (`tui/keymap.rs`) for the current
//!    context and applies the [`tui::action`]: it changes the model and returns the
//!    [`api::Command`]s to send, if any.
//! 3. The event loop sends them through its [`api::Client`]; the session applies them and
//!    the next snapshot shows the result; the loop redraws only when something changed.

#![warn(missing_docs)]

pub mod api;
pub mod atomic_write;
pub mod bencode;
pub mod cli;
pub mod config;
pub mod control;
pub mod creator;
pub mod daemon;
pub mod dht;
pub mod engine;
pub mod fetch;
pub mod headless;
pub mod lock;
pub mod lsd;
pub mod metainfo;
pub mod net;
pub mod peer;
pub mod piece;
pub mod state;
pub mod storage;
pub mod tracker;
pub mod tui;
pub mod units;
pub mod untrusted;
pub mod watch;
pub mod webseed;
pub mod webui;
