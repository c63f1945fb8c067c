//! The session's categories and tags (qBittorrent's): the list, how a category's paths
//! and goals resolve (subcategories by `/`), and the small file that keeps them across
//! restarts (`categories.json` in the session state's folder, replaced atomically).
//!
//! Resolution (qBittorrent's "subcategories" behaviour, always on):
//! - save path: the category's own when set (a relative one under the session's download
//!   folder); else the parent's save path joined with the last part of the name (`tv/hd`
//!   → `<tv's save path>/hd`), and for a top-level category the download folder joined
//!   with its name. A name not in the list (a parent never created, a category removed)
//!   resolves the same way, as if it had no path of its own.
//! - download path: the category's own when set; else the parent's download path joined
//!   with the last part of the name when the parent has one; else none.
//! - seeding goals: each of the category's limits that is -2 comes from the parent
//!   category, and from the session's `[seeding]` at the top.
//!
//! The file's categories are read at start; then those of the config file
//! (`[categories."NAME"]`) are set over them (the config wins for the names it defines).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::api::{
    Category, CategoryInfo, ShareLimits, USE_GLOBAL, check_category_name, check_tag, in_category,
    parent_category,
};

/// The file name of the categories file in the state folder.
pub const FILE_NAME: &str = "categories.json";

/// What a torrent in a category gets: where its data goes and the goals it inherits.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// The save path (absolute).
    pub save: PathBuf,
    /// The download path, if any (absolute): the data is there until complete.
    pub download: Option<PathBuf>,
    /// The category's goals (-2 fields: the session's).
    pub limits: ShareLimits,
}

/// The session's categories and tags.
#[derive(Debug, Default)]
pub struct Categories {
    map: BTreeMap<String, Category>,
    tags: BTreeSet<String>,
    /// Where they are kept; `None`: not kept (a session without a state store).
    file: Option<PathBuf>,
}

/// The file's form.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    version: u32,
    categories: Vec<SavedCategory>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedCategory {
    name: String,
    #[serde(default)]
    save_path: PathBuf,
    #[serde(default)]
    download_path: Option<PathBuf>,
    #[serde(default = "use_global_f64")]
    ratio_limit: f64,
    #[serde(default = "use_global")]
    seeding_time_limit: i64,
    #[serde(default = "use_global")]
    inactive_seeding_time_limit: i64,
}

fn use_global() -> i64 {
    USE_GLOBAL
}

fn use_global_f64() -> f64 {
    USE_GLOBAL as f64
}

