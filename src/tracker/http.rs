//! HTTP(S) tracker client: announce (BEP 3), compact peer lists (BEP 23), IPv6 peers
//! (BEP 7 `peers6`) and scrape (BEP 48).
//!
//! Three layers, each usable alone:
//! - [`announce_url`] / [`scrape_url`]: build the GET URL from an announce URL that may
//!   already carry a query (private-tracker passkeys).
//! - [`parse_announce_response`] / [`parse_scrape_response`]: turn a body into typed data
//!   with the tolerant decoder of [`crate::bencode`]; never panic on any input.
//! - [`HttpTracker`]: one shared `reqwest` client (connection reuse) with timeouts and a
//!   body size cap.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::time::Duration;

use super::{
    AnnounceRequest, AnnounceResponse, MAX_INTERVAL_SECS, MIN_INTERVAL_SECS, ScrapeStats,
    TrackerError, excerpt, sanitize_message,
};
use crate::bencode::{self, Dict, Value};
use crate::metainfo::InfoHash;

/// Connect timeout of [`HttpTracker::new`]: 10 s (TCP + TLS handshake).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Total timeout of [`HttpTracker::new`]: 30 s from the start of connecting until the
/// last byte of the body.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response body read, in bytes (2 MiB, about 350 000 compact IPv4 peers).
pub const DEFAULT_BODY_LIMIT: usize = 2 * 1024 * 1024;
/// The `User-Agent` header sent to trackers: `ratorrent/<crate version>`.
pub const USER_AGENT: &str = concat!("ratorrent/", env!("CARGO_PKG_VERSION"));
/// Most HTTP redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;

/// Size of one BEP 23 compact IPv4 peer: 4 address bytes + 2 port bytes, big-endian.
const COMPACT_V4_LEN: usize = 6;
/// Size of one BEP 7 compact IPv6 peer: 16 address bytes + 2 port bytes, big-endian.
const COMPACT_V6_LEN: usize = 18;

/// The GET URL of an announce (BEP 3): `announce` followed by the request's parameters.
///
/// - Appended after `?`, or after `&` when `announce` already has a query (passkeys);
///   whitespace around `announce` and a `#fragment` in it are dropped.
/// - `info_hash` and `peer_id` are the 20 raw bytes percent-encoded byte by byte (RFC 3986
///   unreserved characters `A-Z a-z 0-9 - . _ ~` stay literal, others become `%XX`).
/// - Always `compact=1` (BEP 23) and `no_peer_id=1`; `event` only when set; `numwant` only
///   when set; `key` as 8 uppercase hex digits; `trackerid` when set.
pub fn announce_url(announce: &str, req: &AnnounceRequest) -> String {
    let announce = announce.trim();
    let base = announce.split_once('#').map_or(announce, |(b, _)| b);
    let mut url = String::with_capacity(base.len() + 256);
    url.push_str(base);
    url.push_str(query_separator(base));
    url.push_str("info_hash=");
    percent_encode_into(&mut url, &req.info_hash.0);
    url.push_str("&peer_id=");
    percent_encode_into(&mut url, &req.peer_id.0);
    url.push_str(&format!(
        "&port={}&uploaded={}&downloaded={}&left={}&compact=1&no_peer_id=1",
        req.port, req.uploaded, req.downloaded, req.left
    ));
    if let Some(event) = req.event {
        url.push_str("&event=");
        url.push_str(event.as_str());
    }
    if let Some(n) = req.numwant {
        url.push_str(&format!("&numwant={n}"));
    }
    url.push_str(&format!("&key={:08X}", req.key));
    if let Some(id) = &req.tracker_id {
        url.push_str("&trackerid=");
        percent_encode_into(&mut url, id.as_bytes());
    }
    url
}

/// The scrape URL for an announce URL (BEP 48): the last path segment must start with
/// `announce`, which is replaced by `scrape` (`/announce.php?pk=1` → `/scrape.php?pk=1`),
/// then one `info_hash` parameter per hash is appended (raw bytes percent-encoded).
///
/// `None` when the announce URL has no such segment: the tracker does not support scrape.
pub fn scrape_url(announce: &str, info_hashes: &[InfoHash]) -> Option<String> {
    let announce = announce.trim();
    let base = announce.split_once('#').map_or(announce, |(b, _)| b);
    let (path_part, query) = match base.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (base, None),
    };
    let authority_start = path_part.find("://")? + 3;
    let path_start = authority_start + path_part.get(authority_start..)?.find('/')?;
    let last_slash = path_part.rfind('/')?;
    if last_slash < path_start {
        return None;
    }
    let segment = path_part.get(last_slash + 1..)?;
    let rest = segment.strip_prefix("announce")?;
    let mut url = String::with_capacity(base.len() + 64 * info_hashes.len());
    url.push_str(path_part.get(..=last_slash)?);
    url.push_str("scrape");
    url.push_str(rest);
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    let mut first = true;
    for hash in info_hashes {
        if first {
            url.push_str(query_separator(&url));
            first = false;
        } else {
            url.push('&');
        }
        url.push_str("info_hash=");
        percent_encode_into(&mut url, &hash.0);
    }
    Some(url)
}

