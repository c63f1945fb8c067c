//! The General tab's facts about one torrent: for a torrent in error what happened and
//! what to do first, then its name, state, info hash, folder, size, progress, transfer,
//! rates and limits, peers and their sources, dates, creator, comment and privacy. Untrusted
//! text (names, messages, comments) is cleaned for the terminal. The General tab widget
//! styles and draws them; the model scrolls through as many.

use crate::api::{FilePriority, TorrentDetail, TorrentRow, TorrentState};

use super::action::Action;
use super::format;
use super::keymap::Keymap;
use super::theme::Symbols;
use crate::units;

/// How a fact's value reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Plain text.
    Plain,
    /// The torrent's error and what to do about it.
    Error,
    /// A tracker's message.
    Warning,
    /// The torrent's name.
    Title,
    /// The state, coloured like the list's State column.
    State,
    /// A hint ("waiting for …").
    Dim,
}

/// One line of the tab: a label and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// `"Name"`, `"Size"`, ... (empty for a hint).
    pub label: &'static str,
    /// The value, cleaned for the terminal.
    pub value: String,
    /// How the value reads.
    pub tone: Tone,
}

fn fact(label: &'static str, value: impl Into<String>, tone: Tone) -> Fact {
    Fact {
        label,
        value: value.into(),
        tone,
    }
}

/// `Progress  42.0% (294 MiB of 700 MiB), 1176/2800 pieces`.
fn progress(row: &TorrentRow) -> Fact {
    fact(
        "Progress",
        format!(
            "{} ({} of {}), {}/{} pieces",
            format::percent(row.done, row.size),
            units::size(row.done),
            units::size(row.size),
            row.pieces_have,
            row.pieces_total
        ),
        Tone::Plain,
    )
}

