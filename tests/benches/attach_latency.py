#!/usr/bin/python3
"""Key -> screen latency and bytes written to the terminal per key: the TUI with its own
engine beside the TUI attached to `ratorrent daemon`, each on a state folder of its own
holding the same N complete torrents (seeding to no one), each in a tmux pane of 200x50.

    cargo build --release
    /usr/bin/python3 tests/benches/attach_latency.py --torrents 100 --keys 300 --engine-keys 100

Keys go to the two panes in turn (in-process, attached, in-process, ...), so the load of a
shared machine falls on both alike. Two kinds of key: j and k, bouncing through the list so
every key moves the selection (the TUI alone answers), and p, pausing and resuming the
selected torrent (the engine answers: the row changes when its snapshot comes, over the
socket when attached). For each key: the time from `tmux send-keys` to the first byte the
program writes to its pane (`tmux pipe-pane`, the file's size polled every 0.1 ms), and the
bytes of that frame (the file once it has been still for 50 ms). Both panes pay the same
tmux and polling overhead. Then, untimed, the bytes the daemon writes on its control
socket per key (strace of the daemon's writes to Unix stream sockets while 40 more keys of
each kind go to the attached pane). Everything stays on this machine: no tracker, the DHT off. Prints one JSON line per
pane and kind of key, then the ratios. BENCH_DEBUG=1 prints each screen before measuring.
"""

import argparse
import fcntl
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import libtorrent as lt  # python3-libtorrent, to make the torrents

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = "attach-bench"


def tmux(*args, check=True):
    return subprocess.run(["tmux", "-L", SERVER, *args], check=check,
                          capture_output=True, text=True)


def screen(session):
    return tmux("capture-pane", "-p", "-t", session, check=False).stdout


def wait(what, pred, timeout=60.0, session=None):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}\n{screen(session) if session else ''}")


