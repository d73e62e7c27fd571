//! What every section of the export reads from, and the reads that several of them share.

use std::collections::{BTreeSet, HashMap};

use floor_entities::users;
use sea_orm::{DatabaseTransaction, EntityTrait};
use serde::Serialize;
use uuid::Uuid;

use super::document::{Cut, Document, Pages};
use crate::domain::tournaments::display_titles;
use crate::infra::error::AppResult;

/// What every section reads from: one snapshot of the database, and the account as it stands
/// in it.
pub(super) struct Reading<'a> {
    pub tx: &'a DatabaseTransaction,
    pub me: &'a users::Model,
}

/// Each distinct id of `ids`.
pub(super) fn distinct(ids: impl Iterator<Item = Uuid>) -> Vec<Uuid> {
    ids.collect::<BTreeSet<Uuid>>().into_iter().collect()
}

/// [`Document::pages`] of rows about a tournament (`tournament_of` names it), each entry made
/// with the tournament's title.
pub(super) async fn titled_pages<E: EntityTrait, T: Serialize>(
    doc: &mut Document,
    tx: &DatabaseTransaction,
    mut pages: Pages<E>,
    tournament_of: fn(&E::Model) -> Uuid,
    entry: impl Fn(E::Model, Option<String>) -> T,
) -> Result<(), Cut> {
    doc.begin_array();
    while let Some(rows) = pages.next(tx).await? {
        let titles = titles_of(tx, rows.iter().map(tournament_of)).await?;
        doc.items(rows.into_iter().map(|row| {
            let title = titles.get(&tournament_of(&row)).cloned();
            entry(row, title)
        }))
        .await?;
    }
    doc.end();
    Ok(())
}

/// The title of each of the tournaments `ids` names.
pub(super) async fn titles_of(
    tx: &DatabaseTransaction,
    ids: impl Iterator<Item = Uuid>,
) -> AppResult<HashMap<Uuid, String>> {
    display_titles(tx, &distinct(ids)).await
}
