//! The list's sort and state filter kept across runs, in a small TOML file of the TUI's own
//! (`tui-view.toml` in the session state's folder, `$XDG_DATA_HOME/ratorrent`): the TUI that attaches to a
//! daemon keeps its own view, whatever the engine's state.
//!
//! ```toml
//! sort = "ratio"
//! reverse = false
//! filter = "seeding"
//! ```
//!
//! A missing, unreadable or damaged file is the default view (added order, all torrents):
//! the view is a convenience, never a reason not to start.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::list::{SortColumn, StateFilter, View};

#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    sort: String,
    reverse: bool,
    filter: String,
}

/// The sort column, its direction and the state filter saved in `path`; `None` when the
/// file is missing or not one this module wrote (an unknown name in it is ignored).
pub fn load(path: &Path) -> Option<(SortColumn, bool, StateFilter)> {
    let text = std::fs::read_to_string(path).ok()?;
    let saved: Saved = toml::from_str(&text).ok()?;
    let sort = SortColumn::ALL
        .into_iter()
        .find(|c| c.column_name() == saved.sort)
        .unwrap_or_default();
    let filter = StateFilter::ALL
        .into_iter()
        .find(|f| f.label().eq_ignore_ascii_case(&saved.filter))
        .unwrap_or_default();
    Some((sort, saved.reverse, filter))
}

/// Write `view`'s sort and filter (not its search) to `path`, replacing it atomically.
///
/// # Errors
/// The folder cannot be made or the file written.
pub fn save(path: &Path, view: &View) -> std::io::Result<()> {
    let saved = Saved {
        sort: view.sort.column_name().to_owned(),
        reverse: view.reverse,
        filter: view.filter.label().to_lowercase(),
    };
    let text = toml::to_string(&saved).map_err(std::io::Error::other)?;
    crate::atomic_write::write(
        path,
        text.as_bytes(),
        crate::atomic_write::Durability::Synced,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_view_comes_back_and_a_bad_file_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("tui-view.toml");
        assert_eq!(load(&path), None, "missing");
        let view = View {
            sort: SortColumn::Ratio,
            reverse: true,
            filter: StateFilter::Seeding,
            query: "not kept".to_owned(),
        };
        save(&path, &view).unwrap();
        assert_eq!(
            load(&path),
            Some((SortColumn::Ratio, true, StateFilter::Seeding))
        );
        std::fs::write(&path, "sort = \"nope\"\nreverse = false\nfilter = \"??\"\n").unwrap();
        assert_eq!(
            load(&path),
            Some((SortColumn::Added, false, StateFilter::All)),
            "unknown names: the default"
        );
        std::fs::write(&path, "\u{0}garbage [[").unwrap();
        assert_eq!(load(&path), None);
    }
}
