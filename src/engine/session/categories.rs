//! The session's side of categories and tags: the commands that create, edit and remove
//! categories, set a torrent's category, tags and automatic management; where an add with
//! a category puts its data; the categories file read at start (with the config file's
//! `[categories."NAME"]` set over it) and written at each change; and the lists the
//! snapshot shows. The rules themselves live in [`crate::engine::categories`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Session;
use crate::api::{
    AddError, AddRequest, Category, CategoryInfo, Command, EventKind, EventLevel, ShareLimits,
    TorrentId, check_category_name, check_tag, in_category,
};
use crate::engine::categories::{Categories, FILE_NAME, Place};

/// The categories and tags, and what the snapshot shows of them (rebuilt on a change).
#[derive(Debug, Default)]
pub(super) struct CategoryState {
    /// The categories and the session's tags.
    pub list: Categories,
    /// The categories as the snapshot lists them.
    pub shown: Arc<[CategoryInfo]>,
    /// The tags as the snapshot lists them.
    pub tags_shown: Arc<[String]>,
}

/// Where an add puts its data and how it is managed.
pub(super) struct AddPlan {
    /// The folder its data goes to now.
    pub save_dir: PathBuf,
    /// The folder it moves to on completion.
    pub final_dir: Option<PathBuf>,
    /// Its category.
    pub category: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Automatic management.
    pub auto_managed: bool,
    /// Its category's goals.
    pub limits: ShareLimits,
}

impl AddPlan {
    /// Give the new torrent `t` its category, tags and management.
    pub fn apply(self, t: &mut crate::engine::torrent::Torrent) {
        t.set_manage_on_add(
            self.category,
            self.tags,
            self.auto_managed,
            self.final_dir,
            self.limits,
        );
    }
}

impl Session {
    /// Where a torrent of category `name` goes.
    fn place(&self, name: &str) -> Place {
        self.categories
            .list
            .place(name, &self.settings.download_dir)
    }

    /// At start: the categories kept in the state folder `dir` (none without one), then
    /// the config file's over them.
    pub(super) fn categories_start(&mut self, dir: Option<&Path>) {
        let list = match dir {
            Some(dir) => {
                let file = dir.join(FILE_NAME);
                Categories::load(&file).unwrap_or_else(|e| {
                    self.log.push(
                        None,
                        EventLevel::Error,
                        EventKind::DiskError,
                        format!("categories: {e}; starting with none (the file is rewritten at the next change)"),
                    );
                    Categories::new(Some(file))
                })
            }
            None => Categories::new(None),
        };
        self.categories.list = list;
        let from_config: Vec<Category> = self
            .ctx
            .config
            .categories
            .iter()
            .map(|(name, c)| c.category(name))
            .collect();
        for c in from_config {
            if let Err(e) = self.categories.list.set(c) {
                self.log
                    .push(None, EventLevel::Error, EventKind::StateChanged, e);
            }
        }
        self.categories_shown();
    }

    /// After the torrents of the last run are restored: their categories' goals, their
    /// tags in the session's list.
    pub(super) fn categories_restored(&mut self) {
        let mut tags = Vec::new();
        for t in self.torrents.values_mut() {
            let limits = self.categories.list.limits(t.category());
            t.restore_category_goals(limits);
            tags.extend(t.tags().iter().cloned());
        }
        self.categories.list.add_tags(&tags);
        self.categories_shown();
    }

    /// The default save folder changed: the implicit category paths shown follow it.
    pub(super) fn categories_settings_changed(&mut self) {
        self.categories_shown();
    }

    /// Rebuild what the snapshot shows of the categories and tags.
    fn categories_shown(&mut self) {
        let list = &self.categories.list;
        self.categories.shown = list.infos(&self.settings.download_dir).into();
        self.categories.tags_shown = list.tags().cloned().collect::<Vec<_>>().into();
        self.publish_now = true;
    }

    /// The categories or tags changed: keep them, show them.
    fn categories_changed(&mut self) {
        if let Err(e) = self.categories.list.save() {
            self.log.push(
                None,
                EventLevel::Error,
                EventKind::DiskError,
                format!("categories: {e}"),
            );
        }
        self.categories_shown();
    }

    fn refused(&mut self, why: String) {
        self.log
            .push(None, EventLevel::Error, EventKind::StateChanged, why);
        self.publish_now = true;
    }

    /// Where an add goes (see [`AddRequest`]): a category it names that the session does
    /// not have is created.
    ///
    /// # Errors
    /// [`AddError::Invalid`]: the category's name or a tag is invalid.
    pub(super) fn add_plan(&mut self, req: &AddRequest) -> Result<AddPlan, AddError> {
        let category = req.category.trim().to_owned();
        if !category.is_empty() {
            check_category_name(&category).map_err(AddError::Invalid)?;
        }
        for t in &req.tags {
            check_tag(t).map_err(AddError::Invalid)?;
        }
        let mut changed = false;
        if !category.is_empty() && !self.categories.list.contains(&category) {
            let created = self.categories.list.create(Category {
                name: category.clone(),
                ..Category::default()
            });
            if let Ok(names) = created {
                changed = true;
                self.log.push(
                    None,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    format!("category {} created", names.join(", ")),
                );
            }
        }
        // the file is written only when something is new (not once per add)
        if self.categories.list.add_tags(&req.tags) || changed {
            self.categories_changed();
        }
        let auto_managed = req.auto_managed_in_effect();
        let place = self.place(&category);
        let (save_dir, final_dir) = if auto_managed {
            match place.download {
                Some(d) => (d, Some(place.save)),
                None => (place.save, None),
            }
        } else {
            let dir = req
                .download_dir
                .clone()
                .unwrap_or_else(|| self.settings.download_dir.clone());
            (super::library::absolute(dir), None)
        };
        Ok(AddPlan {
            save_dir,
            final_dir,
            category,
            tags: req.tags.clone(),
            auto_managed,
            limits: place.limits,
        })
    }

