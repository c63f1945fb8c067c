//! One Range GET of one file on a web seed (BEP 19), checked before a byte is used.
//!
//! The request asks for `bytes=AT-END` of the file. The answer is taken only when it is
//! exactly that range:
//! - `206 Partial Content` with `Content-Range: bytes AT-END/TOTAL` naming the same range
//!   (and `TOTAL`, when given, the file's length in the torrent), and a `Content-Length`,
//!   when given, of the range's length;
//! - `200 OK` (a server that ignores `Range`) only when the whole file is the range asked
//!   for (`AT` = 0 and the range's length is the file's) and its length says so;
//! - anything else is refused with a [`WebSeedError`] before the body is read: another
//!   status (`404`/`410`: [`WebSeedError::is_file_missing`]), a `Content-Range` of other
//!   bytes, a length that is not the range's (a huge `Content-Length` included).
//!
//! The body ([`Body`]) hands out at most the range's length: a body that goes on past it
//! (or never ends) is refused at its first extra byte ([`WebSeedError::Oversized`]), one
//! that ends early is refused when it ends ([`WebSeedError::Short`]). A server that sends
//! less than a minimum rate over a window (a trickle, a silent socket, a slow first byte)
//! is refused ([`WebSeedError::Slow`]); the time the caller spends paused for its own rate
//! limit does not count ([`Body::pause`]). Redirects are followed by the client, at most
//! [`MAX_REDIRECTS`]; beyond that the request fails ([`WebSeedError::Redirects`]).
//! No error text repeats the URL.

use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use tokio::time::Instant;

pub use crate::tracker::http::MAX_REDIRECTS;
use crate::tracker::http::error_chain;

/// Why a web seed's answer was not used. The texts never contain the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebSeedError {
    /// DNS, connection refused or reset, TLS, I/O.
    #[error("{0}")]
    Transport(String),
    /// More than [`MAX_REDIRECTS`] redirects.
    #[error("more than {MAX_REDIRECTS} redirects")]
    Redirects,
    /// A status other than 206 (or an acceptable 200).
    #[error("HTTP {status}{}", reason.as_ref().map(|r| format!(" {r}")).unwrap_or_default())]
    Status {
        /// The status code.
        status: u16,
        /// Its canonical reason, e.g. `Not Found`.
        reason: Option<String>,
    },
    /// `200 OK` with a body that is not exactly the range asked for (the server ignored
    /// `Range`).
    #[error("the server ignored the Range request (200 with {} instead of {expected} bytes at {at})", length.map_or("a body of unknown length".to_owned(), |l| format!("{l} bytes")))]
    NotPartial {
        /// Where the range starts in the file, bytes.
        at: u64,
        /// The range's length, bytes.
        expected: u64,
        /// The body's `Content-Length`, if given.
        length: Option<u64>,
    },
    /// A `206` whose `Content-Range` is missing, unreadable or names other bytes.
    #[error("wrong Content-Range: asked for bytes {at}-{end}/{total}, got {}", got.as_deref().unwrap_or("none"))]
    WrongRange {
        /// First byte asked for.
        at: u64,
        /// Last byte asked for.
        end: u64,
        /// The file's length in the torrent, bytes.
        total: u64,
        /// The header as sent (cut to 80 characters).
        got: Option<String>,
    },
    /// A `Content-Length` that is not the range's length.
    #[error("wrong Content-Length: {got} bytes for a range of {expected}")]
    WrongLength {
        /// The range's length, bytes.
        expected: u64,
        /// The header's value.
        got: u64,
    },
    /// The body ended before the range's length.
    #[error("short body: {got} of {expected} bytes")]
    Short {
        /// The range's length, bytes.
        expected: u64,
        /// Bytes received.
        got: u64,
    },
    /// The body went on past the range's length.
    #[error("the body is longer than the {expected} bytes asked for")]
    Oversized {
        /// The range's length, bytes.
        expected: u64,
    },
    /// Less than the minimum rate over the window (a trickle, or nothing at all).
    #[error("too slow: {got} bytes in {secs} s (at least {min_rate} bytes/s wanted)")]
    Slow {
        /// Bytes received in the window.
        got: u64,
        /// The window, seconds.
        secs: u64,
        /// The minimum rate, bytes/s.
        min_rate: u64,
    },
}

