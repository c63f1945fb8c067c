//! Tracker clients: the announce request/response shapes shared by every tracker
//! protocol, and the errors a tracker exchange can end in.
//!
//! - [`http`]: HTTP(S) trackers (BEP 3 announce, BEP 23 compact peers, BEP 7 `peers6`,
//!   BEP 48 scrape).
//! - [`udp`]: UDP trackers (BEP 15 connect/announce/scrape, IPv4 and IPv6).
//! - [`TrackerClient`]: one client for every tracker of the session, dispatching each
//!   announce by the URL's scheme; any other scheme (e.g. `wss://`) yields
//!   [`TrackerError::UnsupportedScheme`].

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::lock::MutexExt;
use crate::metainfo::InfoHash;
use crate::net::host_of;
use crate::peer::PeerId;

pub mod http;
pub mod udp;

/// The session's tracker client: announces go to the protocol the URL's scheme names.
///
/// It also remembers which tracker endpoints (`scheme://host:port`) could not be reached
/// ([`TrackerError::Transport`]: DNS, connect refused, reset, timeout): while one is
/// marked down, announces and scrapes to it fail at once with the same error instead of
/// opening a connection. A seedbox with 10,000 torrents on one tracker that is down thus
/// costs one connection attempt per back-off period ([`ENDPOINT_FIRST_BACKOFF`], doubling
/// up to [`ENDPOINT_MAX_BACKOFF`]), not 10,000; the first answer of any kind clears the
/// mark. Each torrent still keeps its own retry schedule (BEP 12 tiers) on top.
#[derive(Debug, Clone, Default)]
pub struct TrackerClient {
    http: http::HttpTracker,
    udp: udp::UdpTracker,
    down: Arc<Mutex<HashMap<String, Down>>>,
}

/// How long a tracker endpoint that could not be reached is skipped after its first
/// failure; doubles with each further failure.
pub const ENDPOINT_FIRST_BACKOFF: Duration = Duration::from_secs(15);
/// Longest time an unreachable tracker endpoint is skipped before it is tried again.
pub const ENDPOINT_MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);
/// Most endpoints remembered as down (a hostile .torrent can name many trackers); when
/// full, the oldest marks are dropped (those endpoints are simply tried again).
pub const MAX_DOWN_ENDPOINTS: usize = 4096;

#[derive(Debug, Clone)]
struct Down {
    /// Skipped until then.
    until: Instant,
    /// Consecutive failures.
    fails: u32,
    /// The error the last real attempt ended in (without the URL).
    error: String,
}

/// The protocol an announce URL speaks, by its scheme (case-insensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://` or `https://` (BEP 3).
    Http,
    /// `udp://` (BEP 15).
    Udp,
    /// Anything else.
    Other,
}

impl Scheme {
    /// The scheme of `url`.
    pub fn of(url: &str) -> Scheme {
        let scheme = url.trim().split_once("://").map_or("", |(s, _)| s);
        if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") {
            Scheme::Http
        } else if scheme.eq_ignore_ascii_case("udp") {
            Scheme::Udp
        } else {
            Scheme::Other
        }
    }
}

impl TrackerClient {
    /// A client with the default timeouts and limits of each protocol.
    pub fn new() -> TrackerClient {
        TrackerClient {
            http: http::HttpTracker::new(),
            udp: udp::UdpTracker::new(),
            down: Arc::default(),
        }
    }

    /// Whether announces to `url` can be sent at all (its scheme is one we speak).
    pub fn supports(url: &str) -> bool {
        matches!(Scheme::of(url), Scheme::Http | Scheme::Udp)
    }

    /// Announce `req` to `url`.
    ///
    /// # Errors
    /// [`TrackerError`]; [`TrackerError::UnsupportedScheme`] for a scheme we do not speak.
    /// [`TrackerError::Transport`] at once (no connection) while the endpoint is marked down.
    pub async fn announce(
        &self,
        url: &str,
        req: &AnnounceRequest,
    ) -> Result<AnnounceResponse, TrackerError> {
        if let Some(e) = self.down_error(url, Instant::now()) {
            return Err(e);
        }
        let result = match Scheme::of(url) {
            Scheme::Http => self.http.announce(url, req).await,
            Scheme::Udp => self.udp.announce(url, req).await,
            Scheme::Other => return Err(unsupported(url)),
        };
        self.record(url, &result, Instant::now());
        result
    }