/// The facts about `row`, with those only the engine's `detail` knows when it is there;
/// `keymap` names the resume key, `sym` gives the arrows and the ASCII choice.
pub fn facts(
    row: &TorrentRow,
    detail: Option<&TorrentDetail>,
    keymap: &Keymap,
    sym: &Symbols,
) -> Vec<Fact> {
    use Tone::Plain;
    let clean = |s: &str| format::clean(s, sym.ascii);
    let mut out = Vec::new();
    if let Some(err) = &row.error {
        let key = keymap.hint(Action::TogglePause);
        out.push(fact("Error", clean(&err.message), Tone::Error));
        out.push(fact(
            "What to do",
            format!("{} ({key} resumes)", err.kind.hint()),
            Tone::Error,
        ));
    }
    if let Some(m) = &row.message {
        // say what the line is: the disk guard's or the metadata fetch's status, a
        // tracker's word, or a note about where peers come from
        let label = if m.ends_with(crate::api::GOAL_ALT_RATE) {
            "Goal"
        } else if row.paused_by.is_some() || row.state == TorrentState::FetchingMetadata {
            "Status"
        } else if row.has_trackers {
            "Tracker"
        } else {
            "Note"
        };
        out.push(fact(label, clean(m), Tone::Warning));
    }
    out.push(fact("Name", clean(&row.name), Tone::Title));
    // the name shown is the one used on disk: say when it is not the torrent's own
    if let Some(why) = detail.and_then(|d| d.name_changed.as_deref()) {
        out.push(fact(
            "Renamed",
            clean(&format!("changed from the torrent's name: {why}")),
            Tone::Warning,
        ));
    }
    let state = match row.state {
        // say who is asked: a magnet link with no peer waits for one
        TorrentState::FetchingMetadata => match row.peers {
            0 => "Fetching metadata: no peer to ask yet".to_owned(),
            1 => "Fetching metadata from 1 peer".to_owned(),
            n => format!("Fetching metadata from {n} peers"),
        },
        TorrentState::Paused => match &row.paused_by {
            Some(crate::api::PauseCause::DiskGuard(_)) => "Paused (disk full)".to_owned(),
            Some(crate::api::PauseCause::Goal(why)) => format!("Done ({})", clean(why)),
            None => row.state.label().to_owned(),
        },
        state => state.label().to_owned(),
    };
    out.push(fact("State", state, Tone::State));
    if row.state == TorrentState::FetchingMetadata
        && row.peers == 0
        && !row.has_trackers
        && detail.is_some_and(|d| !d.peer_sources.iter().any(|c| asks_for_peers(c.source)))
    {
        // nothing will ever answer: say how to give it a source
        let key = keymap.hint(Action::AddPeer);
        out.push(fact(
            "What to do",
            format!(
                "no source of peers: add a tracker, add a peer ({key} in the Peers tab), \
                 or enable the DHT (dht = true)"
            ),
            Tone::Warning,
        ));
    }
    out.push(fact("Info hash", row.info_hash.clone(), Plain));
    if let Some(d) = detail {
        out.push(fact(
            "Save path",
            clean(&d.save_path.display().to_string()),
            Plain,
        ));
    }
    if !row.category.is_empty() || row.auto_managed {
        let category = if row.category.is_empty() {
            "none"
        } else {
            &row.category
        };
        let auto = if row.auto_managed {
            " (automatic management: the data follows it)"
        } else {
            ""
        };
        out.push(fact("Category", clean(&format!("{category}{auto}")), Plain));
    }
    if !row.tags.is_empty() {
        out.push(fact("Tags", clean(&row.tags.join(", ")), Plain));
    }
    let piece_len = detail.map_or(String::new(), |d| {
        format!(" of {}", units::size(u64::from(d.piece_length)))
    });
    if !row.size_known() {
        // a magnet link before its metadata: nothing is known of the payload yet
        let unknown = sym.unknown;
        out.push(fact(
            "Size",
            format!("{unknown} (known once the metadata arrives)"),
            Plain,
        ));
        out.push(fact("Progress", unknown, Plain));
    } else {
        // with files skipped, what will be downloaded, then the whole payload (the row's
        // size is what is wanted)
        let wanted = detail
            .filter(|d| d.files.iter().any(|f| f.priority == FilePriority::Skip))
            .map(|d| {
                let total: u64 = d.files.iter().map(|f| f.size).sum();
                format!(
                    "{} wanted of {}",
                    units::size(row.size.min(total)),
                    units::size(total)
                )
            })
            .unwrap_or_else(|| units::size(row.size));
        out.push(fact(
            "Size",
            format!("{wanted} ({} pieces{piece_len})", row.pieces_total),
            Plain,
        ));
        out.push(progress(row));
        unchecked(row, keymap, &mut out);
    }
    let wasted = detail.map_or(String::new(), |d| {
        format!(", wasted {}", units::size(d.wasted))
    });
    out.push(fact(
        "Transferred",
        format!(
            "{} {}  {} {}  ratio {}{wasted}",
            sym.down,
            units::size(row.downloaded),
            sym.up,
            units::size(row.uploaded),
            format::ratio(row.ratio())
        ),
        Plain,
    ));
    if row.queue_pos > 0 || row.forced {
        let place = match row.queue_pos {
            0 => String::new(),
            n => format!("place {n}"),
        };
        let forced = match (row.forced, place.is_empty()) {
            (false, _) => "",
            (true, true) => "force started: runs whatever the queue says",
            (true, false) => ", force started: runs whatever the queue says",
        };
        out.push(fact("Queue", format!("{place}{forced}"), Plain));
    }
    let order = match (row.sequential, row.first_last) {
        (false, false) => None,
        (true, false) => Some("sequential (pieces in order)"),
        (false, true) => Some("first and last pieces of each file first"),
        (true, true) => Some("sequential, first and last pieces of each file first"),
    };
    if let Some(order) = order {
        out.push(fact("Piece order", order, Plain));
    }
    if let Some(d) = detail {
        out.push(fact("Goals", goals_line(&d.goals), Plain));
        if d.goals.seeding_secs > 0 {
            out.push(fact("Seeded", units::duration(d.goals.seeding_secs), Plain));
        }
    }
    let lim = |v: u64| {
        if v == 0 {
            "unlimited".to_owned()
        } else {
            units::rate(v)
        }
    };
    out.push(fact(
        "Rates",
        format!(
            "{} {} (limit {})  {} {} (limit {})",
            sym.down,
            units::rate(row.down_rate),
            lim(row.down_limit),
            sym.up,
            units::rate(row.up_rate),
            lim(row.up_limit)
        ),
        Plain,
    ));
    // with the detail: how many of the connected peers are encrypted (MSE/PE, RC4)
    let encrypted = detail.map_or(String::new(), |d| {
        let n = d.peers.iter().filter(|p| p.flags.encrypted).count();
        format!(", {n} encrypted")
    });
    // the focused torrent's peers by transport (uTP, BEP 29, or TCP), last: at 80 columns
    // it is what the width cuts, not the swarm's counts
    let transports = detail
        .filter(|d| !d.peers.is_empty())
        .map_or(String::new(), |d| {
            let utp = d.peers.iter().filter(|p| p.flags.utp).count();
            format!("; {utp} uTP, {} TCP", d.peers.len() - utp)
        });
    out.push(fact(
        "Peers",
        format!(
            "{} connected ({} {}{encrypted}); swarm {} {}, {} {}{transports}",
            row.peers,
            row.seeds,
            plural(u64::from(row.seeds), "seed", "seeds"),
            row.swarm_seeds.map_or("?".into(), |n| n.to_string()),
            plural(row.swarm_seeds.map_or(2, u64::from), "seed", "seeds"),
            row.swarm_leechers.map_or("?".into(), |n| n.to_string()),
            plural(
                row.swarm_leechers.map_or(2, u64::from),
                "leecher",
                "leechers"
            ),
        ),
        Plain,
    ));
    if let Some(d) = detail {
        out.push(fact("Sources", sources_line(d), Plain));
        if let Some((line, trouble)) = web_seeds_line(d) {
            out.push(fact(
                "Web seeds",
                clean(&line),
                if trouble { Tone::Warning } else { Plain },
            ));
        }
        if !d.given_peers.is_empty() {
            out.push(fact("Given peers", given_peers_line(d), Plain));
        }
    }
    out.push(fact(
        "Added",
        format::date_time(i64::try_from(row.added_at).unwrap_or(0)),
        Plain,
    ));
    if let Some(d) = detail {
        out.push(fact(
            "Created",
            d.creation_date.map_or("-".into(), format::date_time),
            Plain,
        ));
        out.push(fact(
            "Created by",
            d.created_by.as_deref().map_or("-".into(), clean),
            Plain,
        ));
        out.push(fact(
            "Comment",
            d.comment.as_deref().map_or("-".into(), clean),
            Plain,
        ));
        let private = if d.private {
            "yes (no DHT, no PEX)"
        } else {
            "no"
        };
        out.push(fact("Private", private, Plain));
    } else {
        out.push(fact(
            "",
            "waiting for the engine's detail of this torrent…",
            Tone::Dim,
        ));
    }
    out
}

