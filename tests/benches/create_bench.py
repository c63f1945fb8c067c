#!/usr/bin/env python3
"""Time `ratorrent create` beside mktorrent and libtorrent's creator on the same data.

    /usr/bin/python3 tests/benches/create_bench.py --ratorrent target/release/ratorrent \
        --size-mib 1024 --rounds 3 --results assets/bench/DATE/create-1gib.jsonl

The data is one file of `--size-mib` MiB of random bytes in `--dir` (default /dev/shm, so the
page cache holds it and the figures are hashing, not the disk); it is read once before the
first round. Each round runs every tool once, in a rotated order, with 1 MiB pieces:

- ratorrent create --format v1 / hybrid / v2 (its default thread count: one per core)
- mktorrent -l 20 (v1; with -t N when --mktorrent-threads is given)
- libtorrent (python3-libtorrent) create_torrent v1_only / default (hybrid) +
  set_piece_hashes

For each run: wall seconds, CPU seconds (user + system of the child, from wait4), MiB/s
of wall time and CPU seconds per GiB. One JSON row per run goes to --results, a table
of medians to stdout. Every tool must exit 0 and write its .torrent; the v1 info hashes
of the v1 torrents of all three tools must be equal (same bytes, same piece size, same
name), else the script exits 1.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LT_SCRIPT = r"""
import libtorrent as lt, sys
path, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
fs = lt.file_storage()
lt.add_files(fs, path)
flags = lt.create_torrent.v1_only if mode == "v1" else 0
ct = lt.create_torrent(fs, 1 << 20, flags=flags)
lt.set_piece_hashes(ct, __import__("os").path.dirname(path))
open(out, "wb").write(lt.bencode(ct.generate()))
"""


def run(cmd):
    """Run `cmd`; (wall s, cpu s) of the child. Exits on failure."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{cmd[0]} exited {code}: {err}")
    return wall, ru.ru_utime + ru.ru_stime


def v1_hash(torrent):
    out = subprocess.run(
        [sys.executable, "-c",
         "import libtorrent as lt,sys; ih=lt.torrent_info(sys.argv[1]).info_hashes();"
         "print(ih.v1 if ih.has_v1() else '-')", torrent],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ratorrent", required=True)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--mktorrent-threads", type=int, default=0)
    ap.add_argument("--results", required=True)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="create-bench-", dir=a.dir)
    data = os.path.join(work, "payload.bin")
    with open(data, "wb") as f:
        for _ in range(a.size_mib):
            f.write(os.urandom(1 << 20))
    with open(data, "rb") as f:
        while f.read(8 << 20):
            pass
    gib = a.size_mib / 1024

    def out(tool):
        p = os.path.join(work, tool + ".torrent")
        if os.path.exists(p):
            os.remove(p)
        return p

    mk = ["mktorrent", "-l", "20"]
    if a.mktorrent_threads:
        mk += ["-t", str(a.mktorrent_threads)]
    tools = {
        "ratorrent-v1": lambda o: [a.ratorrent, "create", data, "-o", o, "--format", "v1",
                                   "--piece-size", "1M", "--no-date", "--quiet"],
        "ratorrent-hybrid": lambda o: [a.ratorrent, "create", data, "-o", o, "--format",
                                       "hybrid", "--piece-size", "1M", "--no-date", "--quiet"],
        "ratorrent-v2": lambda o: [a.ratorrent, "create", data, "-o", o, "--format", "v2",
                                   "--piece-size", "1M", "--no-date", "--quiet"],
        "mktorrent-v1": lambda o: mk + ["-o", o, data],
        "libtorrent-v1": lambda o: [sys.executable, "-c", LT_SCRIPT, data, o, "v1"],
        "libtorrent-hybrid": lambda o: [sys.executable, "-c", LT_SCRIPT, data, o, "hybrid"],
    }
    names = list(tools)
    rows = []
    with open(a.results, "a") as res:
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            hashes = {}
            for name in order:
                o = out(name)
                wall, cpu = run(tools[name](o))
                if not os.path.exists(o):
                    sys.exit(f"{name} wrote no torrent")
                if name.endswith("-v1"):
                    hashes[name] = v1_hash(o)
                row = {"tool": name, "round": r + 1, "size_mib": a.size_mib,
                       "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                       "mib_per_s": round(a.size_mib / wall, 1),
                       "cpu_s_per_gib": round(cpu / gib, 3),
                       "cores": os.cpu_count()}
                rows.append(row)
                res.write(json.dumps(row) + "\n")
                res.flush()
            if len(set(hashes.values())) != 1:
                sys.exit(f"v1 info hashes differ: {hashes}")
    print(f"{a.size_mib} MiB, 1 MiB pieces, {a.rounds} rounds, medians "
          f"({os.cpu_count()} cores; v1 info hashes equal across tools)")
    print(f"{'tool':<20}{'wall s':>9}{'MiB/s':>9}{'CPU s':>9}{'CPU s/GiB':>11}")
    for name in names:
        rs = [x for x in rows if x["tool"] == name]
        w = statistics.median(x["wall_s"] for x in rs)
        c = statistics.median(x["cpu_s"] for x in rs)
        print(f"{name:<20}{w:>9.2f}{a.size_mib / w:>9.1f}{c:>9.2f}{c / gib:>11.2f}")
    subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    main()