    /// The error an announce or scrape to `url` ends in at once when its endpoint
    /// (`scheme://host:port`) is marked down at `now` ([`TrackerError::Transport`], the
    /// same text as the last real attempt's); `None` when it may be tried.
    pub fn down_error(&self, url: &str, now: Instant) -> Option<TrackerError> {
        let down = self.down.locked();
        let d = down.get(&host_of(url))?;
        (now < d.until).then(|| TrackerError::Transport(d.error.clone()))
    }

    /// Mark `url`'s endpoint down after a transport failure, clear it after any answer.
    fn record<T>(&self, url: &str, result: &Result<T, TrackerError>, now: Instant) {
        let key = host_of(url);
        let mut down = self.down.locked();
        match result {
            Err(TrackerError::Transport(msg)) => {
                if !down.contains_key(&key)
                    && down.len() >= MAX_DOWN_ENDPOINTS
                    && let Some(oldest) = down
                        .iter()
                        .min_by_key(|(_, d)| d.until)
                        .map(|(k, _)| k.clone())
                {
                    down.remove(&oldest);
                }
                let d = down.entry(key).or_insert(Down {
                    until: now,
                    fails: 0,
                    error: String::new(),
                });
                let backoff = ENDPOINT_FIRST_BACKOFF
                    .saturating_mul(1 << d.fails.min(10))
                    .min(ENDPOINT_MAX_BACKOFF);
                d.fails += 1;
                d.until = now + backoff;
                d.error.clone_from(msg);
            }
            Err(TrackerError::InvalidUrl(_) | TrackerError::UnsupportedScheme(_)) => {}
            _ => {
                down.remove(&key);
            }
        }
    }

    /// Endpoints currently marked down at `now` (for tests and the log).
    pub fn endpoints_down(&self, now: Instant) -> usize {
        let down = self.down.locked();
        down.values().filter(|d| now < d.until).count()
    }
}

fn unsupported(url: &str) -> TrackerError {
    TrackerError::UnsupportedScheme(
        url.trim()
            .split_once("://")
            .map_or("", |(s, _)| s)
            .to_ascii_lowercase(),
    )
}

impl TrackerClient {
    /// Scrape one torrent at the tracker behind announce URL `url` (BEP 48 over HTTP,
    /// BEP 15 §scrape over UDP): its seeders, leechers and completed downloads.
    ///
    /// # Errors
    /// [`TrackerError`] as for an announce; [`TrackerError::InvalidUrl`] when an HTTP
    /// announce URL has no scrape counterpart; [`TrackerError::InvalidResponse`] when the
    /// answer does not mention the torrent.
    pub async fn scrape(
        &self,
        url: &str,
        info_hash: InfoHash,
    ) -> Result<ScrapeStats, TrackerError> {
        if let Some(e) = self.down_error(url, Instant::now()) {
            return Err(e);
        }
        let got = match Scheme::of(url) {
            Scheme::Http => self.http.scrape(url, &[info_hash]).await,
            Scheme::Udp => self.udp.scrape(url, &[info_hash]).await,
            Scheme::Other => return Err(TrackerError::UnsupportedScheme(String::new())),
        };
        self.record(url, &got, Instant::now());
        got?.into_iter()
            .find(|(h, _)| *h == info_hash)
            .map(|(_, s)| s)
            .ok_or_else(|| TrackerError::InvalidResponse {
                reason: "tracker scrape response does not list this torrent".into(),
                excerpt: String::new(),
            })
    }
}

/// Regular re-announce interval used when a tracker gives none (or a non-positive one), in s.
pub const DEFAULT_INTERVAL_SECS: u32 = 1800;
/// Smallest interval accepted from a tracker, in s; smaller positive values are raised to it
/// so that a misconfigured tracker cannot make us announce in a tight loop.
pub const MIN_INTERVAL_SECS: u32 = 60;
/// Largest interval accepted from a tracker, in s (1 day); larger values are lowered to it so
/// that the swarm does not forget us (trackers expire peers after a few intervals).
pub const MAX_INTERVAL_SECS: u32 = 86_400;

