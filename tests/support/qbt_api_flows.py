#!/usr/bin/env python3
"""The core Web API flows through the `qbittorrent-api` package (PyPI), the client library
many seedbox tools use: log in, read the version and preferences, make a category, add a
magnet link and a .torrent file, wait for the downloads, read info/properties/files/
trackers, tags, share limits, pause/resume, set preferences, queue moves, delete with the
files, log out. Driven by tests/webui_python.rs against ratorrent; prints one line per step
and `ALL OK` at the end, exits 1 with the reason on the first failure.

Usage: qbt_api_flows.py HOST USER PASSWORD MAGNET MAGNET_HASH TORRENT_FILE TORRENT_HASH SAVE_DIR
"""

import sys
import time

import qbittorrentapi


def step(what):
    print(f"ok: {what}", flush=True)


def wait(what, cond, timeout=120.0):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = cond()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def main():
    host, user, password, magnet, mhash, tfile, thash, save_dir = sys.argv[1:9]
    c = qbittorrentapi.Client(
        host=host,
        username=user,
        password=password,
        REQUESTS_ARGS={"timeout": 60},
        RAISE_NOTIMPLEMENTEDERROR_FOR_UNIMPLEMENTED_API_ENDPOINTS=False,
    )
    # a wrong password is refused
    bad = qbittorrentapi.Client(host=host, username=user, password="wrong")
    try:
        bad.auth_log_in()
        raise AssertionError("a wrong password logged in")
    except qbittorrentapi.LoginFailed:
        step("wrong password refused")

    c.auth_log_in()
    assert c.is_logged_in, "not logged in"
    step("login")
    assert c.app.version.startswith("v4."), c.app.version
    assert c.app.web_api_version == "2.9.3", c.app.web_api_version
    step(f"version {c.app.version}, Web API {c.app.web_api_version}")

    prefs = c.app.preferences
    assert prefs["save_path"] == save_dir, prefs["save_path"]
    assert prefs["queueing_enabled"] is False
    step("preferences")

    c.torrents_create_category(name="py", save_path="")
    assert "py" in c.torrents_categories(), c.torrents_categories()
    c.torrents_create_tags(tags=["flow"])
    step("category and tag created")

    assert c.torrents_add(urls=magnet, category="py", tags=["flow", "magnet"]) == "Ok."
    info = c.torrents_info(torrent_hashes=mhash)
    assert len(info) == 1 and info[0].category == "py", info
    step("magnet added, listed at once")
    assert c.torrents_add(torrent_files=tfile, save_path=save_dir + "/py-files") == "Ok."
    assert len(c.torrents_info(torrent_hashes=thash)) == 1
    step(".torrent uploaded, listed at once")

    for h in (mhash, thash):
        t = wait(f"{h} complete", lambda: next(
            (t for t in c.torrents_info(torrent_hashes=h)
             if t.progress == 1 and t.state in ("uploading", "stalledUP")), None))
        assert t.content_path.startswith(t.save_path) and t.content_path != t.save_path, t
        assert t.amount_left == 0 and t.size > 0, t
    step("both complete and seeding")

    t = c.torrents_info(torrent_hashes=mhash)[0]
    assert set(t.tags.split(", ")) == {"flow", "magnet"}, t.tags
    props = c.torrents_properties(torrent_hash=mhash)
    assert props.save_path == t.save_path and props.pieces_have == props.pieces_num, props
    files = c.torrents_files(torrent_hash=mhash)
    assert files and all(f.progress == 1 for f in files), files
    trackers = c.torrents_trackers(torrent_hash=mhash)
    assert [x.url for x in trackers[:3]] == ["** [DHT] **", "** [PeX] **", "** [LSD] **"]
    step("info, properties, files, trackers")

    c.torrents_set_share_limits(ratio_limit=2, seeding_time_limit=60,
                                inactive_seeding_time_limit=-2, torrent_hashes=mhash)
    t = c.torrents_info(torrent_hashes=mhash)[0]
    assert (t.ratio_limit, t.seeding_time_limit) == (2, 60), t
    step("share limits")

    c.torrents_add_tags(tags="extra", torrent_hashes=mhash)
    c.torrents_remove_tags(tags="magnet", torrent_hashes=mhash)
    t = c.torrents_info(torrent_hashes=mhash)[0]
    assert set(t.tags.split(", ")) == {"flow", "extra"}, t.tags
    assert len(c.torrents_info(tag="extra")) == 1
    step("tags added and removed")

    before = c.torrents_info(torrent_hashes=mhash)[0]
    c.torrents_rename(torrent_hash=mhash, new_torrent_name="Renamed Album")
    t = c.torrents_info(torrent_hashes=mhash)[0]
    assert t.name == "Renamed Album", t.name
    assert t.content_path == before.content_path, (t.content_path, before.content_path)
    step("renamed (its files stay)")

    c.torrents_toggle_sequential_download(torrent_hashes=mhash)
    c.torrents_toggle_first_last_piece_priority(torrent_hashes=mhash)
    t = c.torrents_info(torrent_hashes=mhash)[0]
    assert t.seq_dl is True and t.f_l_piece_prio is True, t
    c.torrents_toggle_sequential_download(torrent_hashes=mhash)
    assert c.torrents_info(torrent_hashes=mhash)[0].seq_dl is False
    step("sequential download and first/last pieces toggled")

    c.torrents_pause(torrent_hashes=mhash)
    assert c.torrents_info(torrent_hashes=mhash)[0].state == "pausedUP"
    c.torrents_resume(torrent_hashes=mhash)
    wait("resumed", lambda: c.torrents_info(torrent_hashes=mhash)[0].state
         in ("uploading", "stalledUP"))
    step("pause and resume")

    try:
        c.torrents_top_priority(torrent_hashes=mhash)
        raise AssertionError("topPrio worked with queueing off")
    except qbittorrentapi.Conflict409Error:
        step("topPrio refused (409) while queueing is off")
    c.app_set_preferences(prefs={"queueing_enabled": True, "max_active_uploads": 5,
                                 "max_ratio_enabled": True, "max_ratio": 3.5})
    prefs = c.app.preferences
    assert prefs["queueing_enabled"] is True and prefs["max_active_uploads"] == 5, prefs
    assert prefs["max_ratio_enabled"] is True and prefs["max_ratio"] == 3.5, prefs
    c.torrents_top_priority(torrent_hashes=thash)
    order = sorted(c.torrents_info(), key=lambda t: t.priority)
    assert order[0].hash == thash, [(t.hash, t.priority) for t in order]
    step("preferences set; queue moves")

    transfer = c.transfer_info()
    assert transfer.dl_info_data > 0, transfer
    step("transfer info")

    c.torrents_delete(delete_files=True, torrent_hashes=[mhash, thash])
    assert c.torrents_info() == [], c.torrents_info()
    step("deleted with files")

    c.auth_log_out()
    try:
        c.torrents_info()
        # the library logs in again by itself after a 403: still logged in afterwards
        step("logged out (the library logged in again)")
    except qbittorrentapi.Forbidden403Error:
        step("logged out")
    print("ALL OK", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report any failure with its type
        print(f"FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)
