//! A .torrent file fetched by `http://` or `https://` URL, as qBittorrent's and
//! Transmission's "add from URL" do (private trackers' download links).
//!
//! One GET with the session's HTTP client policy ([`crate::tracker::http::client_builder`]:
//! user agent, timeouts, proxy from the environment), redirects followed here, at most
//! [`MAX_REDIRECTS`] of them, so that a redirect to a `magnet:` link (what some trackers
//! answer) comes back as [`Fetched::Magnet`] instead of an error. The body is bounded by
//! the .torrent reader's own cap ([`MAX_TORRENT_FILE_BYTES`]) and is not judged by its
//! `Content-Type`: the caller parses it as a .torrent. No error text repeats the URL (it may
//! carry a passkey); the caller names it masked.

use std::time::Duration;

use crate::metainfo::MAX_TORRENT_FILE_BYTES;
use crate::metainfo::magnet::is_magnet;
use crate::net::url::HttpUrlError;
use crate::tracker::http::{DEFAULT_CONNECT_TIMEOUT, MAX_REDIRECTS, client_builder, error_chain};

/// What a URL led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// The body of a 2xx answer, at most [`MAX_TORRENT_FILE_BYTES`] bytes (not yet parsed).
    Torrent(Vec<u8>),
    /// A `magnet:` link: the URL was one, or a redirect led to one.
    Magnet(String),
}

/// Why nothing usable came back. The texts never contain the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// Not a URL at all.
    #[error("not a valid URL: {0}")]
    InvalidUrl(String),
    /// A scheme other than `http`, `https` (or `magnet`), e.g. `file` or `ftp`.
    #[error("{}", crate::net::unfetchable_scheme(.0))]
    Scheme(String),
    /// DNS, connection refused, TLS or I/O failures.
    #[error("fetching failed: {0}")]
    Transport(String),
    /// The server answered with a status other than 2xx (or a redirect without a usable
    /// `Location`).
    #[error("the server answered HTTP {status}{}", reason.as_ref().map(|r| format!(" {r}")).unwrap_or_default())]
    Status {
        /// The HTTP status code.
        status: u16,
        /// Its canonical reason phrase, e.g. `Not Found`.
        reason: Option<String>,
    },
    /// More than [`MAX_REDIRECTS`] redirects.
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    /// The body is larger than the .torrent reader's cap.
    #[error("the file is larger than {limit} bytes: not a .torrent file this client will load")]
    TooLarge {
        /// The cap, bytes.
        limit: u64,
    },
    /// No complete answer within the total timeout.
    #[error("no complete answer within {0} s")]
    Timeout(u64),
}

/// Check that `url` is one this module fetches: an absolute `http`/`https` URL with a host,
/// or a `magnet:` link (taken as it is).
///
/// # Errors
/// [`FetchError::InvalidUrl`], [`FetchError::Scheme`].
pub fn check_url(url: &str) -> Result<(), FetchError> {
    let url = url.trim();
    if is_magnet(url) {
        return Ok(());
    }
    crate::net::url::check_http_url(url).map_err(|e| match e {
        HttpUrlError::Invalid(why) => FetchError::InvalidUrl(why),
        HttpUrlError::Scheme(s) => FetchError::Scheme(s),
    })
}

/// GET the .torrent file at `url` within `timeout` (connecting through the last body byte,
/// redirects included).
///
/// # Errors
/// Every [`FetchError`]: the URL is not `http`/`https` (a `magnet:` link is handed back as
/// [`Fetched::Magnet`] at once), DNS/connect/TLS/I/O failures, a non-2xx status, too many
/// redirects, a body over [`MAX_TORRENT_FILE_BYTES`], the timeout.
pub async fn fetch_torrent(url: &str, timeout: Duration) -> Result<Fetched, FetchError> {
    check_url(url)?;
    let url = url.trim();
    if is_magnet(url) {
        return Ok(Fetched::Magnet(url.to_owned()));
    }
    let client = client_builder(DEFAULT_CONNECT_TIMEOUT.min(timeout), timeout)
        // followed below, so that a redirect to a magnet link can be taken as one
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| {
            FetchError::Transport(format!("HTTP client unavailable: {}", error_chain(&e)))
        })?;
    let secs = timeout.as_secs().max(1);
    match tokio::time::timeout(timeout, get(&client, url)).await {
        // reqwest's own total timeout says the same as ours
        Ok(Err(FetchError::Transport(t))) if t == TIMED_OUT => Err(FetchError::Timeout(secs)),
        Ok(result) => result,
        Err(_) => Err(FetchError::Timeout(secs)),
    }
}

