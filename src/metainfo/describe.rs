//! Human-readable summary of a torrent, for `ratorrent info`.

use std::fmt::Write;

use super::Metainfo;
use crate::units::size_and_bytes;
use crate::untrusted::escape;

/// `YYYY-MM-DD HH:MM:SS UTC` for a Unix time in seconds, or `None` outside years 0..=9999.
fn utc_date(unix: i64) -> Option<String> {
    // 0000-01-01 00:00:00 ..= 9999-12-31 23:59:59, far inside i64 for the arithmetic below
    if !(-62_167_219_200..=253_402_300_799).contains(&unix) {
        return None;
    }
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian), with years starting
    // in March so that the leap day falls at the end.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    Some(format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    ))
}

impl Metainfo {
    /// A multi-line summary for `ratorrent info`: name, info hash(es) in hex, the format
    /// (v1, v2, hybrid) and any piece layers missing, piece size
    /// and count, total size (padding excluded, and shown on its own line when present),
    /// private flag, creation details, trackers by tier (BEP 12), web seeds (BEP 19) and
    /// the files with their sizes (padding files hidden) and symlink entries marked. Names
    /// and paths are the ones used on disk ([`Metainfo::saved_name`], [`super::FileInfo::path`]),
    /// never the torrent's raw ones, each followed by what sanitising or renaming changed
    /// ([`super::PathChanges`]). Text from the torrent is escaped by
    /// [`crate::untrusted::escape`]. Ends with a newline.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        // the name used on disk, never the torrent's raw one; and what was changed
        let _ = write!(s, "Name:          {}", escape(self.saved_name()));
        if let Some(why) = self.name_changes.describe() {
            let _ = write!(s, "  (changed from the torrent's name: {why})");
        }
        s.push('\n');
        let version = self.version();
        if version == super::MetaVersion::V2 {
            let _ = writeln!(s, "Info hash v1:  none (a v2-only torrent)");
        } else {
            let _ = writeln!(s, "Info hash v1:  {}", self.info_hash.to_hex());
        }
        if let Some(v2) = &self.info_hash_v2 {
            let _ = writeln!(s, "Info hash v2:  {}", data_encoding::HEXLOWER.encode(v2));
        }
        let _ = writeln!(
            s,
            "Format:        {}",
            match version {
                super::MetaVersion::V1 => "v1 (BEP 3)".to_owned(),
                super::MetaVersion::V2 => format!(
                    "v2 (BEP 52; known on the wire by {})",
                    self.info_hash.to_hex()
                ),
                super::MetaVersion::Hybrid => "hybrid (v1 + v2, BEP 52)".to_owned(),
            }
        );
        if let Some(v2) = self.v2.as_ref().filter(|v| !v.complete()) {
            let missing = v2
                .files
                .iter()
                .filter(|f| f.needs_layer(v2.piece_length) && f.layer.is_none())
                .count();
            let _ = writeln!(
                s,
                "Piece layers:  missing for {missing} file(s) (peers send them, BEP 52)"
            );
        }
        let _ = writeln!(
            s,
            "Pieces:        {} x {}",
            self.piece_count(),
            size_and_bytes(u64::from(self.piece_length))
        );
        let _ = writeln!(s, "Total size:    {}", size_and_bytes(self.payload_size()));
        let pads = self.files.iter().filter(|f| f.pad).count();
        if pads > 0 && self.version() == super::MetaVersion::V2 {
            // a v2-only torrent has no padding files: its files each start a piece (BEP 52),
            // and the gaps are ours, to lay the files out as pieces
            let _ = writeln!(
                s,
                "Alignment:     {} after {pads} file(s) (BEP 52: each file starts a piece; not written to disk)",
                size_and_bytes(self.total_length - self.payload_size())
            );
        } else if pads > 0 {
            let _ = writeln!(
                s,
                "Padding:       {} in {pads} padding file(s) (BEP 47, not written to disk)",
                size_and_bytes(self.total_length - self.payload_size())
            );
        }
        let _ = writeln!(
            s,
            "Private:       {}",
            if self.private {
                "yes (BEP 27: trackers only)"
            } else {
                "no"
            }
        );
        if let Some(by) = &self.created_by {
            let _ = writeln!(s, "Created by:    {}", escape(by));
        }
        if let Some(date) = self.creation_date {
            match utc_date(date) {
                Some(d) => {
                    let _ = writeln!(s, "Created on:    {d}");
                }
                None => {
                    let _ = writeln!(s, "Created on:    {date} (Unix time)");
                }
            }
        }
        if let Some(c) = &self.comment {
            let _ = writeln!(s, "Comment:       {}", escape(c));
        }
        if self.trackers.is_empty() {
            let _ = writeln!(s, "Trackers:      none");
        } else {
            let _ = writeln!(s, "Trackers:");
            for (i, tier) in self.trackers.iter().enumerate() {
                for (j, url) in tier.iter().enumerate() {
                    let label = if j == 0 {
                        format!("tier {}:", i + 1)
                    } else {
                        String::new()
                    };
                    // a passkey in the URL is never printed (as for a magnet link)
                    let masked = crate::net::mask_passkey(url);
                    let _ = writeln!(s, "  {label:<9}{}", escape(&masked));
                }
            }
        }
        if !self.web_seeds.is_empty() {
            let _ = writeln!(s, "Web seeds:");
            for url in &self.web_seeds {
                let _ = writeln!(s, "  {}", escape(url));
            }
        }
        let visible: Vec<_> = self.files.iter().filter(|f| !f.pad).collect();
        let _ = writeln!(s, "Files ({}):", visible.len());
        for f in visible {
            // the path used on disk (sanitised, renamed), never the torrent's raw one
            let shown = f.path.to_string_lossy();
            let _ = write!(s, "  {}  {}", escape(&shown), size_and_bytes(f.length));
            if f.symlink {
                match &f.symlink_target {
                    Some(t) => {
                        let _ = write!(
                            s,
                            "  (symlink to {}: saved as an empty file)",
                            escape(&t.to_string_lossy())
                        );
                    }
                    None => {
                        let _ = write!(s, "  (symlink: saved as an empty file)");
                    }
                }
            }
            if let Some(why) = f.changes.describe().filter(|_| self.multi_file) {
                let _ = write!(s, "  (changed from the torrent's path: {why})");
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0).unwrap(), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_date(1_700_000_000).unwrap(), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc_date(951_782_400).unwrap(), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_date(-1).unwrap(), "1969-12-31 23:59:59 UTC");
        assert_eq!(
            utc_date(253_402_300_799).unwrap(),
            "9999-12-31 23:59:59 UTC"
        );
        assert_eq!(
            utc_date(-62_167_219_200).unwrap(),
            "0000-01-01 00:00:00 UTC"
        );
        assert_eq!(utc_date(-62_167_219_201), None);
        assert_eq!(utc_date(i64::MAX), None);
        assert_eq!(utc_date(i64::MIN), None);
    }

    #[test]
    fn a_v2_torrent_shows_its_file_alignment_and_a_hybrid_its_padding_files() {
        use crate::metainfo::MetaVersion;
        use crate::metainfo::create::TorrentBuilder;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("two");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.bin"), vec![1u8; 40_000]).unwrap();
        std::fs::write(root.join("b.bin"), vec![2u8; 10_000]).unwrap();
        // v2: each file starts a piece (40,000 bytes end 9,152 short of a 16 KiB boundary,
        // 10,000 end 6,384 short); a hybrid pads between files only (BEP 47)
        for (version, want, not) in [
            (
                MetaVersion::V2,
                "Alignment:     15.2 KiB (15536 bytes) after 2 file(s) (BEP 52",
                "Padding:",
            ),
            (
                MetaVersion::Hybrid,
                "Padding:       8.94 KiB (9152 bytes) in 1 padding file(s) (BEP 47",
                "Alignment:",
            ),
        ] {
            let (_, m) = TorrentBuilder::new(&root)
                .version(version)
                .piece_length(16 * 1024)
                .build_meta()
                .unwrap();
            let text = m.describe();
            assert!(text.contains(want), "{version:?}: {text}");
            assert!(!text.contains(not), "{version:?}: {text}");
        }
    }
}
