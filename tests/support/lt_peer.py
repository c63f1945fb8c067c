#!/usr/bin/python3
"""A libtorrent peer for ratorrent's integration tests (loopback only).

Run with Debian's interpreter (`/usr/bin/python3`): only it can import `python3-libtorrent`.
Standard library + libtorrent only.

Subcommands:

  make-torrent --data PATH --out FILE.torrent [--tracker URL] [--piece-length BYTES] [--hybrid]
               [--private] [--web-seed URL ...]
      Write a v1-only .torrent (BEP 3) of a file or a directory (no --tracker: a
      tracker-less torrent, for the DHT or LSD; --private: private=1, BEP 27). Prints the
      info hash (40 hex digits) on stdout.

  dht-node --ip 127.0.0.X --port P [--dht-bootstrap HOST:PORT ...]
      A DHT node only (no torrent), on UDP ip:port. Prints `READY` once listening, then
      `NODES <n>` (its routing table size) every second, until SIGTERM.

  seed --torrent T --data-dir D --ip 127.0.0.X --port P [--upload-limit BYTES_PER_S]
       [--seed-mode] [--connect HOST:PORT ...] [--encryption plain|prefer|forced]
      Seed the torrent whose data is in D (D holds the torrent's file, or its top folder).
      The data is hash-checked first unless --seed-mode is given. Prints exactly one line
      `READY <info hash hex>` once the torrent is seeding AND the tracker has answered an
      announce made while seeding (so the tracker lists this seeder with left=0), then
      seeds until SIGTERM/SIGINT (clean exit 0: a `stopped` announce is sent).

  leech (--torrent T | --magnet URI) --save-dir D --ip 127.0.0.X --port P [--timeout S]
        [--connect HOST:PORT ...] [--download-limit BYTES_PER_S] [--keep-seeding]
      Download into D (from a magnet link: the metadata is fetched from peers first, BEP 9;
      `METADATA <seconds>` is printed when it arrives). Every piece is SHA-1 checked by libtorrent as it arrives. Once
      complete, waits (up to 5 s) for the tracker to answer the `completed` announce, prints
      `DONE` and exits 0 (or, with --keep-seeding, keeps seeding until SIGTERM). Exit 1 with
      a message on stderr on timeout.

LSD (seed, leech): off unless --lsd is given. With --lsd the session runs Local Service
Discovery (BEP 14, multicast 239.192.152.143:6771 on the interface of ip) and announces the
torrent there every 2 s (libtorrent's default is 5 min); a seeder of a torrent without
trackers (and without --dht) prints READY once it is seeding. --no-outgoing (no TCP dials)
and --no-incoming (no accepted TCP connections) make a test prove which side found the
other.

DHT (seed, leech): off unless --dht is given. With --dht the session runs a DHT node on
UDP ip:port, bootstrapped to the --dht-bootstrap nodes only (none: it waits to be found),
with libtorrent's filters for loopback and same-subnet nodes off (every test node lives in
127.0.0.0/8), no rate blocking of chatty loopback nodes, and announces every 5 s; the
torrent is announced to the DHT. A seeder of a torrent without trackers prints READY once
it is seeding and has sent an announce_peer (BEP 5) to a DHT node.

Every session: listens on ip:port only, dials and announces from ip (outgoing_interfaces,
announce_ip, so the tracker sees ip through `&ip=`), TCP only (uTP off) unless --transport
utp (uTP only: TCP off both ways, 4 MiB socket buffers) or both, LSD/UPnP/NAT-PMP
and PEX off, several connections per IP allowed (all test peers share 127.0.0.0/8), reconnect
after 1 s, tracker intervals honoured down to 1 s. `--connect` dials a peer directly (once a
second while the torrent has no peer), for a peer the tracker cannot announce (same IP).
Loopback peers are put in the global peer class so rate limits apply to them.

Diagnostics (peer, tracker, storage errors, a status line every 2 s) go to stderr.
The process exits by itself when its parent process goes away (no orphans).

Exit codes: 0 success, 1 timeout / failure, 2 bad arguments or setup error, 3 libtorrent
missing.
"""