/// Longest excerpt of a tracker's body kept in an error, in characters (after escaping).
pub const EXCERPT_MAX_CHARS: usize = 80;
/// Longest tracker text (`failure reason`, `warning message`) kept, in characters.
pub const MESSAGE_MAX_CHARS: usize = 512;

/// The `event` of an announce (BEP 3). A regular re-announce carries no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnnounceEvent {
    /// First announce of a download session.
    Started,
    /// The download has just finished (sent once, not when starting as a seeder).
    Completed,
    /// The torrent is being stopped or removed.
    Stopped,
}

impl AnnounceEvent {
    /// The value of the `event` query parameter: `started`, `completed` or `stopped`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnnounceEvent::Started => "started",
            AnnounceEvent::Completed => "completed",
            AnnounceEvent::Stopped => "stopped",
        }
    }
}

impl fmt::Display for AnnounceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What we tell a tracker in one announce (BEP 3 §Trackers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnounceRequest {
    /// The torrent's v1 info hash (20 raw bytes, sent percent-encoded).
    pub info_hash: InfoHash,
    /// Our peer id (20 raw bytes, sent percent-encoded).
    pub peer_id: PeerId,
    /// TCP port we accept peer connections on.
    pub port: u16,
    /// Bytes uploaded to peers since the `started` event.
    pub uploaded: u64,
    /// Bytes downloaded from peers since the `started` event.
    pub downloaded: u64,
    /// Bytes still missing to have every wanted piece.
    pub left: u64,
    /// `started` / `completed` / `stopped`; `None` for a regular re-announce (omitted).
    pub event: Option<AnnounceEvent>,
    /// How many peers we would like (`numwant`); `None` lets the tracker choose (often 50).
    pub numwant: Option<u32>,
    /// A random number fixed for the session (`key`, sent as 8 hex digits), letting the
    /// tracker recognise us across IP address changes.
    pub key: u32,
    /// The `tracker id` the tracker gave in an earlier response, echoed as `trackerid`.
    pub tracker_id: Option<String>,
}

/// What a tracker answered to an announce (BEP 3, BEP 23, BEP 7), normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnounceResponse {
    /// Regular re-announce interval, in s. [`DEFAULT_INTERVAL_SECS`] (1800) when absent,
    /// not an integer, or not positive; otherwise clamped to
    /// [`MIN_INTERVAL_SECS`]..=[`MAX_INTERVAL_SECS`] (60 s .. 1 day).
    /// Schedule regular announces with [`AnnounceResponse::regular_interval`], which also
    /// honours a `min interval` larger than this.
    pub interval: u32,
    /// `min interval`, in s: the shortest gap the tracker accepts between any two announces,
    /// so it bounds forced/extra announces only. `None` when absent, not an integer or not
    /// positive; otherwise clamped like `interval`. It may exceed `interval` (kept as sent).
    pub min_interval: Option<u32>,
    /// Peers from `peers` (compact BEP 23 or dictionary list, BEP 3) followed by `peers6`
    /// (BEP 7), in tracker order, without duplicates. IPv4-mapped IPv6 addresses
    /// (`::ffff:a.b.c.d`) are given as IPv4; entries with port 0, an unspecified address,
    /// a hostname instead of an address, or a malformed shape are dropped.
    pub peers: Vec<SocketAddr>,
    /// `complete`: seeders in the swarm, when reported (negative values dropped).
    pub complete: Option<u32>,
    /// `incomplete`: leechers in the swarm, when reported (negative values dropped).
    pub incomplete: Option<u32>,
    /// `warning message`: shown to the user; the announce still succeeded. Lossy UTF-8,
    /// control characters replaced, at most [`MESSAGE_MAX_CHARS`] characters.
    pub warning: Option<String>,
    /// `tracker id`, to echo in later announces (kept only when it is non-empty UTF-8).
    pub tracker_id: Option<String>,
}

impl AnnounceResponse {
    /// The gap before the next regular announce, in s: `interval`, raised to `min interval`
    /// when the tracker sent a larger one (announcing sooner would break its rate limit).
    pub fn regular_interval(&self) -> u32 {
        self.interval.max(self.min_interval.unwrap_or(0))
    }
}

