#!/usr/bin/env python3
"""Idle cost of ratorrent's TUI with the Web API off and on, beside qbittorrent-nox, measured
by the team's bench harness (`bench.py idle`: every torrent checked and seeding, a settle,
then CPU over a window and the RSS / anonymous memory of the client's process tree), in one
run, clients interleaved round by round.

Clients (each a fresh process and state per run, the same N torrents of `make-idle`):
- `ratorrent-tui`: the TUI (under `script`, which gives it a terminal and is its parent, so
  the harness measures both; `script` itself is ~1 MiB), torrents on the command line, no
  `[webui]`;
- `ratorrent-tui-webui`: the same with `[webui]` enabled, nobody calling it;
- `ratorrent-webui-added`: `[webui]` enabled and every torrent added through it
  (`torrents/add` uploads, `torrents/info` polled until all seed), as the harness drives
  qBittorrent;
- `ratorrent-daemon`: `ratorrent daemon` (no terminal), API off, the torrents dropped into
  its watch folder (copies in the run's work folder);
- `ratorrent-daemon-webui`: `ratorrent daemon` with `[webui]` on and every torrent added
  through it, as the harness drives qBittorrent;
- `qbittorrent`: the harness's own qbittorrent-nox adapter (Web API adds).

Usage (root; the harness re-execs nothing here, so enter the network namespace first):

    RATBENCH_NETNS=1 unshare --net -- /usr/bin/python3 tests/benches/webui_idle.py \\
        BENCH_DIR RATORRENT_BIN idle --idle-dir /dev/shm/ratbench/idle100 \\
        --clients ratorrent-tui,ratorrent-tui-webui,ratorrent-webui-added,ratorrent-daemon,ratorrent-daemon-webui,qbittorrent \\
        --rounds 3 --settle 30 --window 30 --results results.jsonl

then `bench.py report results.jsonl`.
"""

import json
import os
import sys
import urllib.request
import uuid

BENCH, RAT = sys.argv[1], os.path.abspath(sys.argv[2])
sys.path.insert(0, BENCH)
import bench  # noqa: E402
import clients  # noqa: E402

PASSWORD = "bench-pw"


def config(work, port, web_port=None):
    """A config file in `work`: peers on `port`, no DHT, the Web API on `web_port`."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "config.toml")
    text = f"listen_port = {port}\nconfirm_quit = false\nmin_free_space = 0\n[dht]\nenabled = false\nbootstrap = []\n"
    if web_port:
        text += (f'[webui]\nenabled = true\nlisten = "127.0.0.1:{web_port}"\nusername = "admin"\n'
                 f'password = "{PASSWORD}"\n')
    with open(path, "w") as f:
        f.write(text)
    return path


def tui(cfg, data, torrent_dir=None):
    """The TUI under `script` (a terminal of 120x40; `exec` leaves no shell behind)."""
    args = f"stty cols 120 rows 40; exec {RAT} --config {cfg} -o {data}"
    if torrent_dir:
        args += f" {torrent_dir}/*.torrent"
    return ["script", "-q", "-e", "-c", args, "/dev/null"]


class RatTui(clients.Generic):
    """Torrents on the command line; nothing to ask, so the harness's settle covers the
    check (100 x 64 KiB: well under a second)."""
    name = "ratorrent-tui"
    web = False

    def __init__(self, work, port, *a, **k):
        super().__init__(work, port, name=self.name)

    def idle_cmd(self, torrent_dir, datadir):
        web_port = self.port + 1000 if self.web else None
        return tui(config(self.work, self.port, web_port), datadir, torrent_dir)


class RatTuiWebui(RatTui):
    name = "ratorrent-tui-webui"
    web = True


class RatWebuiAdded(clients.Adapter):
    """[webui] on, torrents added through it, readiness read from torrents/info."""
    name = "ratorrent-webui-added"
    cli = False
    DONE = {"uploading", "stalledUP", "pausedUP", "queuedUP", "forcedUP"}
    cookie = None

    def daemon_cmd(self, outdir):
        web = self.port + 1000
        self.api = f"http://127.0.0.1:{web}/api/v2"
        return tui(config(self.work, self.port, web), outdir)

    def _call(self, path, data=None, headers=None):
        h = dict(headers or {})
        if self.cookie:
            h["Cookie"] = self.cookie
        req = urllib.request.Request(self.api + path, data=data, headers=h)
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.read(), r.headers.get_all("Set-Cookie") or []

    def wait_api(self, proc):
        def login():
            body, cookies = self._call("/auth/login", f"username=admin&password={PASSWORD}".encode(),
                                       {"Content-Type": "application/x-www-form-urlencoded"})
            if body != b"Ok.":
                raise ConnectionError("login refused")
            self.cookie = cookies[0].split(";")[0]
        clients._wait_http(login, proc)

    def add(self, torrent, save_dir, paused=False):
        b = uuid.uuid4().hex
        with open(torrent, "rb") as f:
            tdata = f.read()
        parts = [(f'name="{k}"', v.encode()) for k, v in
                 (("savepath", save_dir), ("paused", str(paused).lower()), ("autoTMM", "false"))]
        parts.append(('name="torrents"; filename="x.torrent"\r\nContent-Type: application/x-bittorrent', tdata))
        body = b"".join(b"--%s\r\nContent-Disposition: form-data; %s\r\n\r\n%s\r\n" % (b.encode(), h.encode(), v)
                        for h, v in parts) + b"--%s--\r\n" % b.encode()
        r, _ = self._call("/torrents/add", body, {"Content-Type": f"multipart/form-data; boundary={b}"})
        if not r.startswith(b"Ok"):
            raise RuntimeError(f"ratorrent add: {r!r}")

    def count_ready(self):
        ts = json.loads(self._call("/torrents/info")[0])
        return sum(1 for t in ts if t["state"] in self.DONE), len(ts)


def daemon(cfg, data, watch=None):
    """`ratorrent daemon` (`exec`: the measured process is the daemon itself)."""
    args = [RAT, "--config", cfg, "daemon", "-o", data]
    if watch:
        args += ["--watch", watch]
    return args


class RatDaemon(clients.Generic):
    """The daemon, API off: the torrents go in through its watch folder (copies, so the
    idle set is never renamed); the harness's settle covers the adds and checks."""
    name = "ratorrent-daemon"

    def __init__(self, work, port, *a, **k):
        super().__init__(work, port, name=self.name)

    def idle_cmd(self, torrent_dir, datadir):
        watch = os.path.join(self.work, "watch")
        os.makedirs(watch, exist_ok=True)
        for f in os.listdir(torrent_dir):
            if f.endswith(".torrent"):
                with open(os.path.join(torrent_dir, f), "rb") as src, \
                        open(os.path.join(watch, f), "wb") as dst:
                    dst.write(src.read())
        return daemon(config(self.work, self.port), datadir, watch)


class RatDaemonWebui(RatWebuiAdded):
    """The daemon with `[webui]` on, every torrent added through it."""
    name = "ratorrent-daemon-webui"

    def daemon_cmd(self, outdir):
        web = self.port + 1000
        self.api = f"http://127.0.0.1:{web}/api/v2"
        return daemon(config(self.work, self.port, web), outdir)


for i, cls in enumerate((RatTui, RatTuiWebui, RatWebuiAdded, RatDaemon, RatDaemonWebui)):
    clients.ADAPTERS[cls.name] = cls
    clients.PORTS[cls.name] = 7011 + 2 * i

if __name__ == "__main__":
    sys.argv = [os.path.join(BENCH, "bench.py"), *sys.argv[3:]]
    bench.main()