impl WebSeedError {
    /// The server says the file is not there (`404 Not Found`, `410 Gone`): the other files
    /// of the server may be.
    pub fn is_file_missing(&self) -> bool {
        matches!(
            self,
            WebSeedError::Status {
                status: 404 | 410,
                ..
            }
        )
    }
}

/// What a request must keep up: at least `min_rate` bytes/s over each `window` (0 = no
/// minimum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinRate {
    /// Bytes/s.
    pub min_rate: u64,
    /// The span the rate is measured over.
    pub window: Duration,
}

impl MinRate {
    fn need(&self) -> u64 {
        self.min_rate
            .saturating_mul(self.window.as_secs().max(1))
            .max(1)
    }

    fn slow(&self, got: u64) -> WebSeedError {
        WebSeedError::Slow {
            got,
            secs: self.window.as_secs(),
            min_rate: self.min_rate,
        }
    }
}

/// The body of a checked answer: exactly the range's bytes, in order.
pub struct Body {
    resp: reqwest::Response,
    expected: u64,
    got: u64,
    rate: MinRate,
    window_end: Instant,
    window_bytes: u64,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("expected", &self.expected)
            .field("got", &self.got)
            .finish_non_exhaustive()
    }
}

/// A transport error without the URL (it may carry a passkey).
fn transport(e: reqwest::Error) -> WebSeedError {
    if e.is_redirect() {
        return WebSeedError::Redirects;
    }
    WebSeedError::Transport(error_chain(&e.without_url()))
}

/// GET bytes `at .. at + len` (`len` > 0) of the file at `url`, whose length in the torrent
/// is `file_len` bytes, with `client`; checked as the module says. Waiting for the answer
/// counts against `rate` like the body does.
///
/// # Errors
/// Every [`WebSeedError`] but [`WebSeedError::Short`] and [`WebSeedError::Oversized`]
/// (those come from [`Body::chunk`]).
pub async fn get_range(
    client: &reqwest::Client,
    url: &reqwest::Url,
    at: u64,
    len: u64,
    file_len: u64,
    rate: MinRate,
) -> Result<Body, WebSeedError> {
    let end = at + len.max(1) - 1;
    let send = client
        .get(url.clone())
        .header(RANGE, format!("bytes={at}-{end}"))
        .send();
    let resp = if rate.min_rate > 0 {
        match tokio::time::timeout(rate.window, send).await {
            Ok(r) => r.map_err(transport)?,
            Err(_) => return Err(rate.slow(0)),
        }
    } else {
        send.await.map_err(transport)?
    };
    check(&resp, at, len, file_len)?;
    Ok(Body {
        resp,
        expected: len,
        got: 0,
        rate,
        window_end: Instant::now() + rate.window,
        window_bytes: 0,
    })
}

/// Whether `resp` is the range `at..at+len` of a file of `file_len` bytes (see the module).
fn check(resp: &reqwest::Response, at: u64, len: u64, file_len: u64) -> Result<(), WebSeedError> {
    let h = resp.headers();
    check_answer(
        resp.status().as_u16(),
        h.get(CONTENT_RANGE).map(|v| v.as_bytes()),
        h.get(CONTENT_LENGTH).map(|v| v.as_bytes()),
        at,
        len,
        file_len,
    )
}