import argparse
import os
import signal
import sys
import time

try:
    import libtorrent as lt
except ImportError:
    print(
        "python3-libtorrent is not installed: apt-get install -y python3-libtorrent "
        "(and run this script with /usr/bin/python3)",
        file=sys.stderr,
    )
    sys.exit(3)

# Set by SIGTERM/SIGINT; the main loops poll it.
STOP = False
PARENT = os.getppid()


def log(msg):
    print(f"[lt_peer {os.getpid()}] {msg}", file=sys.stderr, flush=True)


def fail(msg, code=1):
    log(f"error: {msg}")
    sys.exit(code)


def on_signal(_signum, _frame):
    global STOP
    STOP = True


def should_stop():
    """True after SIGTERM/SIGINT or once the parent (the test process) is gone."""
    return STOP or os.getppid() != PARENT


def parse_hostport(s):
    host, sep, port = s.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {s!r}")
    return host, int(port)


def session_settings(a, upload_limit=0, download_limit=0):
    """libtorrent settings for a quiet, loopback-only, TCP-only test peer."""
    if a.encryption == "plain":
        # Dial in plaintext; accept plaintext or MSE from others.
        out_pol, in_pol = lt.enc_policy.disabled, lt.enc_policy.enabled
    elif a.encryption == "prefer":
        out_pol, in_pol = lt.enc_policy.enabled, lt.enc_policy.enabled
    else:
        out_pol, in_pol = lt.enc_policy.forced, lt.enc_policy.forced
    mask = (
        lt.alert.category_t.error_notification
        | lt.alert.category_t.status_notification
        | lt.alert.category_t.tracker_notification
        | lt.alert.category_t.storage_notification
        | lt.alert.category_t.peer_notification
        | lt.alert.category_t.connect_notification
    )
    settings = {
        "listen_interfaces": f"{a.ip}:{a.port}",
        "outgoing_interfaces": a.ip,
        "announce_ip": a.ip,
        "enable_dht": False,
        "enable_lsd": False,
        "enable_upnp": False,
        "enable_natpmp": False,
        "enable_outgoing_utp": False,
        "enable_incoming_utp": False,
        "enable_outgoing_tcp": True,
        "enable_incoming_tcp": True,
        "allow_multiple_connections_per_ip": True,
        "out_enc_policy": int(out_pol),
        "in_enc_policy": int(in_pol),
        "allowed_enc_level": int(lt.enc_level.both),
        # Fail rather than listen on another (or an OS-chosen) port.
        "max_retry_port_bind": 0,
        "listen_system_port_fallback": False,
        "min_reconnect_time": 1,
        "min_announce_interval": 1,
        "stop_tracker_timeout": 2,
        "peer_connect_timeout": 5,
        "upload_rate_limit": upload_limit,
        "rate_limit_ip_overhead": False,
        "download_rate_limit": download_limit,
        "alert_mask": int(mask),
    }
    if getattr(a, "lsd", False):
        settings["enable_lsd"] = True
        settings["local_service_announce_interval"] = 2
    transport = getattr(a, "transport", "tcp")
    tcp, utp = {"tcp": (True, False), "utp": (False, True), "both": (True, True)}[transport]
    settings.update(
        enable_outgoing_tcp=tcp,
        enable_incoming_tcp=tcp,
        enable_outgoing_utp=utp,
        enable_incoming_utp=utp,
    )
    if utp:
        # the kernel's 208 KiB default drops datagrams when the network thread stalls
        settings.update(recv_socket_buffer_size=4 << 20, send_socket_buffer_size=4 << 20)
    if getattr(a, "no_outgoing", False):
        settings["enable_outgoing_tcp"] = False
    if getattr(a, "no_incoming", False):
        settings["enable_incoming_tcp"] = False
    if getattr(a, "dht", False):
        settings.update(dht_settings(a))
        # dht_log_notification: dht_pkt_alert, which shows our own announce_peer going out
        settings["alert_mask"] = int(
            mask
            | lt.alert.category_t.dht_notification
            | lt.alert.category_t.dht_log_notification
        )
    return settings


