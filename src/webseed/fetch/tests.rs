use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How the test server answers one connection.
enum Answer {
    /// These bytes, then close.
    Whole(Vec<u8>),
    /// This head, then one body byte a second, forever.
    Trickle(Vec<u8>),
    /// This head (chunked), then 64 KiB chunks, forever.
    Endless(Vec<u8>),
}

/// A server on 127.0.0.1 answering its connections in order; the requests it read go to
/// the returned list.
async fn serve(
    answers: Vec<Answer>,
) -> (reqwest::Url, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
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
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&request).into_owned());
            tokio::spawn(async move {
                match answer {
                    Answer::Whole(a) => {
                        let _ = conn.write_all(&a).await;
                        let _ = conn.shutdown().await;
                    }
                    Answer::Trickle(head) => {
                        let _ = conn.write_all(&head).await;
                        loop {
                            if conn.write_all(b"x").await.is_err() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                    Answer::Endless(head) => {
                        let _ = conn.write_all(&head).await;
                        let chunk = vec![7u8; 65536];
                        loop {
                            let mut out = format!("{:x}\r\n", chunk.len()).into_bytes();
                            out.extend_from_slice(&chunk);
                            out.extend_from_slice(b"\r\n");
                            if conn.write_all(&out).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    let url = reqwest::Url::parse(&format!("http://127.0.0.1:{port}/d/f.bin")).unwrap();
    (url, seen)
}

fn answer(head: &str, body: &[u8]) -> Answer {
    let mut a = format!("{head}\r\nConnection: close\r\n\r\n").into_bytes();
    a.extend_from_slice(body);
    Answer::Whole(a)
}

fn client() -> reqwest::Client {
    crate::tracker::http::client_builder(Duration::from_secs(5), Duration::from_secs(3600))
        .build()
        .unwrap()
}

const NO_MIN: MinRate = MinRate {
    min_rate: 0,
    window: Duration::from_secs(1),
};

async fn read_all(b: &mut Body) -> Result<Vec<u8>, WebSeedError> {
    let mut out = Vec::new();
    while let Some(c) = b.chunk().await? {
        out.extend_from_slice(&c);
    }
    Ok(out)
}

#[tokio::test]
async fn a_206_of_the_range_asked_for_is_read_whole() {
    let (url, seen) = serve(vec![answer(
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-14/100\r\nContent-Length: 5",
        b"hello",
    )])
    .await;
    let mut b = get_range(&client(), &url, 10, 5, 100, NO_MIN)
        .await
        .unwrap();
    assert_eq!(read_all(&mut b).await.unwrap(), b"hello");
    assert!(b.is_complete());
    assert_eq!(b.received(), 5);
    let req = seen.lock().unwrap()[0].to_lowercase();
    assert!(req.starts_with("get /d/f.bin "), "{req}");
    assert!(req.contains("range: bytes=10-14\r\n"), "{req}");
    // a total of `*` is accepted too
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-2/*",
        b"abc",
    )])
    .await;
    let mut b = get_range(&client(), &url, 0, 3, 100, NO_MIN).await.unwrap();
    assert_eq!(read_all(&mut b).await.unwrap(), b"abc");
}

#[tokio::test]
async fn a_200_is_taken_only_when_the_whole_file_is_the_range() {
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 200 OK\r\nContent-Length: 4",
        b"abcd",
    )])
    .await;
    let mut b = get_range(&client(), &url, 0, 4, 4, NO_MIN).await.unwrap();
    assert_eq!(read_all(&mut b).await.unwrap(), b"abcd");
    // the server ignored Range and sends the whole file for a part of it
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 200 OK\r\nContent-Length: 100",
        &[0; 100],
    )])
    .await;
    let e = get_range(&client(), &url, 10, 5, 100, NO_MIN)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        WebSeedError::NotPartial {
            at: 10,
            expected: 5,
            length: Some(100)
        }
    );
    assert_eq!(
        e.to_string(),
        "the server ignored the Range request (200 with 100 bytes instead of 5 bytes at 10)"
    );
}

#[tokio::test]
async fn another_range_a_wrong_length_or_a_status_is_refused_before_the_body() {
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 16384-16388/100000\r\nContent-Length: 5",
        b"hello",
    )])
    .await;
    let e = get_range(&client(), &url, 0, 5, 100_000, NO_MIN)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "wrong Content-Range: asked for bytes 0-4/100000, got bytes 16384-16388/100000"
    );
    // the right bytes of a file of another size
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4/99",
        b"hello",
    )])
    .await;
    assert!(matches!(
        get_range(&client(), &url, 0, 5, 100, NO_MIN).await,
        Err(WebSeedError::WrongRange { .. })
    ));
    // no Content-Range at all
    let (url, _) = serve(vec![answer("HTTP/1.1 206 Partial Content", b"hello")]).await;
    assert!(matches!(
        get_range(&client(), &url, 0, 5, 100, NO_MIN).await,
        Err(WebSeedError::WrongRange { got: None, .. })
    ));
    // a huge Content-Length: refused by us, or by the HTTP parser past 2^63
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4/100\r\nContent-Length: 1099511627776",
        b"hello",
    )])
    .await;
    assert_eq!(
        get_range(&client(), &url, 0, 5, 100, NO_MIN)
            .await
            .unwrap_err(),
        WebSeedError::WrongLength {
            expected: 5,
            got: 1 << 40
        }
    );
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4/100\r\nContent-Length: 18446744073709551615",
        b"hello",
    )])
    .await;
    assert!(matches!(
        get_range(&client(), &url, 0, 5, 100, NO_MIN).await,
        Err(WebSeedError::Transport(_))
    ));
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 404 Not Found\r\nContent-Length: 3",
        b"no!",
    )])
    .await;
    let e = get_range(&client(), &url, 0, 5, 100, NO_MIN)
        .await
        .unwrap_err();
    assert!(e.is_file_missing());
    assert_eq!(e.to_string(), "HTTP 404 Not Found");
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0",
        b"",
    )])
    .await;
    let e = get_range(&client(), &url, 0, 5, 100, NO_MIN)
        .await
        .unwrap_err();
    assert!(!e.is_file_missing());
}

#[tokio::test]
async fn a_short_body_and_one_that_never_ends_are_refused() {
    let (url, _) = serve(vec![answer(
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/100",
        b"hello",
    )])
    .await;
    let mut b = get_range(&client(), &url, 0, 10, 100, NO_MIN)
        .await
        .unwrap();
    assert_eq!(
        read_all(&mut b).await.unwrap_err(),
        WebSeedError::Short {
            expected: 10,
            got: 5
        }
    );
    // chunked, endless: refused at the first byte past the range, memory stays bounded
    let (url, _) = serve(vec![Answer::Endless(
        b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99999/1000000\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec(),
    )])
    .await;
    let mut b = get_range(&client(), &url, 0, 100_000, 1_000_000, NO_MIN)
        .await
        .unwrap();
    let mut got = 0;
    let e = loop {
        match b.chunk().await {
            Ok(Some(c)) => got += c.len(),
            Ok(None) => panic!("an endless body ended"),
            Err(e) => break e,
        }
    };
    assert_eq!(e, WebSeedError::Oversized { expected: 100_000 });
    assert!(got <= 100_000, "{got}");
}

#[tokio::test]
async fn a_trickle_and_a_silent_server_are_refused_after_the_window() {
    let rate = MinRate {
        min_rate: 1024,
        window: Duration::from_secs(2),
    };
    let (url, _) = serve(vec![Answer::Trickle(
        b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99999/100000\r\nContent-Length: 100000\r\n\r\n"
            .to_vec(),
    )])
    .await;
    let started = std::time::Instant::now();
    let mut b = get_range(&client(), &url, 0, 100_000, 100_000, rate)
        .await
        .unwrap();
    let e = read_all(&mut b).await.unwrap_err();
    assert!(
        matches!(e, WebSeedError::Slow { got, secs: 2, min_rate: 1024 } if got <= 3),
        "{e:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // accepts, never answers
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = reqwest::Url::parse(&format!("http://{}/f", listener.local_addr().unwrap())).unwrap();
    let held = tokio::spawn(async move { listener.accept().await });
    let e = get_range(&client(), &url, 0, 5, 100, rate)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "too slow: 0 bytes in 2 s (at least 1024 bytes/s wanted)"
    );
    held.abort();
}

#[tokio::test]
async fn redirects_beyond_the_cap_fail() {
    let loops = (0..=MAX_REDIRECTS)
        .map(|_| {
            answer(
                "HTTP/1.1 302 Found\r\nLocation: /d/f.bin\r\nContent-Length: 0",
                b"",
            )
        })
        .collect();
    let (url, seen) = serve(loops).await;
    assert_eq!(
        get_range(&client(), &url, 0, 5, 100, NO_MIN)
            .await
            .unwrap_err(),
        WebSeedError::Redirects
    );
    assert_eq!(seen.lock().unwrap().len(), MAX_REDIRECTS + 1);
}

#[test]
fn content_range_forms() {
    assert_eq!(parse_content_range("bytes 0-4/10"), Some((0, 4, Some(10))));
    assert_eq!(parse_content_range(" bytes  3-3/*"), Some((3, 3, None)));
    for bad in [
        "",
        "bytes",
        "bytes 0-4",
        "bytes */10",
        "bits 0-4/10",
        "bytes -1-4/10",
        "bytes 0-4/x",
    ] {
        assert_eq!(parse_content_range(bad), None, "{bad}");
    }
}