/// Whether an answer of `status` with these `Content-Range` and `Content-Length` header
/// values (raw bytes, as sent) is the range `at..at+len` (`len` > 0) of a file of
/// `file_len` bytes: a `206` naming exactly that range (its total, when given, the file's
/// length) with a `Content-Length`, when given, of `len`; or a `200` whose body is the
/// whole file and that file the range. Pure: the one place an answer's head is judged.
///
/// # Errors
/// [`WebSeedError::Status`], [`WebSeedError::NotPartial`], [`WebSeedError::WrongRange`]
/// (the header cut to 80 characters), [`WebSeedError::WrongLength`].
pub fn check_answer(
    status: u16,
    content_range: Option<&[u8]>,
    content_length: Option<&[u8]>,
    at: u64,
    len: u64,
    file_len: u64,
) -> Result<(), WebSeedError> {
    let length = content_length
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match status {
        206 => {
            let header = content_range.map(|v| String::from_utf8_lossy(v).into_owned());
            let end = at.saturating_add(len.max(1) - 1);
            let got = header.as_deref().and_then(parse_content_range);
            if got != Some((at, end, Some(file_len))) && got != Some((at, end, None)) {
                return Err(WebSeedError::WrongRange {
                    at,
                    end,
                    total: file_len,
                    got: header.map(|h| h.chars().take(80).collect()),
                });
            }
            match length {
                Some(got) if got != len => Err(WebSeedError::WrongLength { expected: len, got }),
                _ => Ok(()),
            }
        }
        200 => {
            if at == 0 && len == file_len && length == Some(len) {
                Ok(())
            } else {
                Err(WebSeedError::NotPartial {
                    at,
                    expected: len,
                    length,
                })
            }
        }
        s => {
            let code = StatusCode::from_u16(s).ok();
            Err(WebSeedError::Status {
                status: s,
                reason: code.and_then(|c| c.canonical_reason()).map(str::to_owned),
            })
        }
    }
}

/// `bytes FIRST-LAST/TOTAL` (RFC 9110 §14.4; `TOTAL` may be `*`): `(first, last, total)`.
fn parse_content_range(h: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = h.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.trim().split_once('-')?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    Some((first.trim().parse().ok()?, last.trim().parse().ok()?, total))
}

impl Body {
    /// The next piece of the body (in order; `None` once the whole range has come).
    ///
    /// # Errors
    /// [`WebSeedError::Short`] when the body ends early, [`WebSeedError::Oversized`] when it
    /// goes on past the range, [`WebSeedError::Slow`] under the minimum rate,
    /// [`WebSeedError::Transport`] on a broken connection.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, WebSeedError> {
        loop {
            let next = if self.rate.min_rate > 0 {
                match tokio::time::timeout_at(self.window_end, self.resp.chunk()).await {
                    Ok(r) => r,
                    Err(_) => {
                        self.end_window()?;
                        continue;
                    }
                }
            } else {
                self.resp.chunk().await
            };
            let chunk = next.map_err(transport)?;
            let Some(chunk) = chunk else {
                if self.got < self.expected {
                    return Err(WebSeedError::Short {
                        expected: self.expected,
                        got: self.got,
                    });
                }
                return Ok(None);
            };
            if chunk.is_empty() {
                continue;
            }
            if chunk.len() as u64 > self.expected - self.got {
                // not one byte of it is used: the server sends what was not asked for
                return Err(WebSeedError::Oversized {
                    expected: self.expected,
                });
            }
            self.got += chunk.len() as u64;
            self.window_bytes += chunk.len() as u64;
            if self.rate.min_rate > 0 && Instant::now() >= self.window_end {
                self.end_window()?;
            }
            return Ok(Some(chunk));
        }
    }

    /// Bytes of the range received so far.
    pub fn received(&self) -> u64 {
        self.got
    }

    /// Whether the whole range has come (the next [`Body::chunk`] says whether the body
    /// ends there).
    pub fn is_complete(&self) -> bool {
        self.got >= self.expected
    }

    /// Sleep `d` (the caller's own rate limit); the minimum rate's window moves on by as
    /// much.
    pub async fn pause(&mut self, d: Duration) {
        tokio::time::sleep(d).await;
        self.window_end += d;
    }

    /// The window is over: enough bytes came in it (a new one starts), or the server is
    /// too slow.
    fn end_window(&mut self) -> Result<(), WebSeedError> {
        if self.window_bytes < self.rate.need() {
            return Err(self.rate.slow(self.window_bytes));
        }
        self.window_bytes = 0;
        self.window_end = Instant::now() + self.rate.window;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