def dht_settings(a):
    """A DHT node for a loopback test network (see the module docs)."""
    return {
        "enable_dht": True,
        # no routers: libtorrent never keeps a router in its routing table; the
        # --dht-bootstrap nodes are added as ordinary nodes instead (add_dht_nodes)
        "dht_bootstrap_nodes": "",
        # every test node is in 127.0.0.0/8: libtorrent would keep one per /24, refuse
        # "dark" and unverified ids, and block an IP that sends many queries a second
        "dht_restrict_routing_ips": False,
        "dht_restrict_search_ips": False,
        "dht_prefer_verified_node_ids": False,
        "dht_enforce_node_id": False,
        "dht_ignore_dark_internet": False,
        "dht_block_ratelimit": 100000,
        "dht_block_timeout": 1,
        "dht_upload_rate_limit": 1 << 20,
        "dht_announce_interval": 5,
        "dht_read_only": False,
    }


def add_dht_nodes(ses, a):
    """Ping each --dht-bootstrap node; those that answer enter the routing table."""
    for host, port in getattr(a, "dht_bootstrap", []):
        ses.add_dht_node((host, port))


def make_session(a, upload_limit=0, download_limit=0):
    ses = lt.session(session_settings(a, upload_limit, download_limit))
    if getattr(a, "dht", False):
        add_dht_nodes(ses, a)
    if upload_limit or download_limit:
        # Loopback peers are in the unthrottled "local" peer class by default; map every
        # IPv4 address to the global class instead, which the rate limits apply to.
        classes = lt.ip_filter()
        classes.add_rule("0.0.0.0", "255.255.255.255", 1 << lt.session.global_peer_class_id)
        ses.set_peer_class_filter(classes)
    return ses


def add_torrent(ses, torrent, save_path, seed_mode=False, magnet=None, pex=False, dht=False,
                lsd=False):
    if magnet:
        try:
            params = lt.parse_magnet_uri(magnet)
        except RuntimeError as e:
            fail(f"cannot parse {magnet}: {e}", 2)
        ih = str(params.info_hashes.get_best())
    else:
        try:
            ti = lt.torrent_info(torrent)
        except RuntimeError as e:
            fail(f"cannot load {torrent}: {e}", 2)
        params = lt.add_torrent_params()
        params.ti = ti
        # the hash on the wire: v1, or a v2-only torrent's v2 hash cut to 20 bytes
        ih = str(ti.info_hashes().get_best())
    params.save_path = save_path
    flags = 0 if lsd else lt.torrent_flags.disable_lsd
    if not dht:
        flags |= lt.torrent_flags.disable_dht
    if not pex:
        flags |= lt.torrent_flags.disable_pex
    if seed_mode:
        flags |= lt.torrent_flags.seed_mode
    params.flags = flags  # not paused, not auto-managed: starts at once
    h = ses.add_torrent(params)
    return h, ih


