//! Tracker URLs fit to show: the announce URL of a private tracker carries the user's
//! passkey (in a path segment or the query), which must never reach a log line, the screen or
//! `info`'s output; and telling a URL typed by the user from a file name.

/// Whether `text` looks like a URL (`scheme://…`, the scheme a letter then letters, digits,
/// `+`, `-` or `.`), whatever the scheme: front ends give such a text to the engine as
/// `AddSource::Url`, which refuses the schemes it cannot fetch, rather than
/// reading it as a file name.
pub fn is_url(text: &str) -> bool {
    url_scheme(text).is_some()
}

/// The scheme of a text that [`is_url`], as written (`HTTP`, `file`); `None` for any other
/// text.
pub fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.trim().split_once("://")?;
    let mut bytes = scheme.bytes();
    let ok = bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    ok.then_some(scheme)
}

/// Whether a URL with this scheme can be fetched (added by URL): `http` or `https`, any
/// case.
pub fn is_fetchable_scheme(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
}

/// Why a URL of another scheme is refused, e.g. `only http:// and https:// URLs can be
/// fetched, not file://`.
pub fn unfetchable_scheme(scheme: &str) -> String {
    format!("only http:// and https:// URLs can be fetched, not {scheme}://")
}

/// Why a URL cannot be used for HTTP (see [`check_http_url`]). Texts never repeat the URL
/// (it may carry a passkey).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpUrlError {
    /// Not an absolute URL, or one without a host: the parser's reason.
    Invalid(String),
    /// A scheme other than `http`/`https` (as written, lower-cased by the parser).
    Scheme(String),
}

/// Accept only absolute `http`/`https` URLs with a host: the one check of HTTP trackers'
/// announce URLs and of .torrent URLs added by the user.
///
/// # Errors
/// [`HttpUrlError::Invalid`] (unparsable, no host), [`HttpUrlError::Scheme`].
pub fn check_http_url(text: &str) -> Result<(), HttpUrlError> {
    let url = reqwest::Url::parse(text).map_err(|e| HttpUrlError::Invalid(e.to_string()))?;
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(HttpUrlError::Scheme(other.to_owned())),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(HttpUrlError::Invalid("the URL has no host".to_owned()));
    }
    Ok(())
}