/// Pieces added without a hash check: how many are still not hashed (each is, before it is
/// first sent; the recheck key checks them all), and those that did not match.
fn unchecked(row: &TorrentRow, keymap: &Keymap, out: &mut Vec<Fact>) {
    if row.unchecked > 0 {
        let key = keymap.hint(Action::Recheck);
        out.push(fact(
            "Unchecked",
            format!(
                "{} {}, each hashed before it is first sent ({key}: check all)",
                row.unchecked,
                plural(u64::from(row.unchecked), "piece", "pieces")
            ),
            Tone::Plain,
        ));
    }
    if row.unchecked_failed > 0 {
        let n = row.unchecked_failed;
        out.push(fact(
            "Hash failed",
            format!(
                "{n} unchecked {} did not match: not sent, fetched again",
                plural(u64::from(n), "piece", "pieces")
            ),
            Tone::Warning,
        ));
    }
}

/// The seeding goals in effect, fit for 80 columns: `ratio 2.00, seeding 7d 0h*, inactive
/// none* (*default)`; a star marks a value taken from the `[seeding]` config (the torrent's
/// own is "default", -2).
pub fn goals_line(g: &crate::api::GoalView) -> String {
    let own = g.limits;
    let star = |deflt: bool| if deflt { "*" } else { "" };
    let ratio = g.ratio.map_or("none".to_owned(), |r| format!("{r:.2}"));
    let mins =
        |m: Option<u64>| m.map_or("none".to_owned(), |m| units::duration(m.saturating_mul(60)));
    let defaults = [
        own.ratio == crate::api::USE_GLOBAL as f64,
        own.seeding_minutes == crate::api::USE_GLOBAL,
        own.inactive_minutes == crate::api::USE_GLOBAL,
    ];
    format!(
        "ratio {ratio}{}, seeding {}{}, inactive {}{}{}",
        star(defaults[0]),
        mins(g.seeding_minutes),
        star(defaults[1]),
        mins(g.inactive_minutes),
        star(defaults[2]),
        if defaults.iter().any(|d| *d) {
            " (*default)"
        } else {
            ""
        }
    )
}

