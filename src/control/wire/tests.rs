use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sha2::Digest;

use super::*;
use crate::api::{
    AddRequest, AddSource, Category, CategoryInfo, EventKind, EventLevel, FilePriority, FileRow,
    GlobalStats, GoalView, PauseCause, PeerFlags, PeerRow, PeerSource, PieceState, QueueMove,
    ShareLimits, Snapshot, SourceCount, TorrentDetail, TorrentError, TorrentErrorKind, TorrentRow,
    TorrentState, TrackerEdit, TrackerRow, TrackerStatus, WebSeedRow, WebSeedState,
};
use crate::control::DaemonInfo;
use crate::control::delta::Encoder;

#[test]
fn hello_lines_round_trip_and_name_the_versions() {
    assert_eq!(
        parse_client_hello(client_hello().trim_end()),
        Ok(PROTOCOL_VERSION)
    );
    assert_eq!(
        parse_client_hello("ratorrent-control 7 ratorrent/9.0"),
        Ok(7)
    );
    assert!(
        parse_client_hello("GET / HTTP/1.1")
            .unwrap_err()
            .contains("not a ratorrent control client")
    );
    assert!(
        parse_client_hello("ratorrent-control x")
            .unwrap_err()
            .contains("no protocol version")
    );
    let ok = ServerHello::Accepted {
        version: 1,
        daemon: DaemonInfo {
            pid: 4321,
            state_dir: PathBuf::from("/home/u/.local/share/rat orrent"),
        },
    };
    assert_eq!(
        ok.line(),
        "ratorrent-control 1 ok pid=4321 state=/home/u/.local/share/rat orrent\n"
    );
    assert_eq!(ServerHello::parse(&ok.line()), Ok(ok));
    let no = ServerHello::Refused {
        version: 3,
        reason: "uid 65534 may not\nuse it".into(),
    };
    assert_eq!(
        no.line(),
        "ratorrent-control 3 refused uid 65534 may not use it\n"
    );
    assert_eq!(
        ServerHello::parse(&no.line()),
        Ok(ServerHello::Refused {
            version: 3,
            reason: "uid 65534 may not use it".into()
        })
    );
    for garbage in [
        "",
        "SSH-2.0-OpenSSH",
        "ratorrent-control",
        "ratorrent-control 1 ok pid=x state=/",
    ] {
        let e = ServerHello::parse(garbage).unwrap_err();
        assert!(e.contains("did not answer as a ratorrent daemon"), "{e}");
    }
    // what another program said is shown safe for a terminal
    let e = ServerHello::parse("\u{1b}]0;owned\u{7}").unwrap_err();
    assert!(!e.contains('\u{1b}'), "{e}");
}

#[tokio::test]
async fn a_hello_line_is_bounded() {
    let mut long = vec![b'a'; MAX_HELLO_LINE + 10];
    long.push(b'\n');
    let mut r = tokio::io::BufReader::new(&long[..]);
    assert!(read_hello_line(&mut r).await.is_err());
    let mut r = tokio::io::BufReader::new(&b"ratorrent-control 1\nrest"[..]);
    assert_eq!(
        read_hello_line(&mut r).await.unwrap(),
        "ratorrent-control 1"
    );
    let mut r = tokio::io::BufReader::new(&b""[..]);
    assert!(read_hello_line(&mut r).await.is_err());
}