class Events:
    """Alert pump: prints the interesting alerts, records what the loops wait for."""

    def __init__(self, port):
        self.port = port
        self.listening = False
        self.listen_error = None
        self.replies = 0  # tracker replies received
        self.answers = 0  # tracker replies + tracker errors (any outcome of an announce)
        self.last_reply_seeding = False  # the torrent was seeding when the last reply came
        self.finished = False
        self.fatal = None
        self.dht_replies = 0  # DHT lookups (with announce) of our torrent completed
        self.dht_replies_seeding = 0  # ... completed while seeding
        self.dht_announces = 0  # announce_peer queries sent (to a node that gave a token)
        self.dht_announces_seeding = 0  # ... sent while seeding

    def pump(self, ses, h, wait_ms=200):
        ses.wait_for_alert(wait_ms)
        for al in ses.pop_alerts():
            self.handle(al, h)

    def handle(self, al, h):
        if isinstance(al, lt.listen_succeeded_alert):
            if al.socket_type == lt.socket_type_t.tcp:
                if al.port == self.port:
                    self.listening = True
                else:
                    self.listen_error = f"listening on port {al.port}, not {self.port}"
        elif isinstance(al, lt.listen_failed_alert):
            self.listen_error = al.message()
            log(al.message())
        elif isinstance(al, lt.tracker_reply_alert):
            self.replies += 1
            self.answers += 1
            self.last_reply_seeding = h.status().is_seeding
            log(al.message())
        elif isinstance(al, lt.dht_pkt_alert):
            # an announce_peer query we send (BEP 5): the torrent is listed at that node
            if b"13:announce_peer" in bytes(al.pkt_buf) and "==>" in al.message():
                self.dht_announces += 1
                if h is not None and h.status().is_seeding:
                    self.dht_announces_seeding += 1
        elif isinstance(al, lt.dht_reply_alert):
            self.dht_replies += 1
            if h is not None and h.status().is_seeding:
                self.dht_replies_seeding += 1
            log(al.message())
        elif isinstance(al, lt.torrent_finished_alert):
            self.finished = True
            log(al.message())
        elif isinstance(al, (lt.torrent_error_alert, lt.file_error_alert)):
            self.fatal = al.message()
            log(al.message())
        elif isinstance(al, lt.tracker_error_alert):
            self.answers += 1
            log(al.message())
        elif isinstance(
            al,
            (
                lt.tracker_warning_alert,
                lt.peer_error_alert,
                lt.peer_disconnected_alert,
                lt.peer_ban_alert,
                lt.peer_connect_alert,
                lt.incoming_connection_alert,
                lt.hash_failed_alert,
                lt.torrent_checked_alert,
                lt.state_changed_alert,
                lt.tracker_announce_alert,
            ),
        ):
            log(al.message())


# peer_info flag of a uTP connection (bit 17; the 2.0 bindings do not export it)
UTP_SOCKET = getattr(lt.peer_info, "utp_socket", 1 << 17)

PEER_SOURCES = [(0x1, "tracker"), (0x2, "dht"), (0x4, "pex"), (0x8, "lsd"), (0x10, "resume"),
                (0x20, "incoming")]


def report_peers(h, seen):
    """Print `PEER <ip>:<port> <sources> <utp|tcp>` and
    `CRYPTO <ip>:<port> rc4|mse-plaintext|none` once for every peer newly connected (its
    handshake over)."""
    try:
        peers = h.get_peer_info()
    except RuntimeError:
        return
    for p in peers:
        ip, port = p.ip
        key = f"{ip}:{port}"
        if key in seen:
            continue
        if p.flags & (lt.peer_info.connecting | lt.peer_info.handshake):
            continue  # told once its handshake is over (the encryption is known then)
        seen.add(key)
        src = ",".join(name for bit, name in PEER_SOURCES if p.source & bit) or "none"
        transport = "utp" if p.flags & UTP_SOCKET else "tcp"
        print(f"PEER {key} {src} {transport}", flush=True)
        # MSE/PE: RC4 stream, plaintext after an encrypted handshake, or no MSE at all
        if p.flags & lt.peer_info.rc4_encrypted:
            enc = "rc4"
        elif p.flags & lt.peer_info.plaintext_encrypted:
            enc = "mse-plaintext"
        else:
            enc = "none"
        print(f"CRYPTO {key} {enc}", flush=True)


def status_line(h):
    s = h.status()
    return (
        f"state={s.state} progress={s.progress * 100:.1f}% peers={s.num_peers} "
        f"down={s.download_rate}B/s up={s.upload_rate}B/s "
        f"total_down={s.total_payload_download} total_up={s.total_payload_upload} "
        f"failed={s.total_failed_bytes} utp_peers={utp_peers(h)}"
    )