/// Accept a tracker announce URL given by the user (a tracker edit): absolute, `http`,
/// `https` or `udp` (BEP 3, BEP 15), with a host, no whitespace; `udp` needs a port.
///
/// # Errors
/// Why not, in a few words that never repeat the URL (it may carry a passkey), e.g.
/// `only http://, https:// and udp:// trackers are supported, not ftp://`.
pub fn check_tracker_url(text: &str) -> Result<(), String> {
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        return Err("a tracker URL is one word without spaces".to_owned());
    }
    let url = reqwest::Url::parse(text).map_err(|e| format!("not a URL ({e})"))?;
    let scheme = url.scheme();
    if !matches!(scheme, "http" | "https" | "udp") {
        return Err(format!(
            "only http://, https:// and udp:// trackers are supported, not {scheme}://"
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host".to_owned());
    }
    if scheme == "udp" && url.port().is_none() {
        return Err("a udp:// tracker needs a port".to_owned());
    }
    Ok(())
}

/// `scheme://host:port` of a URL, without path or query (which may hold a passkey).
pub fn host_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?']).next().unwrap_or("");
    if scheme.is_empty() {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

/// An announce URL fit to show: query values and path segments that look like keys (8 or
/// more characters, letters and digits only, not `announce...`) replaced by `***`, e.g.
/// `https://t.example/0123abcd4567ef89/announce?pk=s3cr3t` →
/// `https://t.example/***/announce?pk=***`.
pub fn mask_passkey(url: &str) -> String {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut parts = before_query.split('/');
    let host = parts.next().unwrap_or("");
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(scheme);
        out.push_str("://");
    }
    out.push_str(host);
    for seg in parts {
        out.push('/');
        let keyish = seg.len() >= 8
            && seg.bytes().all(|b| b.is_ascii_alphanumeric())
            && !seg.to_ascii_lowercase().starts_with("announce")
            && !seg.to_ascii_lowercase().starts_with("scrape");
        out.push_str(if keyish { "***" } else { seg });
    }
    if !query.is_empty() {
        out.push('?');
        let masked: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) => format!("{k}=***"),
                None => "***".to_string(),
            })
            .collect();
        out.push_str(&masked.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracker_urls_are_http_https_or_udp_with_a_host() {
        assert_eq!(
            check_tracker_url("http://127.0.0.1:6969/announce?pk=x"),
            Ok(())
        );
        assert_eq!(check_tracker_url("HTTPS://t.example/a/announce"), Ok(()));
        assert_eq!(check_tracker_url("udp://t.example:1337/announce"), Ok(()));
        let e = check_tracker_url("ftp://t.example/announce?pk=s3cr3tkey").unwrap_err();
        assert!(e.contains("not ftp://"), "{e}");
        assert!(
            !e.contains("s3cr3t"),
            "the reason never repeats the URL: {e}"
        );
        assert!(
            check_tracker_url("udp://t.example/announce").is_err(),
            "no port"
        );
        assert!(check_tracker_url("t.example/announce").is_err());
        assert!(check_tracker_url("http://t.example/a b").is_err());
        assert!(check_tracker_url("").is_err());
    }

    #[test]
    fn only_absolute_http_urls_with_a_host_pass() {
        assert_eq!(check_http_url("http://127.0.0.1:6969/announce"), Ok(()));
        assert_eq!(check_http_url("HTTPS://tracker.example/a?x=1"), Ok(()));
        assert_eq!(
            check_http_url("udp://tracker.example:80"),
            Err(HttpUrlError::Scheme("udp".into()))
        );
        assert_eq!(
            check_http_url("file:///etc/passwd"),
            Err(HttpUrlError::Scheme("file".into()))
        );
        assert!(matches!(
            check_http_url("tracker/announce"),
            Err(HttpUrlError::Invalid(_))
        ));
        assert!(matches!(
            check_http_url("http://"),
            Err(HttpUrlError::Invalid(_))
        ));
    }

    #[test]
    fn urls_are_told_from_paths_by_their_scheme() {
        for url in [
            "http://example.org/a.torrent",
            "HTTPS://example.org/a.torrent",
            " file:///tmp/a.torrent ",
            "ftp://example.org/a.torrent",
            "svn+ssh://host/x",
        ] {
            assert!(is_url(url), "{url}");
        }
        assert_eq!(url_scheme(" HTTPS://x/a"), Some("HTTPS"));
        assert!(is_fetchable_scheme("HTTPS") && is_fetchable_scheme("http"));
        assert!(!is_fetchable_scheme("file") && !is_fetchable_scheme("magnet"));
        assert_eq!(
            unfetchable_scheme("file"),
            "only http:// and https:// URLs can be fetched, not file://"
        );
        for path in [
            "a.torrent",
            "/tmp/http://x",
            "./x://y",
            "://x",
            "1http://x",
            "magnet:?xt=urn:btih:00",
            "C:\\x.torrent",
        ] {
            assert!(!is_url(path), "{path}");
        }
    }

    #[test]
    fn host_hides_passkeys() {
        assert_eq!(
            host_of("http://t.example:80/abcdef/announce?pk=1"),
            "http://t.example:80"
        );
        assert_eq!(host_of("udp://t.example:6969"), "udp://t.example:6969");
        assert_eq!(host_of("weird"), "weird");
    }

    #[test]
    fn passkeys_are_masked() {
        assert_eq!(
            mask_passkey("https://t.example/0123abcd4567ef89/announce?pk=s3cr3t&x"),
            "https://t.example/***/announce?pk=***&***"
        );
        assert_eq!(
            mask_passkey("http://t.example:6969/announce"),
            "http://t.example:6969/announce"
        );
        assert_eq!(mask_passkey("udp://t.example:1337"), "udp://t.example:1337");
    }
}