    /// A category or tag command (see [`Command`]).
    pub(super) fn category_command(&mut self, c: Command) {
        match c {
            Command::SetCategory { ids, category } => {
                let category = category.trim().to_owned();
                if !category.is_empty() && !self.categories.list.contains(&category) {
                    self.refused(format!(
                        "there is no category {category:?} (create it first)"
                    ));
                    return;
                }
                let place = self.place(&category);
                for id in ids {
                    self.with(id, |t, env| t.set_category(&category, &place, env));
                }
            }
            Command::CreateCategory(c) => match self.categories.list.create(c) {
                Ok(names) => {
                    self.log.push(
                        None,
                        EventLevel::Info,
                        EventKind::StateChanged,
                        format!("category {} created", names.join(", ")),
                    );
                    self.categories_changed();
                }
                Err(e) => self.refused(e),
            },
            Command::EditCategory(c) => {
                let name = c.name.clone();
                match self.categories.list.edit(c) {
                    Ok(()) => {
                        self.log.push(
                            None,
                            EventLevel::Info,
                            EventKind::StateChanged,
                            format!("category {name:?} changed"),
                        );
                        self.categories_changed();
                        // its torrents and those of its subcategories follow
                        self.follow_categories(|c| in_category(c, &name));
                    }
                    Err(e) => self.refused(e),
                }
            }
            Command::RemoveCategories(names) => {
                let gone = self.categories.list.remove(&names);
                if gone.is_empty() {
                    return;
                }
                self.log.push(
                    None,
                    EventLevel::Info,
                    EventKind::StateChanged,
                    format!("categories removed: {}", gone.join(", ")),
                );
                self.categories_changed();
                // their torrents are left without one; the data stays where it is
                let ids: Vec<TorrentId> = self
                    .torrents
                    .iter()
                    .filter(|(_, t)| gone.iter().any(|g| g == t.category()))
                    .map(|(id, _)| *id)
                    .collect();
                let none = Place {
                    limits: ShareLimits::default(),
                    ..self.place("")
                };
                for id in ids {
                    self.with(id, |t, env| {
                        // automatic management goes off first: removing a category never
                        // moves data
                        t.set_auto_managed(false, &none, env);
                        t.set_category("", &none, env);
                    });
                }
            }
            Command::AddTags { ids, tags } => {
                if let Some(e) = tags.iter().find_map(|t| check_tag(t).err()) {
                    self.refused(e);
                    return;
                }
                for id in ids {
                    self.with(id, |t, env| {
                        if t.add_tags(&tags) {
                            *env.publish_now = true;
                        }
                    });
                }
                if self.categories.list.add_tags(&tags) {
                    self.categories_changed();
                }
            }
            Command::RemoveTags { ids, tags } => {
                for id in ids {
                    self.with(id, |t, env| {
                        if t.remove_tags(&tags) {
                            *env.publish_now = true;
                        }
                    });
                }
            }
            Command::CreateTags(tags) => {
                if let Some(e) = tags.iter().find_map(|t| check_tag(t).err()) {
                    self.refused(e);
                    return;
                }
                if self.categories.list.add_tags(&tags) {
                    self.categories_changed();
                }
            }
            Command::DeleteTags(tags) => {
                if tags.is_empty() {
                    return;
                }
                let ids: Vec<TorrentId> = self.torrents.keys().copied().collect();
                for id in ids {
                    self.with(id, |t, env| {
                        if t.remove_tags(&tags) {
                            *env.publish_now = true;
                        }
                    });
                }
                if self.categories.list.delete_tags(&tags) {
                    self.categories_changed();
                }
            }
            Command::SetAutoManaged { ids, on } => {
                for id in ids {
                    let Some(cat) = self.torrents.get(&id).map(|t| t.category().to_owned()) else {
                        continue;
                    };
                    let place = self.place(&cat);
                    self.with(id, |t, env| t.set_auto_managed(on, &place, env));
                }
            }
            _ => {}
        }
    }

    /// The torrents whose category `pick` says: their goals and (auto-managed) data
    /// follow their category as it is now.
    fn follow_categories(&mut self, pick: impl Fn(&str) -> bool) {
        let ids: Vec<(TorrentId, String)> = self
            .torrents
            .iter()
            .filter(|(_, t)| !t.category().is_empty() && pick(t.category()))
            .map(|(id, t)| (*id, t.category().to_owned()))
            .collect();
        for (id, cat) in ids {
            let place = self.place(&cat);
            self.with(id, |t, env| t.category_changed(&place, env));
        }
    }
}