def utp_peers(h):
    try:
        return sum(1 for p in h.get_peer_info() if p.flags & UTP_SOCKET)
    except RuntimeError:
        return 0


def dial(h, peers, last, now):
    """Dial every --connect peer, at most once a second, while the torrent has no peer."""
    if peers and now - last >= 1.0 and h.status().num_peers == 0:
        for host, port in peers:
            try:
                h.connect_peer((host, port))
            except RuntimeError as e:
                log(f"connect_peer {host}:{port}: {e}")
        return now
    return last


def wait_listening(ses, h, ev, deadline=10.0):
    end = time.monotonic() + deadline
    while not ev.listening:
        if ev.listen_error:
            fail(f"cannot listen: {ev.listen_error}", 2)
        if should_stop():
            sys.exit(0)
        if time.monotonic() > end:
            fail("no listen_succeeded_alert within 10 s", 2)
        ev.pump(ses, h)


def cmd_make_torrent(a):
    data = os.path.abspath(a.data)
    if not os.path.exists(data):
        fail(f"{data} does not exist", 2)
    fs = lt.file_storage()
    lt.add_files(fs, data)
    if fs.num_files() == 0:
        fail(f"{data} holds no file", 2)
    # --hybrid: libtorrent's default (v1 + v2, files padded to piece boundaries);
    # --v2: BEP 52 only
    if a.v2:
        flags = lt.create_torrent.v2_only
    else:
        flags = 0 if a.hybrid else lt.create_torrent.v1_only
    ct = lt.create_torrent(fs, a.piece_length, flags=flags)
    if a.tracker:
        ct.add_tracker(a.tracker)
    if a.private:
        ct.set_priv(True)
    for url in a.web_seed:
        ct.add_url_seed(url)
    ct.set_creator("ratorrent tests lt_peer.py")
    lt.set_piece_hashes(ct, os.path.dirname(data))
    blob = lt.bencode(ct.generate())
    with open(a.out, "wb") as f:
        f.write(blob)
    ti = lt.torrent_info(a.out)
    # the v1 hash of a v1 or hybrid torrent; a v2-only one's v2 hash cut to 20 bytes
    # (get_best() would give a hybrid's v2 hash)
    hashes = ti.info_hashes()
    print(str(hashes.v1 if hashes.has_v1() else hashes.get_best()), flush=True)