/// The marker [`transport`] leaves for reqwest's own timeouts.
const TIMED_OUT: &str = "timed out";

/// The GET and its redirects.
async fn get(client: &reqwest::Client, url: &str) -> Result<Fetched, FetchError> {
    let mut url = reqwest::Url::parse(url).map_err(|e| FetchError::InvalidUrl(e.to_string()))?;
    let mut redirects = 0;
    let mut resp = loop {
        let resp = client.get(url.clone()).send().await.map_err(transport)?;
        let status = resp.status();
        if !status.is_redirection() {
            break resp;
        }
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        let Some(location) = location.filter(|l| !l.is_empty()) else {
            return Err(status_error(status));
        };
        if is_magnet(location) {
            return Ok(Fetched::Magnet(location.to_owned()));
        }
        if redirects == MAX_REDIRECTS {
            return Err(FetchError::TooManyRedirects);
        }
        redirects += 1;
        url = url
            .join(location)
            .map_err(|e| FetchError::InvalidUrl(format!("a redirect's Location: {e}")))?;
        check_url(url.as_str())?;
    };
    let status = resp.status();
    if !status.is_success() {
        return Err(status_error(status));
    }
    let too_large = FetchError::TooLarge {
        limit: MAX_TORRENT_FILE_BYTES,
    };
    if resp
        .content_length()
        .is_some_and(|len| len > MAX_TORRENT_FILE_BYTES)
    {
        return Err(too_large);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(transport)? {
        if (body.len() + chunk.len()) as u64 > MAX_TORRENT_FILE_BYTES {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched::Torrent(body))
}

fn status_error(status: reqwest::StatusCode) -> FetchError {
    FetchError::Status {
        status: status.as_u16(),
        reason: status.canonical_reason().map(str::to_owned),
    }
}

/// A transport error without the URL (it may carry a passkey).
fn transport(e: reqwest::Error) -> FetchError {
    if e.is_timeout() {
        return FetchError::Transport(TIMED_OUT.to_owned());
    }
    FetchError::Transport(error_chain(&e.without_url()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_https_and_magnet_are_accepted() {
        assert_eq!(check_url("http://127.0.0.1:8/a.torrent"), Ok(()));
        assert_eq!(check_url("https://example.org/dl?id=1&passkey=x"), Ok(()));
        assert_eq!(check_url("magnet:?xt=urn:btih:00"), Ok(()));
        assert_eq!(
            check_url("file:///tmp/a.torrent"),
            Err(FetchError::Scheme("file".to_owned()))
        );
        assert_eq!(
            check_url("ftp://example.org/a.torrent")
                .unwrap_err()
                .to_string(),
            "only http:// and https:// URLs can be fetched, not ftp://"
        );
        assert!(matches!(
            check_url("http://"),
            Err(FetchError::InvalidUrl(_))
        ));
    }

    #[tokio::test]
    async fn a_magnet_link_is_handed_back_and_a_file_url_refused_without_traffic() {
        let link = "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            fetch_torrent(link, Duration::from_secs(1)).await,
            Ok(Fetched::Magnet(link.to_owned()))
        );
        assert_eq!(
            fetch_torrent("file:///etc/passwd", Duration::from_secs(1)).await,
            Err(FetchError::Scheme("file".to_owned()))
        );
    }

    /// A server on 127.0.0.1 that answers its connections, in order, with `answers`
    /// (written whole, then the connection is closed); the URL of `path` on it.
    async fn serve(answers: Vec<Vec<u8>>, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            for answer in answers {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = conn.write_all(&answer).await;
                let _ = conn.shutdown().await;
            }
        });
        format!("http://127.0.0.1:{port}{path}")
    }

    fn answer(head: &str, body: &[u8]) -> Vec<u8> {
        let mut a = format!("{head}\r\nConnection: close\r\n\r\n").into_bytes();
        a.extend_from_slice(body);
        a
    }

    #[tokio::test]
    async fn a_body_comes_back_whatever_its_content_type() {
        let body = b"d4:infod4:name1:xee".to_vec();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}",
            body.len()
        );
        let url = serve(vec![answer(&head, &body)], "/a.torrent").await;
        assert_eq!(
            fetch_torrent(&url, Duration::from_secs(5)).await,
            Ok(Fetched::Torrent(body))
        );
    }

    #[tokio::test]
    async fn redirects_are_followed_and_one_to_a_magnet_link_is_taken_as_it() {
        let link = "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=x";
        let url = serve(
            vec![
                answer(
                    "HTTP/1.1 301 Moved\r\nLocation: /b?passkey=1\r\nContent-Length: 0",
                    b"",
                ),
                answer(
                    &format!("HTTP/1.1 302 Found\r\nLocation: {link}\r\nContent-Length: 0"),
                    b"",
                ),
            ],
            "/a",
        )
        .await;
        assert_eq!(
            fetch_torrent(&url, Duration::from_secs(5)).await,
            Ok(Fetched::Magnet(link.to_owned()))
        );
        let url = serve(
            vec![answer(
                "HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0",
                b"",
            )],
            "/a",
        )
        .await;
        assert_eq!(
            fetch_torrent(&url, Duration::from_secs(5)).await,
            Err(FetchError::Scheme("file".to_owned()))
        );
        let loops = (0..=MAX_REDIRECTS)
            .map(|_| {
                answer(
                    "HTTP/1.1 302 Found\r\nLocation: /a\r\nContent-Length: 0",
                    b"",
                )
            })
            .collect();
        let url = serve(loops, "/a").await;
        assert_eq!(
            fetch_torrent(&url, Duration::from_secs(5)).await,
            Err(FetchError::TooManyRedirects)
        );
    }

    #[tokio::test]
    async fn a_status_a_body_over_the_cap_and_a_silent_server_are_refused() {
        let url = serve(
            vec![answer(
                "HTTP/1.1 404 Not Found\r\nContent-Length: 3",
                b"no!",
            )],
            "/a",
        )
        .await;
        assert_eq!(
            fetch_torrent(&url, Duration::from_secs(5)).await,
            Err(FetchError::Status {
                status: 404,
                reason: Some("Not Found".to_owned())
            })
        );
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}",
            MAX_TORRENT_FILE_BYTES + 1
        );
        let url = serve(vec![answer(&head, b"d")], "/a").await;
        assert_eq!(
            fetch_torrent(&url, Duration::from_secs(5)).await,
            Err(FetchError::TooLarge {
                limit: MAX_TORRENT_FILE_BYTES
            })
        );
        // accepts, never answers
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/a", listener.local_addr().unwrap());
        let held = tokio::spawn(async move { listener.accept().await });
        let started = std::time::Instant::now();
        assert_eq!(
            fetch_torrent(&url, Duration::from_secs(1)).await,
            Err(FetchError::Timeout(1))
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        held.abort();
        // nothing listens
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let refused = fetch_torrent(
            &format!("http://127.0.0.1:{port}/a"),
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert!(matches!(refused, FetchError::Transport(_)), "{refused:?}");
    }

    #[test]
    fn errors_read_as_sentences() {
        let e = FetchError::Status {
            status: 404,
            reason: Some("Not Found".to_owned()),
        };
        assert_eq!(e.to_string(), "the server answered HTTP 404 Not Found");
        assert_eq!(
            FetchError::Timeout(30).to_string(),
            "no complete answer within 30 s"
        );
        assert!(
            FetchError::TooLarge { limit: 10 }
                .to_string()
                .starts_with("the file is larger than 10 bytes")
        );
    }
}
