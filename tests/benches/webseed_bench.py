#!/usr/bin/python3
"""Web seed (BEP 19) download benchmark: ratorrent beside aria2c, one HTTP server on loopback.

A payload (one file of --size-mib MiB of pseudo-random bytes) and a v1 .torrent whose only
source is its `url-list` (made by libtorrent, no tracker) are written under --dir (tmpfs by
default, so the disk is not what is measured). One HTTP server serves the payload's folder
on 127.0.0.1: nginx (sendfile, several hundred MiB/s on loopback; `apt-get install
nginx-light`) or, with --server python, a threaded Python server that answers Range requests
with os.sendfile. Then each client downloads the torrent in turn, --rounds times,
interleaved (ratorrent, aria2c, ratorrent, aria2c, ...), into a fresh folder:

  ratorrent: RATORRENT download TORRENT -o OUT --no-dht --port P --config EMPTY.toml
  aria2c:    aria2c --dir OUT --seed-time=0 --enable-dht=false --enable-dht6=false
             --bt-enable-lpd=false --enable-peer-exchange=false --max-connection-per-server=4
             --split=4 --file-allocation=none --listen-port=P --summary-interval=0 TORRENT

Both use 4 connections to the server (ratorrent's default [webseeds]
max_connections_per_server). Measured per run: wall time from start to exit, MiB/s over it,
CPU seconds (user + system of the client and everything it started, from wait4), CPU s per
GiB, peak RSS (the kernel's VmHWM) and peak anonymous memory (RssAnon), sampled from /proc
every 20 ms. The file is compared byte for byte after each run (a run
that differs is reported as FAILED). Rows go to stdout as a table and to --results as JSON
lines. Needs /usr/bin/python3 (Debian's, for python3-libtorrent).

  tests/benches/webseed_bench.py --ratorrent target/release/ratorrent --rounds 3
"""

import argparse
import filecmp
import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_payload(path, size):
    """Pseudo-random bytes (a repeated 64 MiB random block would compress; this does not)."""
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    import random

    rng = random.Random(0x5EED)
    step = 4 * MIB
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(step, left)
            f.write(rng.randbytes(n))
            left -= n