def dht_node_count(ses):
    """Nodes in the session's DHT routing table."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return ses.status().dht_nodes


def cmd_dht_node(a):
    ses = make_session(a)
    ev = Events(a.port)
    wait_listening(ses, None, ev)
    print("READY", flush=True)
    last = 0.0
    while not should_stop():
        ev.pump(ses, None)
        now = time.monotonic()
        if now - last >= 1.0:
            print(f"NODES {dht_node_count(ses)}", flush=True)
            last = now
    log("stopping")
    del ses
    return 0


def cmd_seed(a):
    ses = make_session(a, upload_limit=a.upload_limit)
    h, ih = add_torrent(ses, a.torrent, a.data_dir, seed_mode=a.seed_mode, pex=a.pex, dht=a.dht,
                        lsd=a.lsd)
    trackerless = len(h.trackers()) == 0
    seen = set()
    ev = Events(a.port)
    wait_listening(ses, h, ev)
    ready = False
    reannounced = False
    last_dht = 0.0
    last_dial = 0.0
    last_status = time.monotonic()
    start = time.monotonic()
    while not should_stop():
        ev.pump(ses, h)
        if ev.fatal:
            fail(ev.fatal, 2)
        now = time.monotonic()
        st = h.status()
        if not ready:
            if st.state in (lt.torrent_status.downloading, lt.torrent_status.finished) and not st.is_seeding:
                fail(
                    f"the data in {a.data_dir} is not complete "
                    f"({st.progress * 100:.1f}% verified): cannot seed",
                    2,
                )
            if st.is_seeding and trackerless and a.dht:
                # no tracker: ready once an announce_peer went out while seeding (the
                # torrent is listed on the DHT; a dht_reply_alert only comes when the
                # lookup found peers); ask for a lookup every 2 s until then
                if ev.dht_announces_seeding:
                    ready = True
                    print(f"READY {ih}", flush=True)
                elif now - last_dht >= 2.0:
                    h.force_dht_announce()
                    last_dht = now
            elif st.is_seeding and trackerless and a.lsd:
                # no tracker, LSD only: announced on the local network every 2 s from now
                ready = True
                print(f"READY {ih}", flush=True)
            elif st.is_seeding:
                if ev.replies and ev.last_reply_seeding:
                    ready = True
                    print(f"READY {ih}", flush=True)
                elif not reannounced and (ev.replies or now - start > 3.0):
                    # The first announce went out while checking (left > 0), or none yet.
                    h.force_reannounce(0, -1, lt.reannounce_flags_t.ignore_min_interval)
                    reannounced = True
        if ready:
            last_dial = dial(h, a.connect, last_dial, now)
            if a.report_peers:
                report_peers(h, seen)
        if now - last_status >= 2.0:
            log(status_line(h))
            last_status = now
    log("stopping")
    # Dropping the last reference ends the session, which announces `stopped` and waits up
    # to stop_tracker_timeout (2 s) for the answer.
    del h, ses
    return 0


def cmd_leech(a):
    os.makedirs(a.save_dir, exist_ok=True)
    ses = make_session(a, download_limit=a.download_limit)
    if bool(a.torrent) == bool(a.magnet):
        fail("leech needs exactly one of --torrent and --magnet", 2)
    h, _ih = add_torrent(ses, a.torrent, a.save_dir, magnet=a.magnet, pex=a.pex, dht=a.dht,
                         lsd=a.lsd)
    seen = set()
    ev = Events(a.port)
    wait_listening(ses, h, ev)
    start = time.monotonic()
    end = start + a.timeout
    got_metadata = not a.magnet
    last_dial = 0.0
    last_status = time.monotonic()
    done_at = None
    answers_at_done = 0
    while not should_stop():
        ev.pump(ses, h)
        if ev.fatal:
            fail(ev.fatal, 2)
        now = time.monotonic()
        st = h.status()
        if a.report_peers:
            report_peers(h, seen)
        if not got_metadata and st.has_metadata:
            got_metadata = True
            print(f"METADATA {now - start:.3f}", flush=True)
        if done_at is None and st.is_seeding:
            done_at = now
            answers_at_done = ev.answers
            log(f"complete: {status_line(h)}")
        if done_at is not None:
            # Give the `completed` announce up to 5 s to be answered (or to fail), then
            # report, so the tracker has it before the test looks.
            if ev.answers > answers_at_done or now - done_at > 5.0:
                print("DONE", flush=True)
                break
        else:
            last_dial = dial(h, a.connect, last_dial, now)
            if now > end:
                fail(f"timeout after {a.timeout} s: {status_line(h)}", 1)
        if now - last_status >= 2.0:
            log(status_line(h))
            last_status = now
    if done_at is not None and a.keep_seeding:
        while not should_stop():
            ev.pump(ses, h)
    del h, ses  # announces `stopped`, see cmd_seed
    return 0 if done_at is not None else 1


def main():
    p = argparse.ArgumentParser(description="libtorrent peer for ratorrent's integration tests")
    sub = p.add_subparsers(dest="cmd", required=True)

    mk = sub.add_parser("make-torrent", help="write a v1-only .torrent, print its info hash")
    mk.add_argument("--data", required=True, help="file or directory to describe")
    mk.add_argument("--out", required=True, help=".torrent file to write")
    mk.add_argument("--tracker", default=None, help="announce URL (none: tracker-less)")
    mk.add_argument("--piece-length", type=int, default=0, help="bytes, power of two (0: auto)")
    mk.add_argument("--private", action="store_true", help="private=1 in the info dict (BEP 27)")
    mk.add_argument("--hybrid", action="store_true", help="v1+v2 with pad files (libtorrent's default)")
    mk.add_argument("--v2", action="store_true",
                    help="v2 only (BEP 52); prints the v2 hash cut to 20 bytes")
    mk.add_argument("--web-seed", action="append", default=[], metavar="URL",
                    help="a url-list entry (BEP 19 web seed; repeatable)")

    def peer_args(sp):
        sp.add_argument("--torrent", required=(sp.prog.split()[-1] == "seed"))
        sp.add_argument("--ip", required=True, help="127.0.0.X to listen on, dial from, announce")
        sp.add_argument("--port", type=int, required=True)
        sp.add_argument("--connect", type=parse_hostport, action="append", default=[],
                        metavar="HOST:PORT", help="also dial this peer (repeatable)")
        sp.add_argument("--pex", action="store_true", help="exchange peers (BEP 11)")
        sp.add_argument("--lsd", action="store_true",
                        help="Local Service Discovery (BEP 14), announcing every 2 s")
        sp.add_argument("--no-outgoing", action="store_true", help="never dial a peer (TCP)")
        sp.add_argument("--no-incoming", action="store_true",
                        help="accept no TCP connection")
        sp.add_argument("--report-peers", action="store_true",
                        help="print PEER <ip>:<port> <sources> <utp|tcp> and CRYPTO lines for each new peer")
        sp.add_argument("--transport", choices=["tcp", "utp", "both"], default="tcp",
                        help="tcp: TCP only (default); utp: uTP only, TCP off both ways; both")
        sp.add_argument("--encryption", choices=["plain", "prefer", "forced"], default="plain",
                        help="plain: dial plaintext, accept both (default); prefer: MSE first; "
                        "forced: MSE only")
        dht_args(sp)

    def dht_args(sp):
        sp.add_argument("--dht", action="store_true",
                        help="run a DHT node on UDP ip:port and use it for the torrent")
        sp.add_argument("--dht-bootstrap", type=parse_hostport, action="append", default=[],
                        metavar="HOST:PORT", help="DHT node to join through (repeatable)")

    dn = sub.add_parser("dht-node", help="a DHT node only; prints READY, then NODES <n>")
    dn.add_argument("--ip", required=True, help="127.0.0.X to bind")
    dn.add_argument("--port", type=int, required=True)
    dn.add_argument("--encryption", choices=["plain", "prefer", "forced"], default="plain",
                    help="accepted for symmetry with seed/leech (no torrent, no effect)")
    dht_args(dn)
    dn.set_defaults(dht=True)

    sd = sub.add_parser("seed", help="seed until SIGTERM; prints READY <info hash>")
    peer_args(sd)
    sd.add_argument("--data-dir", required=True, help="folder holding the file / top folder")
    sd.add_argument("--upload-limit", type=int, default=0, help="bytes/s, 0 = unlimited")
    sd.add_argument("--seed-mode", action="store_true", help="skip the hash check")

    le = sub.add_parser("leech", help="download; prints DONE")
    peer_args(le)
    le.add_argument("--magnet", help="magnet link to download instead of --torrent")
    le.add_argument("--save-dir", required=True)
    le.add_argument("--timeout", type=float, default=60.0, help="seconds")
    le.add_argument("--download-limit", type=int, default=0, help="bytes/s, 0 = unlimited")
    le.add_argument("--keep-seeding", action="store_true",
                    help="after DONE, keep seeding until SIGTERM")

    a = p.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if a.cmd == "make-torrent":
        cmd_make_torrent(a)
        return 0
    if a.cmd == "seed":
        return cmd_seed(a)
    if a.cmd == "dht-node":
        return cmd_dht_node(a)
    return cmd_leech(a)


if __name__ == "__main__":
    sys.exit(main())
