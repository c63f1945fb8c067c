//! Two sockets over loopback: a transfer both ways, a refused dial, a flood of SYNs and
//! garbage.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn pair() -> (UtpSocket, UtpSocket, mpsc::Receiver<UtpStream>) {
    let (a, _) =
        UtpSocket::bind("127.0.0.1:0".parse().unwrap(), UtpLimits::default(), false).unwrap();
    let (b, acc) =
        UtpSocket::bind("127.0.0.1:0".parse().unwrap(), UtpLimits::default(), true).unwrap();
    (a, b, acc.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_carries_bytes_both_ways() {
    let (a, b, mut acc) = pair();
    let data: Vec<u8> = (0..20_000_000u32).map(|i| (i ^ (i >> 9)) as u8).collect();
    let client = a.connect(b.local_addr().unwrap()).await.unwrap();
    let server = acc.recv().await.unwrap();
    assert_eq!(server.peer_addr(), a.local_addr().unwrap());
    let (mut cr, mut cw) = client.split();
    let (mut sr, mut sw) = server.split();
    let d2 = data.clone();
    let up = tokio::spawn(async move {
        cw.write_all(&d2).await.unwrap();
        cw.shutdown().await.unwrap();
        cw
    });
    let mut got = Vec::new();
    sr.read_to_end(&mut got).await.unwrap();
    assert!(got == data, "{} of {} bytes", got.len(), data.len());
    // and back
    sw.write_all(b"thanks").await.unwrap();
    sw.shutdown().await.unwrap();
    let mut back = Vec::new();
    cr.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, b"thanks");
    drop(up.await.unwrap());
    drop((cr, sr, sw));
    // closed connections leave the table
    let mut left = (1, 1);
    for _ in 0..100 {
        left = (a.counts().0, b.counts().0);
        if left == (0, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(left, (0, 0));
}

#[tokio::test]
async fn a_dial_to_a_silent_port_times_out() {
    let (a, _) =
        UtpSocket::bind("127.0.0.1:0".parse().unwrap(), UtpLimits::default(), false).unwrap();
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let t = Instant::now();
    let e = a.connect(silent.local_addr().unwrap()).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    assert!(
        t.elapsed() >= Duration::from_millis(2900),
        "{:?}",
        t.elapsed()
    );
    for _ in 0..50 {
        if a.counts().0 == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(a.counts().0, 0, "the failed dial left the table");
}

#[tokio::test]
async fn a_socket_that_does_not_accept_leaves_a_dial_unanswered() {
    let (a, b, _acc) = pair();
    let (c, _) =
        UtpSocket::bind("127.0.0.1:0".parse().unwrap(), UtpLimits::default(), false).unwrap();
    // c accepts nothing: the dial gets no answer
    let e = a.connect(c.local_addr().unwrap()).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    drop(b);
}

#[tokio::test]
async fn syn_floods_and_garbage_stay_bounded() {
    let limits = UtpLimits {
        max_half_open: 16,
        max_connections: 100,
    };
    let (b, acc) = UtpSocket::bind("127.0.0.1:0".parse().unwrap(), limits, true).unwrap();
    let mut acc = acc.unwrap();
    let to = b.local_addr().unwrap();
    // 200 SYNs from 200 ports, and garbage
    let mut socks = Vec::new();
    for i in 0..200u16 {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let h = Header {
            kind: PacketType::Syn,
            conn_id: i,
            timestamp_us: 1,
            timestamp_diff_us: 0,
            wnd_size: 1 << 20,
            seq_nr: 1,
            ack_nr: 0,
        };
        let mut buf = [0u8; HEADER_LEN];
        h.write(0, &mut buf);
        s.send_to(&buf, to).unwrap();
        s.send_to(&[0xff; 40], to).unwrap();
        s.send_to(
            b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe",
            to,
        )
        .unwrap();
        socks.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (conns, half) = b.counts();
    assert!(
        half <= 16 && conns <= 16,
        "{conns} connections, {half} half-open"
    );
    // the session takes what was accepted; nothing else was
    let mut n = 0;
    while acc.try_recv().is_ok() {
        n += 1;
    }
    assert_eq!(n, 16);
    // the accepted streams are dropped: the table empties
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(b.counts(), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_for_an_unknown_connection_is_reset_with_the_ids_the_peer_can_receive_on() {
    let (b, _acc) =
        UtpSocket::bind("127.0.0.1:0".parse().unwrap(), UtpLimits::default(), true).unwrap();
    let raw = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let h = Header {
        kind: PacketType::Data,
        conn_id: 4000,
        timestamp_us: 1,
        timestamp_diff_us: 0,
        wnd_size: 65536,
        seq_nr: 77,
        ack_nr: 12,
    };
    let mut d = vec![0u8; HEADER_LEN];
    h.write(0, &mut d);
    d.extend_from_slice(b"stray");
    raw.send_to(&d, b.local_addr().unwrap()).unwrap();
    let mut ids = Vec::new();
    let mut buf = [0u8; 64];
    for _ in 0..2 {
        let (n, _) = raw.recv_from(&mut buf).unwrap();
        let p = Packet::parse(&buf[..n]).unwrap();
        assert_eq!(p.header.kind, PacketType::Reset);
        assert_eq!(p.header.ack_nr, 77);
        ids.push(p.header.conn_id);
    }
    ids.sort_unstable();
    // the peer receives on 3999 if it dialled us (we sent with its id), 4001 if we dialled
    assert_eq!(ids, vec![3999, 4001]);
}