/// Where the torrent's peers come from (every source in effect, with connected/known
/// counts), e.g. `"magnet 1/1, PEX 0/0, incoming 0/0 (connected/known); no trackers"`.
pub fn sources_line(d: &TorrentDetail) -> String {
    let parts: Vec<String> = d
        .peer_sources
        .iter()
        .map(|c| format!("{} {}/{}", c.source.label(), c.connected, c.known))
        .collect();
    let mut line = if parts.is_empty() {
        "none yet".to_owned()
    } else {
        format!("{} (connected/known)", parts.join(", "))
    };
    if d.trackers.is_empty() {
        line.push_str("; no trackers");
    }
    line
}

/// The torrent's web seeds (BEP 19) by state, with the first one's trouble, e.g.
/// `"1 active, 1 backed off; mirror.example:8080: HTTP 503 Service Unavailable"`; and
/// whether something is wrong. `None` without web seeds.
pub fn web_seeds_line(d: &TorrentDetail) -> Option<(String, bool)> {
    use crate::api::WebSeedState as W;
    if d.web_seeds.is_empty() {
        return None;
    }
    let parts: Vec<String> = [W::Active, W::BackedOff, W::Dropped, W::Idle]
        .into_iter()
        .filter_map(|s| {
            let n = d.web_seeds.iter().filter(|w| w.state == s).count();
            (n > 0).then(|| format!("{n} {}", s.label()))
        })
        .collect();
    let mut line = parts.join(", ");
    let trouble = d
        .web_seeds
        .iter()
        .find(|w| w.message.is_some() && (w.state != W::Active || w.missing_files > 0))
        .or_else(|| d.web_seeds.iter().find(|w| w.message.is_some()));
    let wrong = trouble.is_some_and(|w| w.state != W::Idle);
    if let Some(w) = trouble
        && let Some(m) = &w.message
    {
        let host = crate::tui::widgets::peers::web_seed_host(&w.url);
        line.push_str(&format!("; {host}: {m}"));
    }
    Some((line, wrong))
}

/// The peers the user gave, e.g. `"127.0.0.2:6881 (magnet link), [::1]:7000 (by hand)"`;
/// at most four, then how many more.
pub fn given_peers_line(d: &TorrentDetail) -> String {
    const SHOWN: usize = 4;
    let mut parts: Vec<String> = d
        .given_peers
        .iter()
        .take(SHOWN)
        .map(|(addr, source)| {
            let how = if *source == crate::api::PeerSource::Manual {
                "by hand"
            } else {
                "magnet link"
            };
            format!("{addr} ({how})")
        })
        .collect();
    if d.given_peers.len() > SHOWN {
        parts.push(format!("{} more", d.given_peers.len() - SHOWN));
    }
    parts.join(", ")
}

