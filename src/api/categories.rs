//! Categories and tags, as qBittorrent has them.
//!
//! A category is a name with a save path (and optionally a separate path used while
//! downloading, the data moving to the save path on completion) and optionally its own
//! seeding goals. Names nest by `/` (`tv/hd` is a subcategory of `tv`). A torrent has at
//! most one category; with automatic management on (qBittorrent's "automatic torrent
//! management", `auto_tmm`), its data lives where its category says and moves when the
//! category changes. Tags are free labels, any number per torrent.
//!
//! The rules for a name or a tag are here so that every front end refuses the same input
//! with the same words ([`check_category_name`], [`check_tag`]).

use serde::{Deserialize, Serialize};

use std::path::PathBuf;

use super::goals::ShareLimits;

/// A category as created or edited ([`Command::CreateCategory`](super::Command),
/// [`Command::EditCategory`](super::Command)), with its paths as given.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Category {
    /// The name, e.g. `tv` or `tv/hd` (see [`check_category_name`]).
    pub name: String,
    /// Where the data of its torrents goes. Empty: implicit, qBittorrent's rule: the parent
    /// category's save path joined with the last part of the name (`tv/hd` →
    /// `<tv's path>/hd`), and for a top-level category the session's download folder
    /// joined with the name. A relative path is taken under the session's download folder.
    #[serde(with = "super::serde_forms::path")]
    pub save_path: PathBuf,
    /// Where the data is while downloading; moved to the save path on completion. `None`:
    /// none of its own: the parent's download path joined with the last part of the name
    /// when the parent has one, else none (the data goes straight to the save path). A
    /// relative path is taken under the session's download folder.
    #[serde(with = "super::serde_forms::opt_path")]
    pub download_path: Option<PathBuf>,
    /// Its seeding goals, used by its torrents whose own limit is -2 ("use the default")
    /// before the session's `[seeding]`: -2 here passes on to the parent category, then the
    /// session; -1 none; >= 0 the limit (ratio; minutes).
    pub limits: ShareLimits,
}

/// A category as the snapshot lists it: as given, and the paths it resolves to.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CategoryInfo {
    /// The category as created or edited.
    pub category: Category,
    /// The save path in effect (absolute).
    #[serde(with = "super::serde_forms::path")]
    pub save_path: PathBuf,
    /// The download path in effect (absolute), if any.
    #[serde(with = "super::serde_forms::opt_path")]
    pub download_path: Option<PathBuf>,
}

/// Longest category name or tag, in bytes.
pub const MAX_LABEL_LEN: usize = 255;

/// Check a category name: qBittorrent's rule (not empty, no `\`, no `/` at either end, no
/// `//`), and also no control character and no `.` or `..` part (the implicit save path
/// joins the parts as folders, so none may step outside).
///
/// # Errors
/// What is wrong, e.g. `category "tv/": no "/" at the start or the end`.
pub fn check_category_name(name: &str) -> Result<(), String> {
    let fail = |why: &str| Err(format!("category {name:?}: {why}"));
    if name.trim().is_empty() {
        return fail("the name is empty");
    }
    if name.len() > MAX_LABEL_LEN {
        return fail("longer than 255 bytes");
    }
    if name.chars().any(char::is_control) {
        return fail("control characters are not allowed");
    }
    if name.contains('\\') {
        return fail("\"\\\" is not allowed (\"/\" makes subcategories)");
    }
    if name.starts_with('/') || name.ends_with('/') {
        return fail("no \"/\" at the start or the end");
    }
    if name.contains("//") {
        return fail("no empty part between \"/\"");
    }
    if name
        .split('/')
        .any(|p| p.trim().is_empty() || p == "." || p == "..")
    {
        return fail("a part between \"/\" is blank, \".\" or \"..\"");
    }
    Ok(())
}

/// Check a tag: qBittorrent's rule (not empty, no `,`, no blanks at either end), and no
/// control character.
///
/// # Errors
/// What is wrong, e.g. `tag "a,b": no "," (it separates tags)`.
pub fn check_tag(tag: &str) -> Result<(), String> {
    let fail = |why: &str| Err(format!("tag {tag:?}: {why}"));
    if tag.is_empty() {
        return fail("the tag is empty");
    }
    if tag.trim() != tag {
        return fail("no blanks at the start or the end");
    }
    if tag.len() > MAX_LABEL_LEN {
        return fail("longer than 255 bytes");
    }
    if tag.contains(',') {
        return fail("no \",\" (it separates tags)");
    }
    if tag.chars().any(char::is_control) {
        return fail("control characters are not allowed");
    }
    Ok(())
}

/// The parent of a category name: `tv` for `tv/hd`, `None` for `tv`.
pub fn parent_category(name: &str) -> Option<&str> {
    name.rsplit_once('/').map(|(parent, _)| parent)
}

/// Whether `name` is `category` or one of its subcategories (`tv/hd` is in `tv`; `tvx`
/// is not).
pub fn in_category(name: &str, category: &str) -> bool {
    name == category
        || name
            .strip_prefix(category)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Add `tags` to `to`: each once, in the order first given; returns whether any was new.
pub fn add_tags(to: &mut Vec<String>, tags: &[String]) -> bool {
    let before = to.len();
    for t in tags {
        if !to.contains(t) {
            to.push(t.clone());
        }
    }
    to.len() != before
}

/// Remove `tags` from `from`, keeping the order of the others; returns whether any was
/// there.
pub fn remove_tags(from: &mut Vec<String>, tags: &[String]) -> bool {
    let before = from.len();
    from.retain(|t| !tags.contains(t));
    from.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_names_follow_qbittorrent_and_never_step_outside() {
        for ok in ["tv", "tv/hd", "Films 2024", "a/b/c", "日本"] {
            assert_eq!(check_category_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", " ", "/tv", "tv/", "tv//hd", "a\\b", "..", "tv/..", "./x", "a/ /b", "x\ny",
        ] {
            assert!(check_category_name(bad).is_err(), "{bad:?} must be refused");
        }
        assert!(check_category_name(&"x".repeat(256)).is_err());
        assert_eq!(
            check_category_name("tv/"),
            Err("category \"tv/\": no \"/\" at the start or the end".to_owned())
        );
    }

    #[test]
    fn tags_follow_qbittorrent() {
        for ok in ["hd", "to watch", "日本"] {
            assert_eq!(check_tag(ok), Ok(()), "{ok}");
        }
        for bad in ["", " hd", "hd ", "a,b", "x\ty"] {
            assert!(check_tag(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn parents_and_membership() {
        assert_eq!(parent_category("tv/hd/x"), Some("tv/hd"));
        assert_eq!(parent_category("tv"), None);
        assert!(in_category("tv", "tv"));
        assert!(in_category("tv/hd", "tv"));
        assert!(!in_category("tvx", "tv"));
        assert!(!in_category("tv", "tv/hd"));
    }

    #[test]
    fn tags_are_added_once_in_order_and_removed_keeping_the_order() {
        let s = |v: &[&str]| v.iter().map(|t| (*t).to_owned()).collect::<Vec<String>>();
        let mut tags = s(&["b"]);
        assert!(add_tags(&mut tags, &s(&["a", "b", "c", "a"])));
        assert_eq!(tags, s(&["b", "a", "c"]), "no duplicate, first order kept");
        assert!(!add_tags(&mut tags, &s(&["c"])), "nothing new");
        assert!(remove_tags(&mut tags, &s(&["a", "zzz"])));
        assert_eq!(tags, s(&["b", "c"]));
        assert!(!remove_tags(&mut tags, &s(&["zzz"])));
    }
}
