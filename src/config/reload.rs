//! The config file read again while running (the daemon's SIGHUP): what changed, what
//! takes effect at once ([`RELOADED`]), what a TUI reads when it attaches ([`UI_KEYS`]),
//! and what waits for the next start (every other key: ports, folders, DHT, storage,
//! queue, seeding goals, categories, hooks).

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::Config;

/// The keys a reload applies at once: the session's rate limits (both pairs) and the
/// watch folder. (The `alt_upload` action of a seeding goal keeps the
/// `alt_upload_rate_limit` read at start.)
pub const RELOADED: [&str; 5] = [
    "download_rate_limit",
    "upload_rate_limit",
    "alt_download_rate_limit",
    "alt_upload_rate_limit",
    "watch_dir",
];

/// The keys only the TUI reads: each TUI reads them when it starts (or attaches).
pub const UI_KEYS: [&str; 6] = [
    "ascii",
    "mouse",
    "confirm_quit",
    "columns",
    "keys",
    "colors",
];

/// What a reload does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reload {
    /// The session rate limits to set, bytes/s: (download, upload, alternative download,
    /// alternative upload), when one of them changed.
    pub limits: Option<(u64, u64, u64, u64)>,
    /// The watch folder to watch from now on (`Some(None)`: none), when it changed.
    pub watch_dir: Option<Option<PathBuf>>,
    /// Changed keys of the TUI (read when a TUI attaches).
    pub ui: Vec<String>,
    /// Changed keys that take effect at the next start.
    pub restart: Vec<String>,
}

/// The top-level keys whose values differ between two config texts (a table key stands
/// for everything in it, e.g. `dht`). A text that does not parse counts as empty.
pub fn changed_keys(old: &str, new: &str) -> Vec<String> {
    let parse = |t: &str| toml::from_str::<toml::Table>(t).unwrap_or_default();
    let (a, b) = (parse(old), parse(new));
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// What to do after reading `new` over `old` (both with the command line's overrides
/// applied), `changed` being [`changed_keys`] of their files.
pub fn plan(old: &Config, new: &Config, changed: &[String]) -> Reload {
    let limits = |c: &Config| {
        (
            c.engine.download_rate_limit,
            c.engine.upload_rate_limit,
            c.engine.alt_download_rate_limit,
            c.engine.alt_upload_rate_limit,
        )
    };
    let mut reload = Reload {
        limits: (limits(old) != limits(new)).then(|| limits(new)),
        watch_dir: (old.watch_dir != new.watch_dir).then(|| new.watch_dir.clone()),
        ..Reload::default()
    };
    for key in changed {
        if RELOADED.contains(&key.as_str()) {
            continue;
        }
        if UI_KEYS.contains(&key.as_str()) {
            reload.ui.push(key.clone());
        } else {
            reload.restart.push(key.clone());
        }
    }
    reload
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str) -> Config {
        Config::from_toml(text, Path::new("/c.toml")).unwrap()
    }

    #[test]
    fn limits_and_the_watch_folder_apply_the_rest_is_named() {
        let old_text = "download_rate_limit = \"1M\"\nlisten_port = 6881\nmouse = true\n[dht]\nenabled = true\n";
        let new_text = "download_rate_limit = \"2M\"\nalt_upload_rate_limit = 100\nlisten_port = 7000\nwatch_dir = \"/w\"\nmouse = false\n[dht]\nenabled = false\n";
        let changed = changed_keys(old_text, new_text);
        assert_eq!(
            changed,
            [
                "alt_upload_rate_limit",
                "dht",
                "download_rate_limit",
                "listen_port",
                "mouse",
                "watch_dir"
            ]
        );
        let r = plan(&config(old_text), &config(new_text), &changed);
        // alt_download_rate_limit keeps its default (10 MiB/s)
        assert_eq!(r.limits, Some((2 << 20, 0, 10 << 20, 100)));
        assert_eq!(r.watch_dir, Some(Some(PathBuf::from("/w"))));
        assert_eq!(r.ui, ["mouse"]);
        assert_eq!(r.restart, ["dht", "listen_port"]);
    }

    #[test]
    fn nothing_changed_is_nothing_to_do() {
        let text = "upload_rate_limit = 5\n";
        assert!(changed_keys(text, text).is_empty());
        assert_eq!(plan(&config(text), &config(text), &[]), Reload::default());
        // the same value written another way: no limit to set
        let r = plan(
            &config("upload_rate_limit = 1024\n"),
            &config("upload_rate_limit = \"1K\"\n"),
            &changed_keys("upload_rate_limit = 1024\n", "upload_rate_limit = \"1K\"\n"),
        );
        assert_eq!(r.limits, None);
        assert!(r.restart.is_empty());
    }
}