/// Whether `source` goes looking for peers by itself (incoming connections and PEX need a
/// peer first).
fn asks_for_peers(source: crate::api::PeerSource) -> bool {
    use crate::api::PeerSource as S;
    matches!(source, S::Tracker | S::Dht | S::Lsd | S::Magnet | S::Manual)
}

/// `one` when `n` is 1, else `many`.
fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// What a torrent without trackers gets its peers from: the sources in effect for it as
/// the engine lists them (the magnet link's peers, peers added by hand, DHT, LSD, PEX,
/// incoming, with how many are connected), else what the session runs (`on`: DHT, LSD).
pub fn no_trackers_line(d: &TorrentDetail, on: (bool, bool)) -> String {
    use crate::api::PeerSource as S;
    // the peers the user gave first, incoming connections last
    let rank = |s: S| {
        [
            S::Magnet,
            S::Manual,
            S::WebSeed,
            S::Dht,
            S::Lsd,
            S::Pex,
            S::Incoming,
            S::Tracker,
        ]
        .iter()
        .position(|x| *x == s)
    };
    let mut sources: Vec<_> = d
        .peer_sources
        .iter()
        .filter(|c| c.source != S::Tracker)
        .collect();
    sources.sort_by_key(|c| rank(c.source));
    let from: Vec<String> = sources
        .into_iter()
        .map(|c| {
            let what = match c.source {
                S::Magnet => "the magnet link's peers",
                S::Manual => "peers added by hand",
                S::Dht => "the DHT",
                S::Lsd => "LSD",
                S::Pex => "PEX",
                S::Incoming => "incoming connections",
                S::Tracker => "trackers",
                S::WebSeed => "web seeds",
            };
            if c.source == S::WebSeed {
                format!("{what} ({} active)", c.connected)
            } else if c.connected > 0 {
                format!("{what} ({} connected)", c.connected)
            } else {
                what.to_owned()
            }
        })
        .collect();
    match from.split_last() {
        None => session_sources_line(d.private, on).to_owned(),
        Some((last, [])) => format!(" no trackers: peers come from {last}"),
        Some((last, rest)) => format!(
            " no trackers: peers come from {} and {last}",
            rest.join(", ")
        ),
    }
}