/// One torrent's swarm counts from a scrape (BEP 48). Each count is `None` when the tracker
/// left it out or sent a negative number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScrapeStats {
    /// `complete`: seeders.
    pub complete: Option<u32>,
    /// `downloaded`: completed downloads the tracker has seen (all time).
    pub downloaded: Option<u32>,
    /// `incomplete`: leechers.
    pub incomplete: Option<u32>,
}

/// Why an announce (or scrape) gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrackerError {
    /// The tracker refused the request (`failure reason`, BEP 3), even over HTTP 4xx/5xx.
    /// The text is lossy UTF-8 with control characters replaced, at most
    /// [`MESSAGE_MAX_CHARS`] characters.
    #[error("tracker failure: {0}")]
    Failure(String),
    /// The body is not a usable tracker response (not bencode, not a dictionary, wrong
    /// types). `reason` starts with "tracker response ..."; `excerpt` is the start of the
    /// body, sanitised by [`excerpt`].
    #[error("{reason} (got: \"{excerpt}\")")]
    InvalidResponse {
        /// What is wrong, e.g. "tracker response is not valid bencode: `<decode error>`".
        reason: String,
        /// Sanitised start of the body (printable ASCII, at most 80 characters).
        excerpt: String,
    },
    /// The tracker answered a non-2xx HTTP status without a bencoded `failure reason`.
    #[error("tracker answered HTTP {status}{}{}", status_reason(*.status), excerpt_suffix(.excerpt))]
    Http {
        /// The HTTP status code.
        status: u16,
        /// Sanitised start of the body (may be empty).
        excerpt: String,
    },
    /// The response body exceeded the size cap; reading stopped there.
    #[error("tracker response is larger than the {limit}-byte limit; stopped reading")]
    BodyTooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
    /// The tracker could not be reached or did not answer in time (DNS, connect, TLS,
    /// reset, timeout). Never contains the announce URL (it may hold a passkey).
    #[error("could not reach tracker: {0}")]
    Transport(String),
    /// The announce URL is not one we can parse.
    #[error("invalid announce URL: {0}")]
    InvalidUrl(String),
    /// The announce URL's scheme (held here, e.g. `wss`) is not supported.
    #[error("unsupported tracker URL scheme \"{scheme}\" ({hint})", scheme = .0, hint = scheme_hint(.0))]
    UnsupportedScheme(String),
}

/// ` Not Found` for 404: the status's standard reason phrase (RFC 9110), if it has one.
fn status_reason(status: u16) -> String {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map_or_else(String::new, |r| format!(" {r}"))
}

fn excerpt_suffix(excerpt: &str) -> String {
    if excerpt.is_empty() {
        String::new()
    } else {
        format!(" (got: \"{excerpt}\")")
    }
}

fn scheme_hint(_scheme: &str) -> &'static str {
    "only http://, https:// and udp:// trackers are supported"
}

/// A short, printable excerpt of an untrusted body for error messages, ASCII only
/// ([`crate::untrusted::escape_bytes`]): printable ASCII is kept, `"` and `\` are escaped,
/// `\n` `\r` `\t` are written as such, every other byte as `\xNN`. At most
/// [`EXCERPT_MAX_CHARS`] characters; a cut excerpt ends in `...`.
pub fn excerpt(body: &[u8]) -> String {
    crate::untrusted::escape_bytes(body, EXCERPT_MAX_CHARS)
}

/// What an error page (the body of a non-2xx answer) says, for people: a web server's HTML
/// page gives its `<title>` (or its text without tags), never its markup; anything else is
/// [`excerpt`]. Empty when the page only repeats the status (`404 Not Found`).
pub fn error_page_excerpt(body: &[u8], status: u16) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start();
    if !trimmed.starts_with('<') {
        return excerpt(body);
    }
    let lower = trimmed.to_ascii_lowercase();
    let inner = match (lower.find("<title"), lower.find("</title>")) {
        (Some(open), Some(close)) if open < close => trimmed
            .get(open..close)
            .and_then(|t| t.find('>').and_then(|gt| t.get(gt + 1..)))
            .unwrap_or_default()
            .to_owned(),
        _ => {
            // the page's text without its tags
            let mut out = String::new();
            let mut in_tag = false;
            for c in trimmed.chars() {
                match c {
                    '<' => in_tag = true,
                    '>' => {
                        in_tag = false;
                        out.push(' ');
                    }
                    c if !in_tag => out.push(c),
                    _ => {}
                }
            }
            out
        }
    };
    let words: Vec<&str> = inner.split_whitespace().collect();
    let said = words.join(" ");
    let bare = said
        .trim_start_matches(&status.to_string())
        .trim()
        .trim_start_matches(status_reason(status).trim())
        .trim();
    if bare.is_empty() {
        String::new()
    } else {
        excerpt(said.as_bytes())
    }
}

