//! Categories and tags (qBittorrent's `torrents/categories`, `createCategory`,
//! `editCategory`, `removeCategories`, `setCategory`, `tags`, `addTags`, `removeTags`,
//! `createTags`, `deleteTags`). A category is listed as qBittorrent 4.6 does:
//! `{"name", "savePath"}` (the path as given, empty for the implicit one) and
//! `download_path` when it has one. A name the rules refuse or one that is taken answers
//! `409`; an invalid tag is skipped. The answer comes once the snapshot shows the change
//! (a tool reads it back at once).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::dispatch::{Api, ApiError, Reply, settle};
use super::info::select;
use super::params::Params;
use crate::api::{Category, Command, Snapshot, check_category_name, check_tag};

fn has_category(s: &Snapshot, name: &str) -> bool {
    s.global.categories.iter().any(|c| c.category.name == name)
}

/// A category's paths from `savePath`, `downloadPathEnabled` and `downloadPath`.
fn category_of(name: &str, p: &Params, limits: crate::api::ShareLimits) -> Category {
    let download_path = match p.bool("downloadPathEnabled") {
        Some(true) => {
            Some(PathBuf::from(p.text("downloadPath").trim())).filter(|d| !d.as_os_str().is_empty())
        }
        _ => None,
    };
    Category {
        name: name.to_owned(),
        save_path: PathBuf::from(p.text("savePath").trim()),
        download_path,
        limits,
    }
}

/// Tags of `p`'s `tags` (comma-separated) that the rules allow.
fn tags(p: &Params) -> Vec<String> {
    p.list("tags", ',')
        .into_iter()
        .filter(|t| check_tag(t).is_ok())
        .collect()
}

/// Run `torrents/ACTION` for categories and tags.
pub async fn run(api: &Api, action: &str, p: &Params) -> Result<Reply, ApiError> {
    let c = &api.client;
    let snap = c.snapshot();
    match action {
        "categories" => {
            let mut map = Map::new();
            for info in snap.global.categories.iter() {
                let cat = &info.category;
                let mut v = json!({
                    "name": cat.name,
                    "savePath": cat.save_path.to_string_lossy(),
                });
                if let Some(d) = &cat.download_path {
                    v["download_path"] = json!(d.to_string_lossy());
                }
                map.insert(cat.name.clone(), v);
            }
            return Ok(Reply::Json(Value::Object(map)));
        }
        "createCategory" => {
            let name = p.require("category")?;
            if name.is_empty() {
                return Err(ApiError::BadParams("Category cannot be empty".into()));
            }
            if check_category_name(name).is_err() {
                return Err(ApiError::Conflict("Incorrect category name".into()));
            }
            if has_category(&snap, name) {
                return Err(ApiError::Conflict("Unable to create category".into()));
            }
            let name = name.to_owned();
            c.send(Command::CreateCategory(category_of(
                &name,
                p,
                crate::api::ShareLimits::default(),
            )))
            .await?;
            settle(api).await;
        }
        "editCategory" => {
            let name = p.require("category")?;
            p.require("savePath")?;
            if name.is_empty() {
                return Err(ApiError::BadParams("Category cannot be empty".into()));
            }
            let Some(old) = snap
                .global
                .categories
                .iter()
                .find(|c| c.category.name == name)
            else {
                return Err(ApiError::Conflict("Unable to edit category".into()));
            };
            let edited = category_of(name, p, old.category.limits);
            c.send(Command::EditCategory(edited)).await?;
            settle(api).await;
        }
        "removeCategories" => {
            p.require("categories")?;
            let names = p.list("categories", '\n');
            c.send(Command::RemoveCategories(names)).await?;
            settle(api).await;
        }
        "setCategory" => {
            p.require("hashes")?;
            let category = p.require("category")?.to_owned();
            if !category.is_empty() && !has_category(&snap, &category) {
                return Err(ApiError::Conflict("Incorrect category name".into()));
            }
            let ids: Vec<_> = select(&snap, &p.list("hashes", '|'))
                .iter()
                .map(|r| r.id)
                .collect();
            c.send(Command::SetCategory { ids, category }).await?;
            settle(api).await;
        }
        "tags" => {
            let list: Vec<Value> = snap.global.tags.iter().map(|t| json!(t)).collect();
            return Ok(Reply::Json(Value::Array(list)));
        }
        "addTags" => {
            p.require("hashes")?;
            p.require("tags")?;
            let tags = tags(p);
            let ids: Vec<_> = select(&snap, &p.list("hashes", '|'))
                .iter()
                .map(|r| r.id)
                .collect();
            if !tags.is_empty() && !ids.is_empty() {
                c.send(Command::AddTags { ids, tags }).await?;
                settle(api).await;
            }
        }
        "removeTags" => {
            p.require("hashes")?;
            let tags = tags(p);
            let ids: Vec<_> = select(&snap, &p.list("hashes", '|'))
                .iter()
                .map(|r| r.id)
                .collect();
            if !ids.is_empty() {
                c.send(Command::RemoveTags { ids, tags }).await?;
                settle(api).await;
            }
        }
        "createTags" => {
            p.require("tags")?;
            let tags = tags(p);
            if !tags.is_empty() {
                c.send(Command::CreateTags(tags)).await?;
                settle(api).await;
            }
        }
        "deleteTags" => {
            p.require("tags")?;
            let tags = p.list("tags", ',');
            if !tags.is_empty() {
                c.send(Command::DeleteTags(tags)).await?;
                settle(api).await;
            }
        }
        _ => return Err(ApiError::NotFound(String::new())),
    }
    Ok(Reply::Empty)
}