/// What a torrent without trackers gets its peers from, given whether the DHT and LSD
/// run (before the engine lists its sources).
pub fn session_sources_line(private: bool, (dht_on, lsd_on): (bool, bool)) -> &'static str {
    match (private, dht_on, lsd_on) {
        (true, _, _) => " no trackers: a private torrent (BEP 27) only takes incoming peers",
        (false, true, false) => {
            " no trackers: peers come from the DHT, PEX and incoming connections"
        }
        (false, true, true) => {
            " no trackers: peers come from the DHT, LSD, PEX and incoming connections"
        }
        (false, false, false) => {
            " no trackers: peers come from PEX and incoming connections (DHT off)"
        }
        (false, false, true) => {
            " no trackers: peers come from LSD, PEX and incoming connections (DHT off)"
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::api::{PeerSource, SourceCount, TorrentError, TorrentErrorKind, TorrentState};
    use crate::tui::theme::Theme;

    fn labels(facts: &[Fact]) -> Vec<&'static str> {
        facts.iter().map(|f| f.label).collect()
    }

    fn value<'a>(facts: &'a [Fact], label: &str) -> &'a str {
        facts
            .iter()
            .find(|f| f.label == label)
            .map_or("", |f| f.value.as_str())
    }

    fn row() -> TorrentRow {
        TorrentRow {
            name: "debian\u{1b}[2J.iso".to_owned(),
            state: TorrentState::Downloading,
            size: 2048,
            done: 1024,
            pieces_total: 2,
            pieces_have: 1,
            down_limit: 1024,
            ..TorrentRow::default()
        }
    }

    #[test]
    fn without_the_detail_the_row_says_what_it_knows() {
        let sym = Theme::default().sym;
        let facts = facts(&row(), None, &Keymap::default(), &sym);
        assert_eq!(
            labels(&facts),
            [
                "Name",
                "State",
                "Info hash",
                "Size",
                "Progress",
                "Transferred",
                "Rates",
                "Peers",
                "Added",
                ""
            ]
        );
        assert_eq!(value(&facts, "Name"), "debian\u{fffd}[2J.iso", "cleaned");
        assert_eq!(facts[0].tone, Tone::Title);
        assert_eq!(facts[1].tone, Tone::State);
        assert_eq!(value(&facts, "Size"), "2.00 KiB (2 pieces)");
        assert_eq!(
            value(&facts, "Progress"),
            "50.0% (1.00 KiB of 2.00 KiB), 1/2 pieces"
        );
        assert!(value(&facts, "Rates").contains("(limit 1.00 KiB/s)"));
        assert!(value(&facts, "Rates").contains("(limit unlimited)"));
        assert_eq!(
            value(&facts, "Peers"),
            "0 connected (0 seeds); swarm ? seeds, ? leechers"
        );
        assert_eq!(facts.last().map(|f| f.tone), Some(Tone::Dim));
    }

    #[test]
    fn the_peers_line_counts_encrypted_and_utp_peers_when_the_detail_is_there() {
        use crate::api::{PeerFlags, PeerRow};
        let sym = Theme::default().sym;
        let row = TorrentRow {
            name: "x".to_owned(),
            peers: 3,
            seeds: 1,
            ..TorrentRow::default()
        };
        let peer = |encrypted, obfuscated, utp| PeerRow {
            addr: "127.0.0.1:1".parse().unwrap(),
            client: String::new(),
            flags: PeerFlags {
                encrypted,
                obfuscated,
                utp,
                ..PeerFlags::default()
            },
            progress: 0.0,
            down_rate: 0,
            up_rate: 0,
            downloaded: 0,
            uploaded: 0,
            source: crate::api::PeerSource::Tracker,
        };
        let d = TorrentDetail {
            peers: vec![
                peer(true, false, true),
                peer(false, true, false),
                peer(false, false, false),
            ],
            ..TorrentDetail::default()
        };
        let f = facts(&row, Some(&d), &Keymap::default(), &sym);
        assert_eq!(
            value(&f, "Peers"),
            "3 connected (1 seed, 1 encrypted); swarm ? seeds, ? leechers; 1 uTP, 2 TCP",
            "RC4 only: a handshake-only peer is not counted; an encrypted uTP peer is both"
        );
        let f = facts(&row, None, &Keymap::default(), &sym);
        assert_eq!(
            value(&f, "Peers"),
            "3 connected (1 seed); swarm ? seeds, ? leechers"
        );
    }

    #[test]
    fn a_magnet_before_its_metadata_has_no_size_and_says_whom_it_asks() {
        let sym = Theme::default().sym;
        let fetching = TorrentRow {
            name: "debian".to_owned(),
            state: TorrentState::FetchingMetadata,
            peers: 3,
            ..TorrentRow::default()
        };
        let f = facts(&fetching, None, &Keymap::default(), &sym);
        assert_eq!(value(&f, "State"), "Fetching metadata from 3 peers");
        assert_eq!(value(&f, "Size"), "– (known once the metadata arrives)");
        assert_eq!(value(&f, "Progress"), "–", "never 100% of 0 B");
        let alone = TorrentRow {
            peers: 0,
            ..fetching.clone()
        };
        let f = facts(&alone, None, &Keymap::default(), &sym);
        assert_eq!(value(&f, "State"), "Fetching metadata: no peer to ask yet");
        assert!(!labels(&f).contains(&"What to do"), "no detail: not known");
        // no tracker, no DHT, no LSD, no peer given: say what would help
        let nothing = TorrentDetail {
            peer_sources: vec![crate::api::SourceCount {
                source: crate::api::PeerSource::Incoming,
                known: 0,
                connected: 0,
            }],
            ..TorrentDetail::default()
        };
        let f = facts(&alone, Some(&nothing), &Keymap::default(), &sym);
        let what = value(&f, "What to do");
        for part in [
            "add a tracker",
            "add a peer (A in the Peers tab)",
            "enable the DHT",
        ] {
            assert!(what.contains(part), "{what}");
        }
        // with the DHT running it waits for the DHT
        let dht = TorrentDetail {
            peer_sources: vec![crate::api::SourceCount {
                source: crate::api::PeerSource::Dht,
                known: 0,
                connected: 0,
            }],
            ..TorrentDetail::default()
        };
        let f = facts(&alone, Some(&dht), &Keymap::default(), &sym);
        assert!(!labels(&f).contains(&"What to do"));
        // paused before the metadata came: still unknown
        let paused = TorrentRow {
            state: TorrentState::Paused,
            ..fetching
        };
        let f = facts(&paused, None, &Keymap::default(), &sym);
        assert_eq!(value(&f, "State"), "Paused");
        assert_eq!(value(&f, "Progress"), "–");
    }

    #[test]
    fn a_name_changed_on_disk_says_so_under_the_name() {
        let sym = Theme::default().sym;
        let detail = TorrentDetail {
            name_changed: Some("'..' joined".to_owned()),
            ..TorrentDetail::default()
        };
        let facts = facts(&row(), Some(&detail), &Keymap::default(), &sym);
        assert_eq!(labels(&facts)[..3], ["Name", "Renamed", "State"]);
        assert_eq!(
            facts[1].value,
            "changed from the torrent's name: '..' joined"
        );
        assert_eq!(facts[1].tone, Tone::Warning);
    }

    #[test]
    fn the_row_message_is_labelled_by_what_it_is() {
        let sym = Theme::default().sym;
        let keymap = Keymap::default();
        let guarded = TorrentRow {
            state: TorrentState::Paused,
            paused_by: Some(crate::api::PauseCause::DiskGuard(
                "only 1 MiB free on the volume of /d".to_owned(),
            )),
            message: Some("paused: only 1 MiB free on the volume of /d".to_owned()),
            has_trackers: true,
            ..row()
        };
        let f = facts(&guarded, None, &keymap, &sym);
        assert_eq!(labels(&f)[0], "Status");
        assert_eq!(value(&f, "State"), "Paused (disk full)");
        let fetching = TorrentRow {
            state: TorrentState::FetchingMetadata,
            message: Some("fetching metadata (BEP 9) from 0 peers".to_owned()),
            ..row()
        };
        assert_eq!(labels(&facts(&fetching, None, &keymap, &sym))[0], "Status");
        let trackerless = TorrentRow {
            message: Some("no trackers: peers come from the DHT".to_owned()),
            has_trackers: false,
            ..row()
        };
        assert_eq!(labels(&facts(&trackerless, None, &keymap, &sym))[0], "Note");
        let tracked = TorrentRow {
            message: Some("tracker: connection refused".to_owned()),
            has_trackers: true,
            ..row()
        };
        assert_eq!(labels(&facts(&tracked, None, &keymap, &sym))[0], "Tracker");
    }

    #[test]
    fn an_error_comes_first_with_what_to_do() {
        let sym = Theme::default().sym;
        let row = TorrentRow {
            error: Some(TorrentError {
                kind: TorrentErrorKind::FilesMissing,
                message: "gone: /data/x".to_owned(),
            }),
            message: Some("tracker says no".to_owned()),
            has_trackers: true,
            ..row()
        };
        let facts = facts(&row, None, &Keymap::default(), &sym);
        assert_eq!(
            labels(&facts)[..4],
            ["Error", "What to do", "Tracker", "Name"]
        );
        assert_eq!(facts[0].tone, Tone::Error);
        assert_eq!(
            facts[1].value,
            format!("{} (p resumes)", TorrentErrorKind::FilesMissing.hint())
        );
        assert_eq!(facts[2].tone, Tone::Warning);
    }

    #[test]
    fn the_detail_adds_folder_sources_and_metadata() {
        let sym = Theme::new(&Default::default(), false, true).sym;
        let detail = TorrentDetail {
            save_path: PathBuf::from("/srv/linux"),
            piece_length: 1024,
            peer_sources: vec![SourceCount {
                source: PeerSource::Tracker,
                known: 5,
                connected: 2,
            }],
            comment: Some("caf\u{e9}".to_owned()),
            private: true,
            ..TorrentDetail::default()
        };
        let facts = facts(&row(), Some(&detail), &Keymap::default(), &sym);
        assert!(!labels(&facts).contains(&""), "no waiting hint");
        assert!(
            !labels(&facts).contains(&"Renamed"),
            "the torrent's own name"
        );
        assert_eq!(value(&facts, "Save path"), "/srv/linux");
        assert!(!labels(&facts).contains(&"Category") && !labels(&facts).contains(&"Tags"));
        let labelled = TorrentRow {
            category: "tv/hd".to_owned(),
            tags: vec!["a".to_owned(), "b".to_owned()],
            auto_managed: true,
            ..row()
        };
        let more = super::facts(&labelled, Some(&detail), &Keymap::default(), &sym);
        assert_eq!(
            value(&more, "Category"),
            "tv/hd (automatic management: the data follows it)"
        );
        assert_eq!(value(&more, "Tags"), "a, b");
        assert_eq!(value(&facts, "Size"), "2.00 KiB (2 pieces of 1.00 KiB)");
        // a skipped file: what will be downloaded comes first
        let file = |size, priority| crate::api::FileRow {
            size,
            priority,
            ..Default::default()
        };
        let skipping = TorrentDetail {
            files: vec![
                file(1536, FilePriority::Normal),
                file(512, FilePriority::Skip),
            ],
            ..detail.clone()
        };
        // the row's size is what is wanted
        let wanted_row = TorrentRow {
            size: 1536,
            ..row()
        };
        let f = super::facts(&wanted_row, Some(&skipping), &Keymap::default(), &sym);
        assert_eq!(
            value(&f, "Size"),
            "1.50 KiB wanted of 2.00 KiB (2 pieces of 1.00 KiB)"
        );
        assert!(value(&facts, "Sources").ends_with("2/5 (connected/known); no trackers"));
        assert!(!labels(&facts).contains(&"Given peers"));
        assert_eq!(value(&facts, "Comment"), "caf?", "ASCII mode");
        assert_eq!(value(&facts, "Created by"), "-");
        assert_eq!(value(&facts, "Private"), "yes (no DHT, no PEX)");
        assert!(value(&facts, "Transferred").contains("wasted 0 B"));
    }

    #[test]
    fn sources_and_the_peers_the_user_gave_are_listed() {
        let sym = Theme::default().sym;
        let mut detail = TorrentDetail {
            peer_sources: vec![
                SourceCount {
                    source: PeerSource::Magnet,
                    known: 1,
                    connected: 1,
                },
                SourceCount {
                    source: PeerSource::Incoming,
                    known: 0,
                    connected: 0,
                },
            ],
            given_peers: vec![
                ("127.0.0.2:6881".parse().unwrap(), PeerSource::Magnet),
                ("[::1]:7000".parse().unwrap(), PeerSource::Manual),
            ],
            ..TorrentDetail::default()
        };
        let facts = facts(&row(), Some(&detail), &Keymap::default(), &sym);
        assert_eq!(
            value(&facts, "Sources"),
            "magnet 1/1, incoming 0/0 (connected/known); no trackers"
        );
        assert_eq!(
            value(&facts, "Given peers"),
            "127.0.0.2:6881 (magnet link), [::1]:7000 (by hand)"
        );
        detail.peer_sources.clear();
        detail.given_peers = (1..=6)
            .map(|i| {
                (
                    format!("127.0.0.{i}:1").parse().unwrap(),
                    PeerSource::Manual,
                )
            })
            .collect();
        assert_eq!(sources_line(&detail), "none yet; no trackers");
        assert!(given_peers_line(&detail).ends_with("127.0.0.4:1 (by hand), 2 more"));
    }
}