#[tokio::test]
async fn frames_round_trip_and_refuse_what_is_over_the_limit_or_garbage() {
    let msg = ClientMsg::Command {
        id: 3,
        command: Command::Pause(TorrentId(9)),
    };
    let mut buf = Vec::new();
    let mut wire = Vec::new();
    let n = write_frame(&mut wire, &msg, &mut buf, MAX_CLIENT_FRAME)
        .await
        .unwrap();
    assert_eq!(n, wire.len());
    assert_eq!(
        u32::from_be_bytes(wire[..4].try_into().unwrap()) as usize,
        n - 4
    );
    let back: ClientMsg = read_frame(&mut &wire[..], &mut buf, MAX_CLIENT_FRAME)
        .await
        .unwrap();
    assert!(matches!(
        back,
        ClientMsg::Command {
            id: 3,
            command: Command::Pause(TorrentId(9))
        }
    ));
    // the end of the stream at a boundary, and inside a frame
    assert!(matches!(
        read_frame::<_, ClientMsg>(&mut &[][..], &mut buf, 10).await,
        Err(FrameError::Closed)
    ));
    assert!(matches!(
        read_frame::<_, ClientMsg>(&mut &wire[..n - 1], &mut buf, MAX_CLIENT_FRAME).await,
        Err(FrameError::Io(_))
    ));
    // a length over the limit is refused before anything is read or allocated
    let huge = u32::MAX.to_be_bytes();
    match read_frame::<_, ClientMsg>(&mut &huge[..], &mut buf, MAX_CLIENT_FRAME).await {
        Err(FrameError::TooLarge { len, max }) => {
            assert_eq!((len, max), (u32::MAX, MAX_CLIENT_FRAME))
        }
        other => panic!("{other:?}"),
    }
    // bodies that do not decode
    for body in [&[0xff, 0xff, 0xff][..], &[0, 200], &[9], &[]] {
        let mut f = (body.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        let r = read_frame::<_, ClientMsg>(&mut &f[..], &mut buf, MAX_CLIENT_FRAME).await;
        assert!(matches!(r, Err(FrameError::Decode(_))), "{body:?}: {r:?}");
    }
    // a message over the sender's limit is not sent
    let big = ClientMsg::Command {
        id: 0,
        command: Command::CreateTags(vec!["x".repeat(1000); 2000]),
    };
    assert!(matches!(
        encode_frame(&big, &mut buf, MAX_CLIENT_FRAME),
        Err(FrameError::Encode(_))
    ));
}

#[test]
fn reply_senders_stay_home_and_answers_find_them() {
    let (tx, mut rx) = oneshot::channel();
    let mut add = Command::Add(AddRequest::new(PathBuf::from("/a.torrent")), Some(tx));
    let waiter = take_reply(&mut add).expect("an add answers");
    assert!(matches!(add, Command::Add(_, None)));
    // on the daemon's side: a sender of its own
    let mut read_back: Command = postcard::from_bytes(&postcard::to_stdvec(&add).unwrap()).unwrap();
    let awaited = install_reply(&mut read_back).unwrap();
    let Command::Add(_, Some(engine_tx)) = read_back else {
        panic!()
    };
    engine_tx.send(Ok(TorrentId(5))).unwrap();
    let answer = futures::executor::block_on(awaited.wait()).unwrap();
    assert!(waiter.answer(answer));
    assert_eq!(rx.try_recv().unwrap(), Ok(TorrentId(5)));
    // a shutdown's sender is swapped for one nobody hears
    let (tx, _rx) = oneshot::channel();
    let mut shutdown = Command::Shutdown(tx);
    assert!(matches!(
        take_reply(&mut shutdown),
        Some(PendingReply::Shutdown(_))
    ));
    let Command::Shutdown(left) = shutdown else {
        panic!()
    };
    assert!(left.is_closed());
    // an answer of the wrong kind is not delivered
    let (tx, _rx) = oneshot::channel();
    assert!(!PendingReply::Events(tx).answer(WireReply::Shutdown));
    // commands that do not answer
    assert!(take_reply(&mut Command::PauseAll).is_none());
    assert!(install_reply(&mut Command::PauseAll).is_none());
    let (tx, _rx) = oneshot::channel::<Vec<EngineEvent>>();
    drop(tx);
    let (tx, rx) = oneshot::channel::<()>();
    drop(tx);
    assert_eq!(
        futures::executor::block_on(AwaitedReply::Shutdown(rx).wait()),
        None
    );
}

/// One of every command, every field set.
fn every_command() -> Vec<Command> {
    let id = TorrentId(7);
    let ids = vec![TorrentId(1), TorrentId(2)];
    let cat = Category {
        name: "tv/hd".into(),
        save_path: "/srv/tv".into(),
        download_path: Some("/srv/incomplete".into()),
        limits: ShareLimits {
            ratio: 2.0,
            seeding_minutes: 60,
            inactive_minutes: -1,
        },
    };
    let mut add = AddRequest::new(AddSource::Magnet("magnet:?xt=urn:btih:00".into()))
        .download_dir(Some("/d".into()))
        .paused(true)
        .seed(false)
        .category("tv")
        .tags(vec!["a".into()])
        .auto_managed(Some(false));
    add.source = AddSource::Url("https://t.example/1.torrent".into());
    add.sequential = true;
    add.first_last = true;
    add.skip_check = true;
    vec![
        Command::Add(add, None),
        Command::Add(AddRequest::new(PathBuf::from("/x.torrent")), None),
        Command::Add(
            AddRequest::new(AddSource::Create(crate::api::CreateSource {
                path: "/data/album".into(),
                output: Some("/t/album.torrent".into()),
                version: crate::metainfo::MetaVersion::Hybrid,
                trackers: vec![vec!["http://t/a".into(), "udp://u:1".into()], vec![]],
                private: true,
            }))
            .seed(true),
            None,
        ),
        Command::Pause(id),
        Command::Resume(id),
        Command::TogglePause(id),
        Command::PauseAll,
        Command::ResumeAll,
        Command::Remove {
            id,
            delete_data: true,
        },
        Command::Recheck(id),
        Command::Reannounce(id),
        Command::AddPeer {
            id,
            addr: "[::1]:6881".parse().unwrap(),
        },
        Command::Focus(Some(id)),
        Command::SetLimits {
            download: 1,
            upload: 2,
        },
        Command::SetAltSpeed(true),
        Command::ToggleAltSpeed,
        Command::SetTorrentLimits {
            id,
            download: 3,
            upload: 4,
        },
        Command::SetShareLimits {
            ids: ids.clone(),
            limits: ShareLimits::default(),
        },
        Command::SetFilePriority {
            id,
            files: vec![0, 3],
            priority: FilePriority::High,
        },
        Command::MoveStorage {
            id,
            to: "/new".into(),
            move_data: true,
        },
        Command::AddRefused {
            source: AddSource::File("/w/x.magnet".into()),
            reason: "no xt".into(),
        },
        Command::QueueMove {
            ids: ids.clone(),
            to: QueueMove::Bottom,
        },
        Command::SetForceStart {
            ids: ids.clone(),
            forced: true,
        },
        Command::RecentEvents(oneshot::channel().0),
        Command::Shutdown(oneshot::channel().0),
        Command::SetCategory {
            ids: ids.clone(),
            category: "tv".into(),
        },
        Command::CreateCategory(cat.clone()),
        Command::EditCategory(cat),
        Command::RemoveCategories(vec!["tv".into()]),
        Command::AddTags {
            ids: ids.clone(),
            tags: vec!["x".into()],
        },
        Command::RemoveTags {
            ids: ids.clone(),
            tags: vec![],
        },
        Command::CreateTags(vec!["y".into()]),
        Command::DeleteTags(vec!["z".into()]),
        Command::SetAutoManaged {
            ids: ids.clone(),
            on: true,
        },
        Command::SetSequential {
            ids: ids.clone(),
            on: true,
        },
        Command::SetFirstLastPiecePrio {
            ids: ids.clone(),
            on: false,
        },
        Command::ConfigLimits {
            download: 5,
            upload: 6,
            alt_download: 7,
            alt_upload: 8,
        },
        Command::EditTrackers {
            ids,
            edit: TrackerEdit::Replace {
                find: "a".into(),
                replace: "b".into(),
            },
            dry_run: true,
            reply: None,
        },
    ]
}

/// A snapshot with every field set, and the daemon's other messages.
fn every_server_msg() -> Vec<ServerMsg> {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000);
    let row = TorrentRow {
        id: TorrentId(3),
        rev: 9,
        name: "n".into(),
        info_hash: "ab".repeat(20),
        size: 10,
        done: 5,
        pieces_have: 1,
        pieces_total: 2,
        state: TorrentState::QueuedSeed,
        error: Some(TorrentError {
            kind: TorrentErrorKind::FilesMissing,
            message: "gone".into(),
        }),
        down_rate: 1,
        up_rate: 2,
        eta_secs: Some(3),
        seeds: 4,
        peers: 5,
        web_seeds: 1,
        swarm_seeds: Some(6),
        swarm_leechers: Some(7),
        downloaded: 8,
        uploaded: 9,
        added_at: 10,
        down_limit: 11,
        up_limit: 12,
        message: Some("m".into()),
        has_trackers: true,
        paused_by: Some(PauseCause::Goal("ratio 2.00 reached".into())),
        save_path: "/s".into(),
        queue_pos: 2,
        forced: true,
        category: "tv".into(),
        tags: vec!["hd".into()],
        auto_managed: true,
        share_limits: ShareLimits {
            ratio: 1.5,
            seeding_minutes: 2,
            inactive_minutes: 3,
        },
        sequential: true,
        first_last: true,
        unchecked: 13,
        unchecked_failed: 14,
        total_size: 15,
        content_path: Some("/s/n".into()),
        info_hash_v2: Some("cd".repeat(32)),
        private: true,
        tracker: "udp://t:1/announce".into(),
        completed_at: Some(16),
        last_activity: 17,
        seeded_secs: 18,
        seeding_since: Some(19),
    };
    let detail = TorrentDetail {
        id: TorrentId(3),
        info_hash: "ab".repeat(20),
        save_path: "/s".into(),
        name_changed: Some("x".into()),
        comment: Some("c".into()),
        created_by: Some("lt".into()),
        creation_date: Some(-1),
        private: true,
        multi_file: true,
        piece_length: 16384,
        wasted: 1,
        peers: vec![PeerRow {
            addr: "127.0.0.2:1".parse().unwrap(),
            client: "lt".into(),
            flags: PeerFlags {
                am_choking: true,
                utp: true,
                ..PeerFlags::default()
            },
            progress: 0.25,
            down_rate: 1,
            up_rate: 2,
            downloaded: 3,
            uploaded: 4,
            source: PeerSource::Pex,
        }],
        files: vec![FileRow {
            path: "a/b".into(),
            changed: Some("'..' dropped".into()),
            size: 1,
            done: 1,
            priority: FilePriority::Skip,
            piece_range: (0, 1),
        }],
        trackers: vec![TrackerRow {
            url: "udp://t:1".into(),
            tier: 1,
            status: TrackerStatus::Error,
            message: Some("refused".into()),
            last_announce: Some(at),
            next_announce: Some(at),
            seeds: Some(1),
            leechers: Some(2),
            downloaded: Some(3),
            peers: 4,
            announce_url: "udp://t:1/announce".into(),
        }],
        pieces: vec![
            PieceState::Have,
            PieceState::Downloading,
            PieceState::Missing,
        ]
        .into(),
        peer_sources: vec![SourceCount {
            source: PeerSource::Dht,
            known: 3,
            connected: 1,
        }],
        given_peers: vec![("[::1]:2".parse().unwrap(), PeerSource::Manual)],
        web_seeds: vec![WebSeedRow {
            url: "http://w/p/".into(),
            state: WebSeedState::BackedOff,
            down_rate: 1,
            downloaded: 2,
            requests: 3,
            failures: 4,
            hash_fails: 5,
            max_hash_fails: 6,
            bad_bytes: 7,
            missing_files: 8,
            message: Some("HTTP 503".into()),
            retry_at: Some(at),
        }],
        goals: GoalView {
            ratio: Some(1.5),
            seeding_minutes: Some(2),
            inactive_minutes: None,
            seeding_secs: 4,
            ..GoalView::default()
        },
    };
    let snapshot = Snapshot {
        seq: 12,
        global: GlobalStats {
            down_rate: 1,
            up_rate: 2,
            down_limit: 3,
            up_limit: 4,
            downloaded: 5,
            uploaded: 6,
            peers: 7,
            listen_port: 8,
            free_space: Some(9),
            dht_nodes: Some(10),
            lsd: true,
            ip_filter_ranges: Some(11),
            blocked: 12,
            alt_speed: true,
            queueing: true,
            categories: vec![CategoryInfo {
                category: Category::default(),
                save_path: "/c".into(),
                download_path: None,
            }]
            .into(),
            tags: vec!["t".into()].into(),
            settings: ratorrent_settings(),
        },
        rows: vec![Arc::new(row)].into(),
        detail: Some(Arc::new(detail)),
    };
    let event = EngineEvent {
        seq: 1,
        at,
        torrent: Some(TorrentId(3)),
        level: EventLevel::Warn,
        kind: EventKind::TrackersEdited,
        message: "m".into(),
    };
    vec![
        ServerMsg::Snapshot(Box::new(Encoder::new().frame(&Arc::new(snapshot)))),
        ServerMsg::Event(event.clone()),
        ServerMsg::Reply {
            id: 1,
            reply: WireReply::Add(Err(AddError::AlreadyAdded {
                id: TorrentId(1),
                name: "n".into(),
                info_hash: "h".into(),
                merged: Some("m".into()),
            })),
        },
        ServerMsg::Reply {
            id: 2,
            reply: WireReply::Events(vec![event]),
        },
        ServerMsg::Reply {
            id: 3,
            reply: WireReply::Shutdown,
        },
        ServerMsg::Reply {
            id: 4,
            reply: WireReply::Trackers(Ok(TrackerEditOutcome {
                urls: 1,
                torrents: 2,
            })),
        },
        ServerMsg::Reply {
            id: 5,
            reply: WireReply::Trackers(Err(TrackerEditError::NotFound("u".into()))),
        },
        ServerMsg::NoReply { id: 6 },
        ServerMsg::Closing("bye".into()),
    ]
}

