//! The list's sort and state filter kept across runs, in a small TOML file of the TUI's own
//! (`tui-view.toml` in the session state's folder, `$XDG_DATA_HOME/ratorrent`): the TUI that attaches to a
//! daemon keeps its own view, whatever the engine's state.
//!
//! ```toml
//! sort = "ratio"
//! reverse = false
//! filter = "seeding"
//! category = "tv"    # "-": without a category; absent: all
//! tag = "hd"
//! ```
//!
//! A missing, unreadable or damaged file is the default view (added order, all torrents):
//! the view is a convenience, never a reason not to start.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::list::{LabelFilter, SortColumn, StateFilter, View};

#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    sort: String,
    reverse: bool,
    filter: String,
    /// The category filter: a name, `-` for none; absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    /// The tag filter, as `category`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
}

/// What the file keeps of the view.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SavedView {
    /// The sort column.
    pub sort: SortColumn,
    /// Its direction turned round.
    pub reverse: bool,
    /// The state filter.
    pub filter: StateFilter,
    /// The category filter.
    pub category: LabelFilter,
    /// The tag filter.
    pub tag: LabelFilter,
}

/// The sort column, its direction and the filters saved in `path`; `None` when the
/// file is missing or not one this module wrote (an unknown name in it is ignored).
pub fn load(path: &Path) -> Option<SavedView> {
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
    Some(SavedView {
        sort,
        reverse: saved.reverse,
        filter,
        category: LabelFilter::from_label(saved.category.as_deref()),
        tag: LabelFilter::from_label(saved.tag.as_deref()),
    })
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
        category: view.category.label().map(str::to_owned),
        tag: view.tag.label().map(str::to_owned),
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
            category: LabelFilter::Is("tv/hd".to_owned()),
            tag: LabelFilter::None,
        };
        save(&path, &view).unwrap();
        assert_eq!(
            load(&path),
            Some(SavedView {
                sort: SortColumn::Ratio,
                reverse: true,
                filter: StateFilter::Seeding,
                category: LabelFilter::Is("tv/hd".to_owned()),
                tag: LabelFilter::None,
            })
        );
        std::fs::write(&path, "sort = \"nope\"\nreverse = false\nfilter = \"??\"\n").unwrap();
        assert_eq!(
            load(&path),
            Some(SavedView::default()),
            "unknown names: the default"
        );
        std::fs::write(&path, "\u{0}garbage [[").unwrap();
        assert_eq!(load(&path), None);
    }
}
