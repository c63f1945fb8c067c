//! [`WebSeedServer`]: an HTTP/1.1 file server with Range support on 127.0.0.1 (a web seed,
//! BEP 19), on plain threads, serving a folder; with faults to switch on per path: a wrong
//! byte range, a 404, a trickle of 1 byte/s, a 200 with the whole file, a huge
//! `Content-Length`, a body that never ends, the range of another piece.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server misbehaves for a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// `206` with a `Content-Range` and bytes shifted by `shift` bytes (wrapping inside the
    /// file): the data of another range, labelled as such.
    OtherRange(u64),
    /// `206` with the `Content-Range` asked for, but the bytes of another range (data that
    /// fails its hash check).
    WrongBytes(u64),
    /// `404 Not Found`.
    NotFound,
    /// The head of a `206`, then one byte a second.
    Trickle,
    /// `200` with the whole file, whatever the range.
    IgnoreRange,
    /// `206` with a `Content-Length` of 2^40.
    HugeLength,
    /// `206` in chunked encoding: the range asked for, then more without end.
    Endless,
}

/// One request the server read.
#[derive(Debug, Clone)]
pub struct Request {
    /// The path, percent-decoded.
    pub path: String,
    /// The `Range` header's first and last byte, when given.
    pub range: Option<(u64, u64)>,
}

/// A web seed on 127.0.0.1 serving `root`; stops when dropped.
pub struct WebSeedServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    faults: Arc<Mutex<Vec<(String, Fault)>>>,
    log: Arc<Mutex<Vec<Request>>>,
}

impl WebSeedServer {
    /// Serve `root` at `http://127.0.0.1:PORT/`.
    ///
    /// # Panics
    /// When no port can be bound.
    pub fn start(root: &Path) -> WebSeedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let faults: Arc<Mutex<Vec<(String, Fault)>>> = Arc::default();
        let log: Arc<Mutex<Vec<Request>>> = Arc::default();
        let (root, s, f, l) = (
            root.to_path_buf(),
            stop.clone(),
            faults.clone(),
            log.clone(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (root, s, f, l) = (root.clone(), s.clone(), f.clone(), l.clone());
                std::thread::spawn(move || serve(conn, &root, &s, &f, &l));
            }
        });
        WebSeedServer {
            addr,
            stop,
            faults,
            log,
        }
    }

    /// The server's base URL, ending in `/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Misbehave with `fault` for every path that contains `path_part` (`""`: all).
    pub fn fault(&self, path_part: &str, fault: Fault) {
        self.faults
            .lock()
            .unwrap()
            .push((path_part.to_owned(), fault));
    }

    /// Behave again.
    pub fn clear_faults(&self) {
        self.faults.lock().unwrap().clear();
    }

    /// The requests read so far.
    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for WebSeedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // wake the accept loop
        let _ = TcpStream::connect(self.addr);
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn serve(
    conn: TcpStream,
    root: &Path,
    stop: &AtomicBool,
    faults: &Mutex<Vec<(String, Fault)>>,
    log: &Mutex<Vec<Request>>,
) {
    let _ = conn.set_nodelay(true);
    let mut rd = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut wr = conn;
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let mut line = String::new();
        if rd.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (Some(_method), Some(target)) = (parts.next(), parts.next()) else {
            return;
        };
        let mut range = None;
        let mut close = false;
        loop {
            let mut h = String::new();
            if rd.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("range: bytes=")
                && let Some((a, b)) = v.split_once('-')
                && let (Ok(a), Ok(b)) = (a.trim().parse::<u64>(), b.trim().parse::<u64>())
            {
                range = Some((a, b));
            }
            if lower == "connection: close" {
                close = true;
            }
        }
        let path = percent_decode(target.split('?').next().unwrap_or(""));
        log.lock().unwrap().push(Request {
            path: path.clone(),
            range,
        });
        let fault = faults
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| path.contains(p.as_str()))
            .map(|(_, f)| f.clone());
        let file: PathBuf = root.join(path.trim_start_matches('/'));
        let data_len = std::fs::metadata(&file).map(|m| m.len()).ok();
        let (Some(len), false) = (data_len, fault == Some(Fault::NotFound)) else {
            let _ = wr.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
            continue;
        };
        let (a, b) = range.unwrap_or((0, len.saturating_sub(1)));
        let b = b.min(len.saturating_sub(1));
        let n = b + 1 - a.min(b + 1);
        let read_at = |at: u64, n: u64| -> Vec<u8> {
            let mut f = std::fs::File::open(&file).unwrap();
            let mut out = vec![0u8; n as usize];
            let mut got = 0;
            let mut at = at % len.max(1);
            while got < out.len() {
                f.seek(SeekFrom::Start(at)).unwrap();
                let want = (out.len() - got).min((len - at) as usize);
                f.read_exact(&mut out[got..got + want]).unwrap();
                got += want;
                at = 0;
            }
            out
        };
        let ok = match fault {
            None => {
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{len}\r\nContent-Length: {n}\r\n\r\n"
                );
                wr.write_all(head.as_bytes())
                    .and_then(|()| wr.write_all(&read_at(a, n)))
            }
            Some(Fault::OtherRange(shift)) => {
                let (a2, b2) = ((a + shift) % len, (a + shift) % len + n - 1);
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a2}-{b2}/{len}\r\nContent-Length: {n}\r\n\r\n"
                );
                wr.write_all(head.as_bytes())
                    .and_then(|()| wr.write_all(&read_at(a + shift, n)))
            }
            Some(Fault::WrongBytes(shift)) => {
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{len}\r\nContent-Length: {n}\r\n\r\n"
                );
                wr.write_all(head.as_bytes())
                    .and_then(|()| wr.write_all(&read_at(a + shift, n)))
            }
            Some(Fault::Trickle) => {
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{len}\r\nContent-Length: {n}\r\n\r\n"
                );
                let body = read_at(a, n);
                let mut r = wr.write_all(head.as_bytes());
                for byte in body {
                    if r.is_err() || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    r = wr.write_all(&[byte]);
                    std::thread::sleep(Duration::from_secs(1));
                }
                r
            }
            Some(Fault::IgnoreRange) => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                wr.write_all(head.as_bytes())
                    .and_then(|()| wr.write_all(&read_at(0, len)))
            }
            Some(Fault::HugeLength) => {
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{len}\r\nContent-Length: {}\r\n\r\n",
                    1u64 << 40
                );
                wr.write_all(head.as_bytes())
                    .and_then(|()| wr.write_all(&read_at(a, n)))
            }
            Some(Fault::Endless) => {
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {a}-{b}/{len}\r\nTransfer-Encoding: chunked\r\n\r\n"
                );
                let mut r = wr.write_all(head.as_bytes());
                // the range asked for, then more, without end
                let body = read_at(a, n);
                let mut out = format!("{:x}\r\n", body.len()).into_bytes();
                out.extend_from_slice(&body);
                out.extend_from_slice(b"\r\n");
                r = r.and_then(|()| wr.write_all(&out));
                let chunk = vec![0x5au8; 65536];
                while r.is_ok() && !stop.load(Ordering::Relaxed) {
                    let mut out = format!("{:x}\r\n", chunk.len()).into_bytes();
                    out.extend_from_slice(&chunk);
                    out.extend_from_slice(b"\r\n");
                    r = wr.write_all(&out);
                }
                return;
            }
            Some(Fault::NotFound) => unreachable!(),
        };
        if ok.is_err() || close {
            return;
        }
    }
}