/// What to put between `base` and the first appended parameter.
fn query_separator(base: &str) -> &'static str {
    if !base.contains('?') {
        "?"
    } else if base.ends_with('?') || base.ends_with('&') {
        ""
    } else {
        "&"
    }
}

/// Percent-encode raw bytes (RFC 3986: unreserved characters stay literal).
fn percent_encode_into(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
}

/// Parse an announce response body (BEP 3, BEP 23, BEP 7).
///
/// Tolerated: unsorted/repeated keys, a UTF-8 BOM or ASCII whitespace around the value,
/// dictionary-form peers although compact was asked for, list items that are compact
/// strings, a trailing partial compact entry (ignored: the complete entries before it are
/// kept), peers with hostnames / bad ports (skipped), missing `peers` (no peers).
/// Intervals: see [`AnnounceResponse::interval`] and [`AnnounceResponse::min_interval`].
///
/// # Errors
/// - [`TrackerError::Failure`] when the dictionary has `failure reason`, whatever else it
///   holds.
/// - [`TrackerError::InvalidResponse`] when the body is empty, not bencode, not a
///   dictionary, has none of the announce keys (`interval`, `min interval`, `peers`,
///   `peers6`, `complete`, `incomplete`, `warning message`, `tracker id`), or has a
///   `peers`/`peers6` value that is neither a string nor a list.
pub fn parse_announce_response(body: &[u8]) -> Result<AnnounceResponse, TrackerError> {
    let dict_value = decode_body(body)?;
    let dict = top_dict(&dict_value, body)?;
    if let Some(reason) = failure_reason(dict) {
        return Err(TrackerError::Failure(reason));
    }
    const ANNOUNCE_KEYS: [&[u8]; 8] = [
        b"interval",
        b"min interval",
        b"peers",
        b"peers6",
        b"complete",
        b"incomplete",
        b"warning message",
        b"tracker id",
    ];
    if !ANNOUNCE_KEYS.iter().any(|k| dict.get(k).is_some()) {
        return Err(invalid(
            "tracker response is a dictionary without any announce key (`interval`, `peers`, `failure reason`)"
                .to_owned(),
            body,
        ));
    }

    let mut peers = PeerSet::default();
    for (key, compact_len) in [
        (&b"peers"[..], COMPACT_V4_LEN),
        (&b"peers6"[..], COMPACT_V6_LEN),
    ] {
        match dict.get(key) {
            None => {}
            Some(Value::Bytes(b)) => peers.add_compact(b, compact_len),
            Some(Value::List(items)) => {
                for item in items {
                    peers.add_item(item);
                }
            }
            Some(other) => {
                return Err(invalid(
                    format!(
                        "tracker response `{}` is {} {}, expected a string or a list",
                        String::from_utf8_lossy(key),
                        article(other.kind()),
                        other.kind()
                    ),
                    body,
                ));
            }
        }
    }

    let interval =
        clamp_interval(dict.get_int(b"interval")).unwrap_or(super::DEFAULT_INTERVAL_SECS);
    Ok(AnnounceResponse {
        interval,
        min_interval: clamp_interval(dict.get_int(b"min interval")),
        peers: peers.list,
        complete: count(dict.get_int(b"complete")),
        incomplete: count(dict.get_int(b"incomplete")),
        warning: dict
            .get_bytes(b"warning message")
            .map(sanitize_message)
            .filter(|w| !w.is_empty()),
        tracker_id: dict
            .get_str(b"tracker id")
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    })
}