/// `p` made absolute: as is when absolute, else under `base`.
fn under(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// The last part of a category name (`hd` of `tv/hd`).
fn leaf(name: &str) -> &str {
    name.rsplit_once('/').map_or(name, |(_, l)| l)
}

impl Categories {
    /// No categories, kept in `file` (`None`: not kept).
    pub fn new(file: Option<PathBuf>) -> Categories {
        Categories {
            file,
            ..Categories::default()
        }
    }

    /// The categories kept in `file`: none when it does not exist.
    ///
    /// # Errors
    /// The file cannot be read or is not one this module wrote (the text says which);
    /// the caller starts with none and says so. Entries with an invalid name or tag are
    /// left out.
    pub fn load(file: &Path) -> Result<Categories, String> {
        let mut c = Categories::new(Some(file.to_path_buf()));
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(c),
            Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
        };
        let saved: Saved = serde_json::from_str(&text)
            .map_err(|e| format!("{} is damaged: {e}", file.display()))?;
        for s in saved.categories {
            if check_category_name(&s.name).is_err() {
                continue;
            }
            let limits = ShareLimits {
                ratio: s.ratio_limit,
                seeding_minutes: s.seeding_time_limit,
                inactive_minutes: s.inactive_seeding_time_limit,
            }
            .sanitized();
            c.map.insert(
                s.name.clone(),
                Category {
                    name: s.name,
                    save_path: s.save_path,
                    download_path: s.download_path,
                    limits,
                },
            );
        }
        c.tags = saved
            .tags
            .into_iter()
            .filter(|t| check_tag(t).is_ok())
            .collect();
        Ok(c)
    }

    /// Write them to their file, replacing it atomically (synced); nothing without one.
    ///
    /// # Errors
    /// The file cannot be written (disk full, permissions, a path that is not UTF-8).
    pub fn save(&self) -> Result<(), String> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let saved = Saved {
            version: 1,
            categories: self
                .map
                .values()
                .map(|c| SavedCategory {
                    name: c.name.clone(),
                    save_path: c.save_path.clone(),
                    download_path: c.download_path.clone(),
                    ratio_limit: c.limits.ratio,
                    seeding_time_limit: c.limits.seeding_minutes,
                    inactive_seeding_time_limit: c.limits.inactive_minutes,
                })
                .collect(),
            tags: self.tags.iter().cloned().collect(),
        };
        let text = serde_json::to_string_pretty(&saved).map_err(|e| e.to_string())?;
        crate::atomic_write::write(
            file,
            text.as_bytes(),
            crate::atomic_write::Durability::Synced,
        )
        .map_err(|e| format!("cannot write {}: {e}", file.display()))
    }

    /// Whether the session has category `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// Category `name`, if the session has it.
    pub fn get(&self, name: &str) -> Option<&Category> {
        self.map.get(name)
    }

    /// The save path of category `name` (`""`: none, the download folder `default_dir`).
    pub fn save_path(&self, name: &str, default_dir: &Path) -> PathBuf {
        if name.is_empty() {
            return default_dir.to_path_buf();
        }
        if let Some(c) = self.map.get(name)
            && !c.save_path.as_os_str().is_empty()
        {
            return under(default_dir, &c.save_path);
        }
        let base = self.save_path(parent_category(name).unwrap_or(""), default_dir);
        base.join(leaf(name))
    }

    /// The download path of category `name`, if it has one (see the module).
    pub fn download_path(&self, name: &str, default_dir: &Path) -> Option<PathBuf> {
        if name.is_empty() {
            return None;
        }
        if let Some(own) = self
            .map
            .get(name)
            .and_then(|c| c.download_path.as_ref())
            .filter(|p| !p.as_os_str().is_empty())
        {
            return Some(under(default_dir, own));
        }
        let parent = parent_category(name)?;
        self.download_path(parent, default_dir)
            .map(|d| d.join(leaf(name)))
    }

    /// The goals of category `name`, its -2 fields filled from its parents (still -2: the
    /// session's).
    pub fn limits(&self, name: &str) -> ShareLimits {
        if name.is_empty() {
            return ShareLimits::default();
        }
        let own = self
            .map
            .get(name)
            .map_or_else(ShareLimits::default, |c| c.limits.sanitized());
        let parent = match parent_category(name) {
            Some(p) => self.limits(p),
            None => ShareLimits::default(),
        };
        inherit(own, parent)
    }

    /// Where a torrent of category `name` goes and the goals it inherits.
    pub fn place(&self, name: &str, default_dir: &Path) -> Place {
        Place {
            save: self.save_path(name, default_dir),
            download: self.download_path(name, default_dir),
            limits: self.limits(name),
        }
    }

    /// Create `c` and its missing parents; returns the names created (parents first).
    ///
    /// # Errors
    /// The name is invalid or already taken (the text says which).
    pub fn create(&mut self, c: Category) -> Result<Vec<String>, String> {
        check_category_name(&c.name)?;
        if self.map.contains_key(&c.name) {
            return Err(format!("category {:?} already exists", c.name));
        }
        let mut created = self.create_parents(&c.name);
        created.push(c.name.clone());
        self.map.insert(c.name.clone(), sanitized(c));
        Ok(created)
    }

    /// Replace the paths and goals of the existing category `c.name`.
    ///
    /// # Errors
    /// There is no such category.
    pub fn edit(&mut self, c: Category) -> Result<(), String> {
        match self.map.get_mut(&c.name) {
            Some(old) => {
                *old = sanitized(c);
                Ok(())
            }
            None => Err(format!("there is no category {:?}", c.name)),
        }
    }

    /// Create or replace `c` (and create its missing parents): the config file's
    /// categories.
    ///
    /// # Errors
    /// The name is invalid.
    pub fn set(&mut self, c: Category) -> Result<(), String> {
        check_category_name(&c.name)?;
        self.create_parents(&c.name);
        self.map.insert(c.name.clone(), sanitized(c));
        Ok(())
    }

    fn create_parents(&mut self, name: &str) -> Vec<String> {
        let mut created = Vec::new();
        let mut at = 0;
        while let Some(i) = name[at..].find('/') {
            let parent = &name[..at + i];
            if !self.map.contains_key(parent) {
                self.map.insert(
                    parent.to_owned(),
                    Category {
                        name: parent.to_owned(),
                        ..Category::default()
                    },
                );
                created.push(parent.to_owned());
            }
            at += i + 1;
        }
        created
    }

    /// Remove categories `names` and their subcategories; returns the names removed.
    pub fn remove(&mut self, names: &[String]) -> Vec<String> {
        let gone: Vec<String> = self
            .map
            .keys()
            .filter(|k| names.iter().any(|n| in_category(k, n)))
            .cloned()
            .collect();
        for g in &gone {
            self.map.remove(g);
        }
        gone
    }

    /// Every category with the paths it resolves to, by name.
    pub fn infos(&self, default_dir: &Path) -> Vec<CategoryInfo> {
        self.map
            .values()
            .map(|c| CategoryInfo {
                category: c.clone(),
                save_path: self.save_path(&c.name, default_dir),
                download_path: self.download_path(&c.name, default_dir),
            })
            .collect()
    }

    /// Add tags to the session's list; returns whether any was new.
    pub fn add_tags<'a>(&mut self, tags: impl IntoIterator<Item = &'a String>) -> bool {
        let mut new = false;
        for t in tags {
            new |= self.tags.insert(t.clone());
        }
        new
    }

    /// Delete tags from the session's list; returns whether any was there.
    pub fn delete_tags(&mut self, tags: &[String]) -> bool {
        let mut gone = false;
        for t in tags {
            gone |= self.tags.remove(t);
        }
        gone
    }

    /// The session's tags, sorted.
    pub fn tags(&self) -> impl Iterator<Item = &String> {
        self.tags.iter()
    }
}

fn sanitized(c: Category) -> Category {
    Category {
        limits: c.limits.sanitized(),
        ..c
    }
}

/// `own` with its -2 fields taken from `from`.
pub fn inherit(own: ShareLimits, from: ShareLimits) -> ShareLimits {
    let own = own.sanitized();
    ShareLimits {
        ratio: if own.ratio == USE_GLOBAL as f64 {
            from.ratio
        } else {
            own.ratio
        },
        seeding_minutes: if own.seeding_minutes == USE_GLOBAL {
            from.seeding_minutes
        } else {
            own.seeding_minutes
        },
        inactive_minutes: if own.inactive_minutes == USE_GLOBAL {
            from.inactive_minutes
        } else {
            own.inactive_minutes
        },
    }
}

#[cfg(test)]
mod tests;
