#!/usr/bin/env bash
# Idle cost of the TUI beside rtorrent: bytes written to the terminal per second and CPU %
# of one core over 60 s, with N idle (complete, seeding, no peers) torrents open in tmux.
#
#   apt-get install -y rtorrent tmux python3-libtorrent
#   cargo build --release
#   bash tests/benches/idle_vs_rtorrent.sh 100 1000
#
# Everything stays on 127.0.0.1: a tiny tracker answers every announce with no peers
# (interval 30 min). tmux pipe-pane counts the bytes each client writes to its pane after a
# 20 s warm-up (start-up, checking, first announce); CPU is utime+stime from /proc over the
# same 60 s. Window 200x50, LANG=C.UTF-8, TERM=screen (tmux default).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-$PWD/target/release/ratorrent}
WORK=${WORK:-/tmp/ratorrent-idle}
SECS=${SECS:-60}
WARM=${WARM:-20}
rm -rf "$WORK" && mkdir -p "$WORK"

# tracker: empty peer list, long interval
TPORT=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
/usr/bin/python3 - "$TPORT" <<'PY' &
import sys, http.server
body = b"d8:completei1e10:incompletei0e8:intervali1800e5:peers0:e"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
class S(http.server.ThreadingHTTPServer):
    request_queue_size = 4096  # 1000 torrents announce at once
    def handle_error(self, *a): pass  # clients that hang up early
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
TRACKER_PID=$!
trap 'kill $TRACKER_PID 2>/dev/null; tmux -L idle kill-server 2>/dev/null || true' EXIT

make_torrents() { # N DIR
  /usr/bin/python3 - "$1" "$2" "$TPORT" <<'PY'
import os, sys, libtorrent as lt
n, d, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.makedirs(f"{d}/data", exist_ok=True); os.makedirs(f"{d}/torrents", exist_ok=True)
for i in range(n):
    name = f"idle-{i:04d}.bin"
    with open(f"{d}/data/{name}", "wb") as f: f.write(os.urandom(32 * 1024))
    fs = lt.file_storage(); lt.add_files(fs, f"{d}/data/{name}")
    t = lt.create_torrent(fs, 16 * 1024); t.add_tracker(f"http://127.0.0.1:{port}/announce")
    lt.set_piece_hashes(t, f"{d}/data")
    with open(f"{d}/torrents/{name}.torrent", "wb") as f: f.write(lt.bencode(t.generate()))
PY
}

measure() { # NAME CMD
  local name=$1 cmd=$2 out="$WORK/$1.bytes"
  tmux -L idle new-session -d -s m -x 200 -y 50 -e LANG=C.UTF-8 "exec $cmd"
  sleep "$WARM"
  local pid; pid=$(tmux -L idle list-panes -t m -F '#{pane_pid}')
  : > "$out"
  tmux -L idle pipe-pane -t m -o "cat >> $out"
  local t0; t0=$(awk '{print $14+$15}' /proc/"$pid"/stat)
  sleep "$SECS"
  local t1; t1=$(awk '{print $14+$15}' /proc/"$pid"/stat)
  tmux -L idle pipe-pane -t m
  tmux -L idle capture-pane -p -t m > "$WORK/$name.screen"
  local hz; hz=$(getconf CLK_TCK)
  local bytes; bytes=$(stat -c %s "$out")
  awk -v n="$name" -v b="$bytes" -v s="$SECS" -v t="$((t1 - t0))" -v hz="$hz" \
    'BEGIN { printf "%-24s %10.1f bytes/s %8.3f %% CPU\n", n, b / s, 100 * t / hz / s }'
  tmux -L idle kill-server 2>/dev/null || true
  # let it finish its shutdown (tracker `stopped`) and free its port
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
}

for n in "$@"; do
  d="$WORK/n$n"; make_torrents "$n" "$d"
  port() { /usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
  rport=$(port)
  # the DHT off on both sides (rtorrent: dht.mode.set=disable below)
  printf 'listen_port = %s\nseed_after_download = true\n[dht]\nenabled = false\n' "$rport" > "$d/ratorrent.toml"
  mkdir -p "$d/state"
  measure "ratorrent-$n" "env XDG_STATE_HOME=$d/state XDG_DATA_HOME=$d/data-home $BIN --config $d/ratorrent.toml -o $d/data $d/torrents/*.torrent"
  mkdir -p "$d/rtsession"
  rport=$(port)
  measure "rtorrent-$n" "rtorrent -n -o directory.default.set=$d/data -o session.path.set=$d/rtsession \
    -o network.port_range.set=$rport-$rport -o dht.mode.set=disable -o protocol.pex.set=no \
    -o trackers.use_udp.set=no $d/torrents/*.torrent"
done