/// Parse a scrape response body (BEP 48): `files` maps each 20-byte info hash to its
/// swarm counts. Entries whose key is not 20 bytes or whose value is not a dictionary are
/// skipped.
///
/// # Errors
/// [`TrackerError::Failure`] for `failure reason`; [`TrackerError::InvalidResponse`] when
/// the body is not a bencoded dictionary or has no `files` dictionary.
pub fn parse_scrape_response(body: &[u8]) -> Result<Vec<(InfoHash, ScrapeStats)>, TrackerError> {
    let value = decode_body(body)?;
    let dict = top_dict(&value, body)?;
    if let Some(reason) = failure_reason(dict) {
        return Err(TrackerError::Failure(reason));
    }
    let files = dict.get_dict(b"files").ok_or_else(|| {
        invalid(
            "tracker scrape response has no `files` dictionary".to_owned(),
            body,
        )
    })?;
    let mut out = Vec::new();
    for (key, value) in &files.entries {
        let (Ok(hash), Some(stats)) = (<[u8; 20]>::try_from(*key), value.as_dict()) else {
            continue;
        };
        out.push((
            InfoHash(hash),
            ScrapeStats {
                complete: count(stats.get_int(b"complete")),
                downloaded: count(stats.get_int(b"downloaded")),
                incomplete: count(stats.get_int(b"incomplete")),
            },
        ));
    }
    Ok(out)
}

/// Decode a whole body, tolerating a UTF-8 BOM and ASCII whitespace around the value.
fn decode_body(body: &[u8]) -> Result<Value<'_>, TrackerError> {
    let trimmed = body
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(body)
        .trim_ascii();
    if trimmed.is_empty() {
        return Err(invalid(
            "tracker response is not valid bencode: the body is empty".to_owned(),
            body,
        ));
    }
    bencode::decode(trimmed)
        .map_err(|e| invalid(format!("tracker response is not valid bencode: {e}"), body))
}

fn top_dict<'v, 'a>(value: &'v Value<'a>, body: &[u8]) -> Result<&'v Dict<'a>, TrackerError> {
    value.as_dict().ok_or_else(|| {
        invalid(
            format!(
                "tracker response is {} {}, not a dictionary",
                article(value.kind()),
                value.kind()
            ),
            body,
        )
    })
}

/// The sanitised `failure reason`, when the key is present (whatever its type).
fn failure_reason(dict: &Dict<'_>) -> Option<String> {
    let value = dict.get(b"failure reason")?;
    Some(match value.as_bytes() {
        Some(text) => {
            let text = sanitize_message(text);
            if text.is_empty() {
                "(the tracker gave an empty reason)".to_owned()
            } else {
                text
            }
        }
        None => format!(
            "(the tracker's reason is {} {})",
            article(value.kind()),
            value.kind()
        ),
    })
}

/// The `failure reason` of a body, if it is a bencoded dictionary carrying one.
fn failure_in(body: &[u8]) -> Option<String> {
    let value = decode_body(body).ok()?;
    failure_reason(value.as_dict()?)
}

fn invalid(reason: String, body: &[u8]) -> TrackerError {
    TrackerError::InvalidResponse {
        reason,
        excerpt: excerpt(body),
    }
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// Non-positive or absent → `None`; otherwise clamped to the accepted interval range (s).
fn clamp_interval(v: Option<i64>) -> Option<u32> {
    let v = v.filter(|&v| v > 0)?;
    let clamped = v.clamp(i64::from(MIN_INTERVAL_SECS), i64::from(MAX_INTERVAL_SECS));
    u32::try_from(clamped).ok()
}

/// A swarm count: negative → `None`, beyond `u32` → `u32::MAX`.
fn count(v: Option<i64>) -> Option<u32> {
    let v = v.filter(|&v| v >= 0)?;
    Some(u32::try_from(v).unwrap_or(u32::MAX))
}

/// Peers in first-seen order, deduplicated and normalised.
#[derive(Default)]
struct PeerSet {
    list: Vec<SocketAddr>,
    seen: HashSet<SocketAddr>,
}

impl PeerSet {
    /// Add a normalised address unless it is unusable or already present.
    fn add(&mut self, addr: SocketAddr) {
        let addr = match addr {
            SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
                Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, v6.port())),
                None => addr,
            },
            SocketAddr::V4(_) => addr,
        };
        if addr.port() == 0 || addr.ip().is_unspecified() {
            return;
        }
        if self.seen.insert(addr) {
            self.list.push(addr);
        }
    }

    /// Compact entries of `entry_len` bytes (6: IPv4, 18: IPv6); a trailing partial entry
    /// is ignored.
    fn add_compact(&mut self, bytes: &[u8], entry_len: usize) {
        for entry in bytes.chunks_exact(entry_len) {
            if let Some(addr) = compact_entry(entry) {
                self.add(addr);
            }
        }
    }

    /// One item of a peer list: a dictionary with `ip` and `port` (BEP 3), or a single
    /// compact entry as a string. Anything else is skipped.
    fn add_item(&mut self, item: &Value<'_>) {
        match item {
            Value::Dict(d) => {
                if let Some(addr) = dict_peer(d) {
                    self.add(addr);
                }
            }
            Value::Bytes(b) if b.len() == COMPACT_V4_LEN || b.len() == COMPACT_V6_LEN => {
                if let Some(addr) = compact_entry(b) {
                    self.add(addr);
                }
            }
            _ => {}
        }
    }
}