def make_torrent(data, out, url, piece_length):
    import libtorrent as lt

    fs = lt.file_storage()
    lt.add_files(fs, data)
    ct = lt.create_torrent(fs, piece_length, flags=lt.create_torrent.v1_only)
    ct.add_url_seed(url)
    ct.set_creator("ratorrent webseed_bench.py")
    lt.set_piece_hashes(ct, os.path.dirname(data))
    with open(out, "wb") as f:
        f.write(lt.bencode(ct.generate()))
    return lt.torrent_info(out).piece_length()


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """GET with one `Range: bytes=A-B`, answered with os.sendfile."""

    protocol_version = "HTTP/1.1"
    root = "."

    def log_message(self, *a):
        pass

    def do_GET(self):
        from urllib.parse import unquote

        path = os.path.join(self.root, unquote(self.path.split("?")[0]).lstrip("/"))
        try:
            f = open(path, "rb")
        except OSError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            rng = self.headers.get("Range", "")
            a, b = 0, size - 1
            status = 200
            if rng.startswith("bytes="):
                lo, _, hi = rng[6:].partition("-")
                a = int(lo)
                b = min(int(hi), size - 1) if hi else size - 1
                status = 206
            self.send_response(status)
            if status == 206:
                self.send_header("Content-Range", f"bytes {a}-{b}/{size}")
            self.send_header("Content-Length", str(b + 1 - a))
            self.end_headers()
            self.wfile.flush()
            off, left = a, b + 1 - a
            while left > 0:
                n = os.sendfile(self.connection.fileno(), f.fileno(), off, min(left, 16 * MIB))
                if n == 0:
                    break
                off += n
                left -= n


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def start_server(kind, root, port, work):
    if kind == "nginx":
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as c:
            c.write(
                f"""daemon off;
worker_processes 2;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    default_type application/octet-stream;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
    }}
}}
"""
            )
        p = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        return lambda: (p.send_signal(signal.SIGQUIT), p.wait(10))
    RangeHandler.root = root
    srv = ThreadingServer(("127.0.0.1", port), RangeHandler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    return lambda: (srv.shutdown(), srv.server_close())


def proc_status(pid):
    """(VmHWM, RssAnon) of `pid` in KiB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            v = {}
            for line in f:
                k, _, rest = line.partition(":")
                if k in ("VmHWM", "RssAnon"):
                    v[k] = int(rest.split()[0])
            return v.get("VmHWM", 0), v.get("RssAnon", 0)
    except (OSError, ValueError):
        return None


def run_client(name, argv, out_dir, data, timeout):
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # peak RSS and anonymous memory from /proc (wait4's ru_maxrss keeps the forking
    # Python's peak across exec); VmHWM is the kernel's own high-water mark
    peak = {"hwm": 0, "anon": 0}
    done = threading.Event()

    def sample():
        while not done.is_set():
            st = proc_status(p.pid)
            if st is None:
                return
            peak["hwm"] = max(peak["hwm"], st[0])
            peak["anon"] = max(peak["anon"], st[1])
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    except KeyboardInterrupt:
        p.kill()
        raise
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read()
    got = os.path.join(out_dir, os.path.basename(data))
    ok = p.returncode == 0 and os.path.exists(got) and filecmp.cmp(data, got, shallow=False)
    size = os.path.getsize(data)
    cpu = ru.ru_utime + ru.ru_stime
    row = {
        "client": name,
        "ok": ok,
        "exit": p.returncode,
        "wall_s": round(wall, 3),
        "mib_s": round(size / MIB / wall, 1),
        "cpu_s": round(cpu, 3),
        "cpu_s_per_gib": round(cpu / (size / (1 << 30)), 3),
        "peak_rss_mib": round(peak["hwm"] / 1024, 1),
        "peak_anon_mib": round(peak["anon"] / 1024, 1),
        "bytes": size,
    }
    if not ok:
        row["stderr_tail"] = err.decode(errors="replace")[-2000:]
    shutil.rmtree(out_dir, ignore_errors=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratorrent", required=True, help="the release binary")
    ap.add_argument("--dir", default="/dev/shm/ratbench-webseed")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--piece-length", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--server", choices=["nginx", "python"], default="nginx")
    ap.add_argument("--clients", default="ratorrent,aria2c")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--results", default=None, help="append JSON lines here")
    a = ap.parse_args()

    os.makedirs(a.dir, exist_ok=True)
    srv_root = os.path.join(a.dir, "srv")
    os.makedirs(srv_root, exist_ok=True)
    data = os.path.join(srv_root, f"ws{a.size_mib}.bin")
    make_payload(data, a.size_mib * MIB)
    work = tempfile.mkdtemp(prefix="wsbench-", dir=a.dir)
    port = free_port()
    torrent = os.path.join(work, "ws.torrent")
    piece = make_torrent(data, torrent, f"http://127.0.0.1:{port}/", a.piece_length)
    stop = start_server(a.server, srv_root, port, work)
    empty = os.path.join(work, "empty.toml")
    open(empty, "w").close()
    rows = []
    try:
        for r in range(a.rounds):
            for c in a.clients.split(","):
                out = os.path.join(work, f"out-{c}")
                p = free_port()
                if c == "ratorrent":
                    argv = [a.ratorrent, "--config", empty, "download", torrent, "-o", out,
                            "--no-dht", "--port", str(p), "--quiet"]
                elif c == "aria2c":
                    argv = ["aria2c", "--dir", out, "--seed-time=0", "--enable-dht=false",
                            "--enable-dht6=false", "--bt-enable-lpd=false",
                            "--enable-peer-exchange=false", "--max-connection-per-server=4",
                            "--split=4", "--file-allocation=none", f"--listen-port={p}",
                            "--summary-interval=0", "--console-log-level=warn", torrent]
                else:
                    sys.exit(f"unknown client {c}")
                row = run_client(c, argv, out, data, a.timeout)
                row.update(round=r + 1, server=a.server, piece_length=piece,
                           at=time.strftime("%Y-%m-%dT%H:%M:%S"))
                rows.append(row)
                print(json.dumps(row), flush=True)
                if a.results:
                    with open(a.results, "a") as f:
                        f.write(json.dumps(row) + "\n")
                time.sleep(2)
    finally:
        stop()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{a.size_mib} MiB, piece {piece // 1024} KiB, server {a.server}, {a.rounds} rounds")
    print(f"{'client':<10} {'ok':<4} {'MiB/s':>8} {'wall s':>8} {'CPU s':>7} {'CPU s/GiB':>10} "
          f"{'peak RSS MiB':>13} {'peak anon MiB':>14}")
    for r in rows:
        print(f"{r['client']:<10} {str(r['ok']):<4} {r['mib_s']:>8} {r['wall_s']:>8} {r['cpu_s']:>7} "
              f"{r['cpu_s_per_gib']:>10} {r['peak_rss_mib']:>13} {r['peak_anon_mib']:>14}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