def socket_bytes(daemon_pid, session, keys):
    """Bytes the daemon writes to Unix stream sockets (its control connections) while
    `keys` go to `session`, one every 150 ms: strace, so not timed."""
    log = tempfile.mktemp(prefix="ratorrent-strace-")
    st = subprocess.Popen(["strace", "-f", "-qq", "-yy", "-e", "trace=write,writev,sendmsg,sendto",
                           "-e", "signal=none", "-o", log, "-p", str(daemon_pid)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    for k in keys:
        tmux("send-keys", "-t", session, k)
        time.sleep(0.15)
    time.sleep(1)
    st.send_signal(signal.SIGINT)
    st.wait(10)
    total = 0
    with open(log) as f:
        for line in f:
            if "UNIX-STREAM" in line and "= " in line:
                ret = line.rsplit("= ", 1)[1].split()[0]
                if ret.isdigit():
                    total += int(ret)
    os.unlink(log)
    return total / len(keys)


def owner_free(path):
    """Whether nobody holds the state folder's owner lock."""
    with open(path) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def make_torrents(n, data, torrents):
    os.makedirs(data, exist_ok=True)
    os.makedirs(torrents, exist_ok=True)
    for i in range(n):
        name = f"bench-{i:04d}.bin"
        with open(f"{data}/{name}", "wb") as f:
            f.write(os.urandom(32 * 1024))
        fs = lt.file_storage()
        lt.add_files(fs, f"{data}/{name}")
        t = lt.create_torrent(fs, 16 * 1024)
        lt.set_piece_hashes(t, data)
        with open(f"{torrents}/{name}.torrent", "wb") as f:
            f.write(lt.bencode(t.generate()))


class Home:
    """One user's folders: config, state, logs, runtime."""

    def __init__(self, work, name, binary):
        self.dir = f"{work}/{name}"
        self.bin = binary
        self.env = dict(os.environ, XDG_CONFIG_HOME=f"{self.dir}/cfg",
                        XDG_DATA_HOME=f"{self.dir}/data-home",
                        XDG_STATE_HOME=f"{self.dir}/state-home",
                        XDG_RUNTIME_DIR=f"{self.dir}/run", LANG="C.UTF-8", RUST_LOG="warn")
        for d in ("cfg", "run"):
            os.makedirs(f"{self.dir}/{d}", exist_ok=True)
        self.config = f"{self.dir}/config.toml"
        with open(self.config, "w") as f:
            f.write("listen_port = 0\n[dht]\nenabled = false\n")
        self.owner = f"{self.dir}/data-home/ratorrent/engine.lock"

    def daemon(self, data, *extra):
        p = subprocess.Popen([self.bin, "--config", self.config, *extra, "daemon", "-o", data],
                             env=self.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def ready():
            if not os.path.exists(self.owner):
                return False
            text = open(self.owner).read()
            return f"pid={p.pid}" in text and "socket=" in text \
                and os.path.exists(text.split("socket=")[1].strip())
        wait("the daemon's socket", ready)
        return p

    def fill(self, data, torrents, n):
        """The state: N torrents added through the watch folder, checked, seeding."""
        watch = f"{self.dir}/watch"
        shutil.copytree(torrents, watch)
        p = self.daemon(data, "--watch", watch)
        wait("every torrent added",
             lambda: sum(f.endswith(".added") for f in os.listdir(watch)) == n, timeout=120)
        time.sleep(3)
        p.send_signal(signal.SIGTERM)
        p.wait(60)

    def pane(self, session, n):
        env = [a for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                           "XDG_RUNTIME_DIR", "LANG", "RUST_LOG")
               for a in ("-e", f"{k}={self.env[k]}")]
        tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", *env,
             f"exec {self.bin} --config {self.config}")
        wait(f"every torrent seeding in {session}", lambda: f"seeding {n}" in screen(session),
             timeout=120, session=session)


def send_and_time(session, key, out):
    """Send `key`; returns (ms to the first byte, bytes of the frame)."""
    start_size = os.path.getsize(out)
    t0 = time.perf_counter()
    tmux("send-keys", "-t", session, key)
    while os.path.getsize(out) == start_size:
        if time.perf_counter() - t0 > 2:
            sys.exit(f"{session}: no frame within 2 s of {key!r}\n{screen(session)}")
        time.sleep(0.0001)
    t1 = time.perf_counter()
    size, still = os.path.getsize(out), time.perf_counter()
    while time.perf_counter() - still < 0.05:
        s = os.path.getsize(out)
        if s != size:
            size, still = s, time.perf_counter()
        time.sleep(0.001)
    return (t1 - t0) * 1000, size - start_size


def navigation(count, n):
    """`count` j/k keys that each move the selection, from the first row."""
    keys, pos, down = [], 0, True
    for _ in range(count):
        if pos >= n - 1:
            down = False
        if pos <= 0:
            down = True
        keys.append("j" if down else "k")
        pos += 1 if down else -1
    return keys


def measure(panes, kind, keys, n, work):
    """Send `keys` to every pane in turn; one result row per pane."""
    outs = {}
    for name in panes:
        # warm-up: the first keys clear the start-up message line; back on the first row
        for k in "jjjjjkkkkk":
            tmux("send-keys", "-t", name, k)
            time.sleep(0.05)
        time.sleep(0.5)
        if os.environ.get("BENCH_DEBUG"):
            print(screen(name)[:600], file=sys.stderr)
        outs[name] = f"{work}/{name}-{kind.replace('/', '')}.bytes"
        open(outs[name], "wb").close()
        tmux("pipe-pane", "-t", name, "-o", f"cat >> {outs[name]}")
    time.sleep(0.5)
    lat = {name: [] for name in panes}
    sizes = {name: [] for name in panes}
    for key in keys:
        for name in panes:
            ms, size = send_and_time(name, key, outs[name])
            lat[name].append(ms)
            sizes[name].append(size)
    rows = []
    for name in panes:
        tmux("pipe-pane", "-t", name)
        ls = sorted(lat[name])
        row = {
            "run": name,
            "key": kind,
            "torrents": n,
            "keys": len(keys),
            "latency_ms_median": round(statistics.median(ls), 3),
            "latency_ms_p90": round(ls[int(len(ls) * 0.9)], 3),
            "latency_ms_mean": round(statistics.mean(ls), 3),
            "bytes_per_key_mean": round(statistics.mean(sizes[name]), 1),
            "bytes_per_key_median": statistics.median(sizes[name]),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=f"{ROOT}/target/release/ratorrent")
    ap.add_argument("--torrents", type=int, default=100)
    ap.add_argument("--keys", type=int, default=300, help="j/k keys per pane")
    ap.add_argument("--engine-keys", type=int, default=100, help="p keys per pane")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ratorrent-attach-bench-")
    n = args.torrents
    data, torrents = f"{work}/data", f"{work}/torrents"
    make_torrents(n, data, torrents)
    inproc, attached = Home(work, "inproc", args.bin), Home(work, "attached", args.bin)
    inproc.fill(data, torrents, n)
    attached.fill(data, torrents, n)
    tmux("kill-server", check=False)
    daemon = None
    rows = []
    try:
        inproc.pane("in-process", n)
        daemon = attached.daemon(data)
        attached.pane("attached", n)
        assert "attached to the daemon" in screen("attached"), screen("attached")
        time.sleep(2)
        panes = ["in-process", "attached"]
        rows += measure(panes, "j/k", navigation(args.keys, n), n, work)
        rows += measure(panes, "p", ["p"] * args.engine_keys, n, work)
        for kind, keys in (("j/k", navigation(40, n)), ("p", ["p"] * 40)):
            per_key = socket_bytes(daemon.pid, "attached", keys)
            print(json.dumps({"run": "attached", "key": kind,
                              "control_socket_bytes_per_key": round(per_key, 1)}), flush=True)
        # q (and yes: the in-process engine seeds N torrents), then the daemon's SIGTERM
        for name in panes:
            tmux("send-keys", "-t", name, "q")
        time.sleep(0.3)
        tmux("send-keys", "-t", "in-process", "y")
        wait("the in-process TUI's exit", lambda: owner_free(inproc.owner), timeout=30)
    finally:
        tmux("kill-server", check=False)
        if daemon:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(60)
    for kind in ("j/k", "p"):
        by = {r["run"]: r for r in rows if r["key"] == kind}
        for key in ("latency_ms_median", "latency_ms_mean", "latency_ms_p90",
                    "bytes_per_key_mean"):
            ins, att = by["in-process"][key], by["attached"][key]
            print(f"{kind} {key}: in-process {ins:.3f}, attached {att:.3f}, "
                  f"attached/in-process {att / ins:.3f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