/// A 6-byte (IPv4) or 18-byte (IPv6) compact entry: address then big-endian port.
fn compact_entry(entry: &[u8]) -> Option<SocketAddr> {
    let (ip, port) = entry.split_last_chunk::<2>()?;
    let port = u16::from_be_bytes(*port);
    if let Ok(v4) = <[u8; 4]>::try_from(ip) {
        Some(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(v4), port)))
    } else if let Ok(v6) = <[u8; 16]>::try_from(ip) {
        Some(SocketAddr::V6(SocketAddrV6::new(
            Ipv6Addr::from(v6),
            port,
            0,
            0,
        )))
    } else {
        None
    }
}

/// `{ip: "<IPv4 | IPv6 | [IPv6]>", port: 1..=65535}`; hostnames are skipped (we do not
/// resolve names handed out by a tracker). `port` may also be a decimal string.
fn dict_peer(d: &Dict<'_>) -> Option<SocketAddr> {
    let ip_text = std::str::from_utf8(d.get_bytes(b"ip")?).ok()?.trim();
    let ip_text = ip_text
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(ip_text);
    let ip: IpAddr = ip_text.parse().ok()?;
    let port = match d.get(b"port")? {
        Value::Int(p) => u16::try_from(*p).ok()?,
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse::<u16>().ok()?,
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The one policy of the session's HTTP clients (trackers, a .torrent fetched by URL):
/// `User-Agent: ratorrent/<version>`, the `connect` timeout (TCP + TLS handshake), the
/// `total` timeout (connecting through the last body byte), at most [`MAX_REDIRECTS`]
/// redirects, and the proxy from the environment (`HTTPS_PROXY`, `HTTP_PROXY`,
/// `NO_PROXY`), as reqwest reads it.
pub fn client_builder(connect: Duration, total: Duration) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(connect)
        .timeout(total)
        .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
}

/// An HTTP(S) tracker client: one `reqwest` client shared by every announce (connections
/// are kept alive and reused), sending `User-Agent: ratorrent/<version>`, following at most
/// [`MAX_REDIRECTS`] redirects, with a connect timeout, a total timeout (connect through
/// last body byte) and a body size cap. Cheap to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct HttpTracker {
    /// The client, or why it could not be built (then every request fails with
    /// [`TrackerError::Transport`] instead of panicking).
    client: Result<reqwest::Client, String>,
    connect_timeout: Duration,
    total_timeout: Duration,
    body_limit: usize,
}

impl Default for HttpTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpTracker {
    /// A client with [`DEFAULT_CONNECT_TIMEOUT`] (10 s), [`DEFAULT_TOTAL_TIMEOUT`] (30 s)
    /// and [`DEFAULT_BODY_LIMIT`] (2 MiB).
    pub fn new() -> Self {
        Self::with_timeouts(DEFAULT_CONNECT_TIMEOUT, DEFAULT_TOTAL_TIMEOUT)
    }