/// The encoding of [`every_command`] and [`every_server_msg`], pinned: postcard is not
/// self-describing, so a change to a type of [`crate::api`] changes what the other side
/// reads. When this test fails, the wire form changed: raise [`PROTOCOL_VERSION`] (an
/// older TUI is then told, not fed garbage) and put the new digest here.
#[test]
fn the_wire_form_is_pinned_to_the_protocol_version() {
    let mut all = Vec::new();
    for (i, command) in every_command().into_iter().enumerate() {
        let msg = ClientMsg::Command {
            id: i as u64,
            command,
        };
        let bytes = postcard::to_stdvec(&msg).unwrap();
        let back: ClientMsg = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{back:?}"), format!("{msg:?}"), "round trip");
        all.extend(bytes);
    }
    all.extend(postcard::to_stdvec(&ClientMsg::Resync).unwrap());
    for msg in every_server_msg() {
        let bytes = postcard::to_stdvec(&msg).unwrap();
        let back: ServerMsg = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{back:?}"), format!("{msg:?}"), "round trip");
        all.extend(bytes);
    }
    let digest: String = sha2::Sha256::digest(&all)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        (PROTOCOL_VERSION, digest.as_str()),
        (2, PINNED_DIGEST),
        "the control protocol's wire form changed: raise PROTOCOL_VERSION and pin the new digest"
    );
}

const PINNED_DIGEST: &str = "ffdd52cf168a09d4";

/// Session settings with every field set.
fn ratorrent_settings() -> crate::api::SessionSettings {
    crate::api::SessionSettings {
        download_dir: "/d".into(),
        ratio_limit: 2.0,
        seeding_time_limit: 3,
        inactive_seeding_time_limit: 4,
        queueing: true,
        ..Default::default()
    }
}
