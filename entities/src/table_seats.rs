//! Seats of a running tournament: one row per seated registration, kept after elimination.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "table_seats")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tournament_id: Uuid,
    /// One seat row per registration (unique per tournament).
    pub registration_id: Uuid,
    /// 1-based table number.
    pub table_no: i32,
    /// 1-based seat number at the table.
    pub seat_no: i32,
    /// Cleared at elimination. An inactive row keeps its seat for undo; only active rows
    /// must hold distinct (table, seat), so another player may be moved into the seat.
    pub active: bool,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::tournaments::Entity",
        from = "Column::TournamentId",
        to = "super::tournaments::Column::Id",
        on_delete = "Cascade"
    )]
    Tournament,
    #[sea_orm(
        belongs_to = "super::registrations::Entity",
        from = "Column::RegistrationId",
        to = "super::registrations::Column::Id",
        on_delete = "Cascade"
    )]
    Registration,
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tournament.def()
    }
}

impl Related<super::registrations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Registration.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
