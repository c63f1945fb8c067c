#!/usr/bin/python3
"""Key -> screen latency and bytes written to the terminal per key: the TUI with its own
engine beside the TUI attached to `ratorrent daemon`, on the same state (N complete
torrents seeding to no one), in tmux at 200x50.

    cargo build --release
    /usr/bin/python3 tests/benches/attach_latency.py --torrents 100 --keys 300

For each key (j, then k, bouncing through the list so every key moves the selection) the
time from `tmux send-keys` to the first byte the program writes to its pane
(`tmux pipe-pane`, the file's size polled every 0.1 ms), and the bytes of that frame (the
file once it has been still for 50 ms). Both runs pay the same tmux and polling overhead,
so the difference is the TUI's. For the attached run it also counts the bytes the daemon
wrote (`wchar` of /proc/PID/io: the control socket's frames; it writes nothing else while
idle). Everything stays on this machine: no tracker, the DHT off. Prints one JSON line per
run and the ratios.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import libtorrent as lt  # python3-libtorrent, to make the torrents

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tmux(*args, check=True):
    return subprocess.run(["tmux", "-L", "attach-bench", *args], check=check,
                          capture_output=True, text=True)


def screen():
    return tmux("capture-pane", "-p", "-t", "m").stdout


def wait(what, pred, timeout=60.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}\n{screen() if tmux('has-session', check=False).returncode == 0 else ''}")


def wchar(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def owner_free(path):
    """Whether nobody holds the state folder's owner lock."""
    import fcntl
    with open(path) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def make_torrents(n, work):
    data, torrents = f"{work}/data", f"{work}/watch"
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
    return data, torrents


def measure(name, keys, n, out, daemon_pid=None):
    """Send `keys` keys to the pane and time each frame."""
    # warm-up: the first keys clear the start-up message line
    for k in "jjjjjkkkkk":
        tmux("send-keys", "-t", "m", k)
        time.sleep(0.05)
    time.sleep(0.5)
    if os.environ.get("BENCH_DEBUG"):
        print(screen()[:600], file=sys.stderr)
    open(out, "wb").close()
    tmux("pipe-pane", "-t", "m", "-o", f"cat >> {out}")
    time.sleep(0.5)
    lat, sizes = [], []
    # the warm-up went 5 down and 5 up: the first row is selected
    pos, down = 0, True
    before = wchar(daemon_pid) if daemon_pid else 0
    for _ in range(keys):
        if pos >= n - 1:
            down = False
        if pos <= 0:
            down = True
        key = "j" if down else "k"
        pos += 1 if down else -1
        start_size = os.path.getsize(out)
        t0 = time.perf_counter()
        tmux("send-keys", "-t", "m", key)
        while os.path.getsize(out) == start_size:
            if time.perf_counter() - t0 > 2:
                sys.exit(f"{name}: no frame within 2 s of a key\n{screen()}")
            time.sleep(0.0001)
        t1 = time.perf_counter()
        size, still = os.path.getsize(out), time.perf_counter()
        while time.perf_counter() - still < 0.05:
            s = os.path.getsize(out)
            if s != size:
                size, still = s, time.perf_counter()
            time.sleep(0.001)
        lat.append((t1 - t0) * 1000)
        sizes.append(size - start_size)
    after = wchar(daemon_pid) if daemon_pid else 0
    tmux("pipe-pane", "-t", "m")
    lat.sort()
    row = {
        "run": name,
        "torrents": n,
        "keys": keys,
        "latency_ms_median": round(statistics.median(lat), 3),
        "latency_ms_p90": round(lat[int(len(lat) * 0.9)], 3),
        "latency_ms_mean": round(statistics.mean(lat), 3),
        "bytes_per_key_mean": round(statistics.mean(sizes), 1),
        "bytes_per_key_median": statistics.median(sizes),
    }
    if daemon_pid:
        row["daemon_bytes_written_per_key"] = round((after - before) / keys, 1)
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=f"{ROOT}/target/release/ratorrent")
    ap.add_argument("--torrents", type=int, default=100)
    ap.add_argument("--keys", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=1, help="in-process/attached pairs")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ratorrent-attach-bench-")
    env = dict(os.environ, XDG_CONFIG_HOME=f"{work}/cfg", XDG_DATA_HOME=f"{work}/data-home",
               XDG_STATE_HOME=f"{work}/state-home", XDG_RUNTIME_DIR=f"{work}/run",
               LANG="C.UTF-8", RUST_LOG="warn")
    for d in ("cfg", "run"):
        os.makedirs(f"{work}/{d}", exist_ok=True)
    config = f"{work}/config.toml"
    with open(config, "w") as f:
        f.write("listen_port = 0\n[dht]\nenabled = false\n")
    n = args.torrents
    data, watch = make_torrents(n, work)
    owner = f"{work}/data-home/ratorrent/engine.lock"

    def daemon(*extra):
        p = subprocess.Popen([args.bin, "--config", config, *extra, "daemon", "-o", data],
                             env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait("the daemon's socket", lambda: os.path.exists(owner)
             and "socket=" in open(owner).read()
             and os.path.exists(open(owner).read().split("socket=")[1].strip()))
        return p

    # the state: N torrents added through the watch folder, checked, seeding
    p = daemon("--watch", watch)
    wait("every torrent added", lambda: sum(f.endswith(".added") for f in os.listdir(watch)) == n,
         timeout=120)
    time.sleep(3)
    p.send_signal(signal.SIGTERM)
    p.wait(60)

    def pane():
        tmux("kill-server", check=False)
        tmux("new-session", "-d", "-s", "m", "-x", "200", "-y", "50",
             *[a for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                           "XDG_RUNTIME_DIR", "LANG", "RUST_LOG") for a in ("-e", f"{k}={env[k]}")],
             f"exec {args.bin} --config {config}")
        wait("every torrent seeding", lambda: f"seeding {n}" in screen(), timeout=120)
        time.sleep(2)

    rows = []
    try:
        for r in range(args.rounds):
            pane()
            rows.append(measure("in-process", args.keys, n, f"{work}/inproc-{r}.bytes"))
            # q, then yes: the engine stops (it seeds N torrents), the state folder is free
            tmux("send-keys", "-t", "m", "q")
            time.sleep(0.3)
            tmux("send-keys", "-t", "m", "y")
            wait("the TUI's exit", lambda: owner_free(owner), timeout=30)
            p = daemon()
            pane()
            assert "attached to the daemon" in screen(), screen()
            rows.append(measure("attached", args.keys, n, f"{work}/attached-{r}.bytes",
                                daemon_pid=p.pid))
            tmux("send-keys", "-t", "m", "q")
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            p.wait(60)
    finally:
        tmux("kill-server", check=False)
    for key in ("latency_ms_median", "latency_ms_mean", "bytes_per_key_mean"):
        ins = statistics.mean(r[key] for r in rows if r["run"] == "in-process")
        att = statistics.mean(r[key] for r in rows if r["run"] == "attached")
        print(f"{key}: in-process {ins:.3f}, attached {att:.3f}, attached/in-process {att / ins:.3f}")


if __name__ == "__main__":
    main()