    /// A client with the given connect timeout and total timeout (from connecting until the
    /// whole body is read), and the default body limit.
    pub fn with_timeouts(connect: Duration, total: Duration) -> Self {
        let client = client_builder(connect, total)
            .build()
            .map_err(|e| error_chain(&e));
        HttpTracker {
            client,
            connect_timeout: connect,
            total_timeout: total,
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// The same client with another response body cap, in bytes.
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Announce to the tracker at `announce` (an `http://` or `https://` URL, possibly with
    /// a query such as a passkey) and parse its answer.
    ///
    /// # Errors
    /// - [`TrackerError::InvalidUrl`] / [`TrackerError::UnsupportedScheme`] (e.g. `udp://`)
    ///   before any network traffic.
    /// - [`TrackerError::Transport`] for DNS, connect, TLS or I/O failures and timeouts.
    /// - [`TrackerError::Failure`] when the body (with any HTTP status) carries a
    ///   `failure reason`.
    /// - [`TrackerError::Http`] for any other non-2xx status.
    /// - [`TrackerError::BodyTooLarge`] when a 2xx body exceeds the body limit.
    /// - [`TrackerError::InvalidResponse`]: see [`parse_announce_response`].
    pub async fn announce(
        &self,
        announce: &str,
        req: &AnnounceRequest,
    ) -> Result<AnnounceResponse, TrackerError> {
        check_url(announce)?;
        let body = self.get(&announce_url(announce, req)).await?;
        parse_announce_response(&body)
    }

    /// Scrape the tracker behind `announce` for `info_hashes` (BEP 48).
    ///
    /// # Errors
    /// As [`HttpTracker::announce`]; [`TrackerError::InvalidUrl`] also when the announce
    /// URL has no scrape counterpart (see [`scrape_url`]).
    pub async fn scrape(
        &self,
        announce: &str,
        info_hashes: &[InfoHash],
    ) -> Result<Vec<(InfoHash, ScrapeStats)>, TrackerError> {
        check_url(announce)?;
        let url = scrape_url(announce, info_hashes).ok_or_else(|| {
            TrackerError::InvalidUrl(
                "the announce URL's last path segment does not start with `announce`, so the tracker has no scrape URL (BEP 48)"
                    .to_owned(),
            )
        })?;
        let body = self.get(&url).await?;
        parse_scrape_response(&body)
    }

    /// GET `url` and return a 2xx body, mapping every other outcome to an error.
    async fn get(&self, url: &str) -> Result<Vec<u8>, TrackerError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| TrackerError::Transport(format!("HTTP client unavailable: {e}")))?;
        let exchange = async {
            let mut resp =
                match client.get(url).send().await {
                    Ok(resp) => resp,
                    // a kept-alive connection the tracker closed meanwhile (opentracker does
                    // after a while): the GET is idempotent, ask once more at once, on a new
                    // connection, instead of showing an error until the next retry
                    Err(e) if !e.is_timeout() && stale_connection(&e) => client
                        .get(url)
                        .send()
                        .await
                        .map_err(|e| self.transport(e))?,
                    Err(e) => return Err(self.transport(e)),
                };
            let status = resp.status();
            if status.is_success()
                && resp
                    .content_length()
                    .is_some_and(|len| len > self.body_limit as u64)
            {
                return Err(TrackerError::BodyTooLarge {
                    limit: self.body_limit,
                });
            }
            let mut body = Vec::new();
            let mut truncated = false;
            while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(e))? {
                let room = self.body_limit - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(chunk.get(..room).unwrap_or_default());
                    truncated = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            if !status.is_success() {
                return Err(match failure_in(&body) {
                    Some(reason) if !truncated => TrackerError::Failure(reason),
                    _ => TrackerError::Http {
                        status: status.as_u16(),
                        excerpt: super::error_page_excerpt(&body, status.as_u16()),
                    },
                });
            }
            if truncated {
                return Err(TrackerError::BodyTooLarge {
                    limit: self.body_limit,
                });
            }
            Ok(body)
        };
        match tokio::time::timeout(self.total_timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(self.total_timeout_error()),
        }
    }

    fn total_timeout_error(&self) -> TrackerError {
        TrackerError::Transport(format!(
            "no complete answer within {} s",
            self.total_timeout.as_secs_f64()
        ))
    }

    /// A transport error without the URL (it may carry a passkey).
    fn transport(&self, e: reqwest::Error) -> TrackerError {
        if e.is_timeout() {
            if e.is_connect() {
                return TrackerError::Transport(format!(
                    "connection timed out after {} s",
                    self.connect_timeout.as_secs_f64()
                ));
            }
            return self.total_timeout_error();
        }
        TrackerError::Transport(error_chain(&e.without_url()))
    }
}

/// Whether a request failed because the connection was closed or reset under it before
/// any answer came (hyper's "connection closed before message completed", `ECONNRESET`,
/// `EPIPE`, an early EOF): what a reused keep-alive connection the server had already
/// closed gives. Looks at `e` and its sources.
pub fn stale_connection(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind as K;
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
            )
        {
            return true;
        }
        if err
            .to_string()
            .contains("connection closed before message completed")
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// `e` and its sources joined by `": "`, skipping repeats.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Accept only absolute `http`/`https` URLs with a host. Error texts never repeat the URL.
fn check_url(announce: &str) -> Result<(), TrackerError> {
    use crate::net::url::{HttpUrlError, check_http_url};
    check_http_url(announce).map_err(|e| match e {
        HttpUrlError::Invalid(why) => TrackerError::InvalidUrl(why),
        HttpUrlError::Scheme(s) => TrackerError::UnsupportedScheme(s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::PeerId;

    fn request() -> AnnounceRequest {
        AnnounceRequest {
            info_hash: InfoHash([0xAB; 20]),
            peer_id: PeerId(*b"-RT0100-abcdefghijkl"),
            port: 6881,
            uploaded: 1,
            downloaded: 2,
            left: 3,
            event: None,
            numwant: None,
            key: 0x00C0FFEE,
            tracker_id: None,
        }
    }

    #[derive(Debug)]
    struct Wrap(Box<dyn std::error::Error + Send + Sync>);
    impl std::fmt::Display for Wrap {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error sending request")
        }
    }
    impl std::error::Error for Wrap {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(self.0.as_ref())
        }
    }

    #[test]
    fn a_closed_or_reset_connection_is_stale_other_failures_are_not() {
        use std::io::{Error, ErrorKind};
        let reset = Wrap(Box::new(Error::from(ErrorKind::ConnectionReset)));
        assert!(stale_connection(&reset), "ECONNRESET under a wrapper");
        assert!(stale_connection(&Error::from(ErrorKind::BrokenPipe)));
        let closed = Wrap(Box::new(Error::other(
            "connection closed before message completed",
        )));
        assert!(stale_connection(&closed), "hyper's incomplete message");
        assert!(!stale_connection(&Error::from(
            ErrorKind::ConnectionRefused
        )));
        assert!(!stale_connection(&Wrap(Box::new(Error::from(
            ErrorKind::TimedOut
        )))));
        assert!(!stale_connection(&TrackerError::Transport(
            "dns error".into()
        )));
    }

    #[test]
    fn separator_follows_existing_query() {
        let r = request();
        assert!(
            announce_url("http://t.example/announce", &r)
                .starts_with("http://t.example/announce?info_hash=")
        );
        assert!(
            announce_url("http://t.example/announce?pk=abc", &r)
                .starts_with("http://t.example/announce?pk=abc&info_hash=")
        );
        assert!(
            announce_url("http://t.example/a?pk=abc&", &r)
                .starts_with("http://t.example/a?pk=abc&info_hash=")
        );
        assert!(
            announce_url("http://t.example/a?", &r).starts_with("http://t.example/a?info_hash=")
        );
        let with_fragment = announce_url("http://t.example/a?pk=1#frag", &r);
        assert!(with_fragment.starts_with("http://t.example/a?pk=1&info_hash="));
        assert!(!with_fragment.contains('#'));
        assert!(
            announce_url(" http://t.example/a\n", &r).starts_with("http://t.example/a?info_hash=")
        );
    }

    #[test]
    fn scrape_url_rules() {
        let h = [InfoHash([0x41; 20])];
        assert_eq!(
            scrape_url("http://t.example/announce", &h).as_deref(),
            Some("http://t.example/scrape?info_hash=AAAAAAAAAAAAAAAAAAAA")
        );
        assert_eq!(
            scrape_url("http://t.example/x/announce.php?pk=1", &h).as_deref(),
            Some("http://t.example/x/scrape.php?pk=1&info_hash=AAAAAAAAAAAAAAAAAAAA")
        );
        assert_eq!(scrape_url("http://t.example/a", &h), None);
        assert_eq!(scrape_url("http://t.example/announce/x", &h), None);
        assert_eq!(scrape_url("http://announce.example", &h), None);
        assert_eq!(scrape_url("announce", &h), None);
        assert_eq!(
            scrape_url("http://t.example/announce", &[]).as_deref(),
            Some("http://t.example/scrape")
        );
    }

    #[test]
    fn compact_entry_shapes() {
        assert_eq!(
            compact_entry(&[127, 0, 0, 1, 0x1a, 0xe1]),
            Some("127.0.0.1:6881".parse().unwrap())
        );
        assert_eq!(compact_entry(&[1, 2, 3]), None);
        assert_eq!(compact_entry(&[]), None);
    }

    #[test]
    fn url_scheme_checks() {
        assert_eq!(
            check_url("udp://t.example:1337/announce"),
            Err(TrackerError::UnsupportedScheme("udp".into()))
        );
        assert!(matches!(
            check_url("not a url"),
            Err(TrackerError::InvalidUrl(_))
        ));
        assert!(check_url("https://t.example/announce?pk=1").is_ok());
    }
}