/// Tracker text shown to the user (`failure reason`, `warning message`): lossy UTF-8 made
/// safe for a terminal by [`crate::untrusted::line`] (line breaks and tabs become spaces,
/// terminal escapes and other controls U+FFFD), trimmed, at most [`MESSAGE_MAX_CHARS`]
/// characters (a cut text ends in `…`).
pub fn sanitize_message(text: &[u8]) -> String {
    let lossy = String::from_utf8_lossy(text);
    let safe = crate::untrusted::line(lossy.trim());
    let mut out = String::new();
    for (count, c) in safe.chars().enumerate() {
        if count == MESSAGE_MAX_CHARS {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> AnnounceRequest {
        AnnounceRequest {
            info_hash: InfoHash([7; 20]),
            peer_id: PeerId([1; 20]),
            port: 6881,
            uploaded: 0,
            downloaded: 0,
            left: 1,
            event: None,
            numwant: None,
            key: 0,
            tracker_id: None,
        }
    }

    /// A tracker endpoint that refused a connection is skipped (no connection at all) by
    /// later announces and scrapes of any torrent, until its back-off ends; any answer
    /// clears the mark; other endpoints are not affected.
    #[tokio::test]
    async fn unreachable_endpoint_is_skipped_until_its_backoff_ends() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let c = TrackerClient::new();
        let url = format!("http://127.0.0.1:{port}/announce");
        let first = c.announce(&url, &request()).await.unwrap_err();
        assert!(matches!(first, TrackerError::Transport(_)), "{first}");
        assert_eq!(c.endpoints_down(Instant::now()), 1);
        // now something listens there: a skipped announce must not even connect
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let other_path = format!("http://127.0.0.1:{port}/other/announce?pk=x");
        for u in [&url, &other_path] {
            let e = c.announce(u, &request()).await.unwrap_err();
            assert_eq!(e, first, "same error, shown the same way");
        }
        let e = c.scrape(&url, InfoHash([7; 20])).await.unwrap_err();
        assert_eq!(e, first);
        let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(accepted.is_err(), "a skipped announce opened a connection");
        // the back-off doubles per failure, capped
        let now = Instant::now();
        let key = host_of(&url);
        let until = |c: &TrackerClient| c.down.lock().unwrap()[&key].until;
        c.record::<()>(&url, &Err(TrackerError::Transport("x".into())), now);
        assert_eq!(until(&c), now + ENDPOINT_FIRST_BACKOFF * 2);
        for _ in 0..20 {
            c.record::<()>(&url, &Err(TrackerError::Transport("x".into())), now);
        }
        assert_eq!(until(&c), now + ENDPOINT_MAX_BACKOFF);
        assert!(
            c.down_error(&url, now + ENDPOINT_MAX_BACKOFF).is_none(),
            "tried again after"
        );
        // a tracker's refusal is an answer: the endpoint is up
        c.record::<()>(
            &url,
            &Err(TrackerError::Failure("unregistered".into())),
            now,
        );
        assert!(c.down_error(&url, now).is_none());
        assert_eq!(c.endpoints_down(now), 0);
        // bounded: a .torrent naming many dead trackers cannot grow the table
        for i in 0..(MAX_DOWN_ENDPOINTS + 10) {
            let u = format!("http://10.0.{}.{}:80/a", i / 256, i % 256);
            c.record::<()>(&u, &Err(TrackerError::Transport("x".into())), now);
        }
        assert!(c.down.lock().unwrap().len() <= MAX_DOWN_ENDPOINTS);
    }

    #[test]
    fn schemes() {
        assert_eq!(Scheme::of("HTTPS://x/a"), Scheme::Http);
        assert_eq!(Scheme::of(" udp://x:1"), Scheme::Udp);
        assert_eq!(Scheme::of("wss://x"), Scheme::Other);
        assert!(TrackerClient::supports("http://x/announce"));
        assert!(TrackerClient::supports("udp://x:1"));
        assert!(!TrackerClient::supports("wss://x:1"));
    }

    #[test]
    fn an_error_page_gives_its_title_or_text_never_its_markup() {
        let nginx = b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
        assert_eq!(error_page_excerpt(nginx, 404), "");
        assert_eq!(
            TrackerError::Http {
                status: 404,
                excerpt: error_page_excerpt(nginx, 404)
            }
            .to_string(),
            "tracker answered HTTP 404 Not Found"
        );
        let titled = b"<!DOCTYPE html><html><head><TITLE>Passkey invalid</TITLE></head></html>";
        assert_eq!(error_page_excerpt(titled, 403), "Passkey invalid");
        let untitled = b"  <p>tracker is <b>down</b> for maintenance</p>";
        assert_eq!(
            error_page_excerpt(untitled, 503),
            "tracker is down for maintenance"
        );
        assert_eq!(error_page_excerpt(b"oops", 500), "oops");
        assert_eq!(
            TrackerError::Http {
                status: 500,
                excerpt: "oops".into()
            }
            .to_string(),
            "tracker answered HTTP 500 Internal Server Error (got: \"oops\")"
        );
    }

    #[test]
    fn excerpt_escapes_and_caps() {
        assert_eq!(excerpt(b"<html>\r\n"), "<html>\\r\\n");
        assert_eq!(excerpt(b"a\"b\\c\x00\xff"), "a\\\"b\\\\c\\x00\\xff");
        let long = vec![b'x'; 1000];
        let e = excerpt(&long);
        assert_eq!(e.len(), EXCERPT_MAX_CHARS);
        assert!(e.ends_with("..."));
        // exactly 80 printable bytes fit without "..."
        let exact = vec![b'y'; EXCERPT_MAX_CHARS];
        assert_eq!(excerpt(&exact), "y".repeat(EXCERPT_MAX_CHARS));
        // escapes never push past the cap
        let bin = vec![0x01u8; 500];
        let e = excerpt(&bin);
        assert!(e.len() <= EXCERPT_MAX_CHARS, "{}", e.len());
        assert!(e.is_ascii());
        assert_eq!(excerpt(b""), "");
    }

    #[test]
    fn messages_are_sanitised() {
        assert_eq!(
            sanitize_message(b"  bad\x1b[31m passkey\n "),
            "bad\u{FFFD}[31m passkey"
        );
        assert_eq!(sanitize_message(b"caf\xe9"), "caf\u{FFFD}");
        let long = vec![b'z'; 5000];
        let m = sanitize_message(&long);
        assert_eq!(m.chars().count(), MESSAGE_MAX_CHARS + 1);
        assert!(m.ends_with('…'));
    }

    #[test]
    fn error_texts() {
        assert_eq!(
            TrackerError::Failure("torrent not registered".into()).to_string(),
            "tracker failure: torrent not registered"
        );
        assert_eq!(
            TrackerError::UnsupportedScheme("wss".into()).to_string(),
            "unsupported tracker URL scheme \"wss\" (only http://, https:// and udp:// trackers are supported)"
        );
        assert_eq!(
            TrackerError::Http {
                status: 502,
                excerpt: String::new()
            }
            .to_string(),
            "tracker answered HTTP 502 Bad Gateway"
        );
        assert_eq!(
            TrackerError::Http {
                status: 500,
                excerpt: "oops".into()
            }
            .to_string(),
            "tracker answered HTTP 500 Internal Server Error (got: \"oops\")"
        );
    }

    #[test]
    fn regular_interval_honours_larger_min_interval() {
        let mut r = AnnounceResponse {
            interval: 1800,
            min_interval: Some(300),
            peers: vec![],
            complete: None,
            incomplete: None,
            warning: None,
            tracker_id: None,
        };
        assert_eq!(r.regular_interval(), 1800);
        r.min_interval = Some(3600);
        assert_eq!(r.regular_interval(), 3600);
        r.min_interval = None;
        assert_eq!(r.regular_interval(), 1800);
    }
}
