//! The other clients as seeders: qBittorrent (`qbittorrent-nox`) and Transmission
//! (`transmission-cli`), each with a profile of its own in a temporary folder, DHT, LSD, PEX,
//! UPnP/NAT-PMP and uTP off, seeding one torrent whose data is complete. They announce to
//! the torrent's tracker (the test waits for their `left=0` announce) and are killed on drop.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ratorrent::metainfo::InfoHash;

use super::tracker::TestTracker;

/// A seeding qBittorrent or Transmission process, killed (and its profile removed) on drop.
pub struct AnchorSeeder {
    /// Which client.
    pub name: &'static str,
    child: Child,
    /// Its listen port for peers (on 127.0.0.1).
    pub port: u16,
    dir: tempfile::TempDir,
}

impl AnchorSeeder {
    /// Where it accepts peers.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its log (stdout and stderr), for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// Wait until `tracker` heard it announce `ih` with nothing left (it verified the data).
    ///
    /// # Panics
    /// After `timeout`, with its log.
    pub fn wait_seeding(&self, tracker: &TestTracker, ih: InfoHash, timeout: Duration) {
        if let Err(e) = tracker.wait_for_announce(timeout, |a| {
            a.info_hash == ih && a.addr.port() == self.port && a.left == Some(0)
        }) {
            panic!("{} never announced left=0: {e}\n{}", self.name, self.log());
        }
    }

    /// qBittorrent seeding `torrent` (data in `data_dir`) on `port`, with encryption
    /// `Session\Encryption` = `encryption` (0 allow, 1 require, 2 disable).
    ///
    /// # Panics
    /// When it cannot start.
    pub fn qbittorrent(torrent: &Path, data_dir: &Path, port: u16, encryption: u8) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("ratorrent-qbt-")
            .tempdir()
            .unwrap();
        let conf = dir.path().join("qBittorrent/config");
        std::fs::create_dir_all(&conf).unwrap();
        let web = super::free_port();
        std::fs::write(
            conf.join("qBittorrent.conf"),
            format!(
                "[LegalNotice]\nAccepted=true\n\n[BitTorrent]\nSession\\DHTEnabled=false\n\
                 Session\\LSDEnabled=false\nSession\\PeXEnabled=false\nSession\\Port={port}\n\
                 Session\\BTProtocol=TCP\nSession\\QueueingSystemEnabled=false\n\
                 Session\\Encryption={encryption}\nSession\\AnonymousModeEnabled=false\n\
                 Session\\DefaultSavePath={}\nSession\\TempPathEnabled=false\n\n[Network]\n\
                 PortForwardingEnabled=false\n\n[Preferences]\n\
                 Connection\\ResolvePeerCountries=false\nWebUI\\Address=127.0.0.1\n\
                 WebUI\\Port={web}\nWebUI\\LocalHostAuth=false\n",
                data_dir.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new("qbittorrent-nox")
            .arg(format!("--profile={}", dir.path().display()))
            .arg(format!("--webui-port={web}"))
            .arg(format!("--save-path={}", data_dir.display()))
            .arg("--skip-dialog=true")
            .arg(torrent)
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("qbittorrent-nox (apt-get install qbittorrent-nox)");
        AnchorSeeder {
            name: "qBittorrent",
            child,
            port,
            dir,
        }
    }

    /// Transmission (`transmission-cli`) seeding `torrent` (data in `data_dir`) on `port`,
    /// with `encryption` in its settings.json (0 prefer plaintext, 1 prefer encryption,
    /// 2 require encryption) and the matching command-line switch.
    ///
    /// # Panics
    /// When it cannot start.
    pub fn transmission(torrent: &Path, data_dir: &Path, port: u16, encryption: u8) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("ratorrent-tr-")
            .tempdir()
            .unwrap();
        let cfg = dir.path().join("cfg");
        std::fs::create_dir_all(&cfg).unwrap();
        let settings = serde_json::json!({
            "dht-enabled": false, "lpd-enabled": false, "pex-enabled": false,
            "utp-enabled": false, "port-forwarding-enabled": false,
            "peer-port": port, "peer-port-random-on-start": false,
            "bind-address-ipv4": "127.0.0.1", "encryption": encryption,
            "rpc-enabled": false, "blocklist-enabled": false,
            "ratio-limit-enabled": false, "idle-seeding-limit-enabled": false,
            "download-dir": data_dir, "incomplete-dir-enabled": false,
            "message-level": 2,
        });
        std::fs::write(cfg.join("settings.json"), settings.to_string()).unwrap();
        let switch = match encryption {
            2 => "-er",
            1 => "-ep",
            _ => "-et",
        };
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new("transmission-cli")
            .arg("-g")
            .arg(&cfg)
            .arg("-w")
            .arg(data_dir)
            .args(["-p", &port.to_string(), "-M", switch])
            .arg(torrent)
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("transmission-cli (apt-get install transmission-cli)");
        AnchorSeeder {
            name: "Transmission",
            child,
            port,
            dir,
        }
    }
}

impl Drop for AnchorSeeder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
