//! Strikes for a no-show or a late cancellation; enough unforgiven ones ban registration.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::StrikeReason;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "strikes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    pub tournament_id: Uuid,
    /// At most one no-show strike per registration; a reused registration may earn several
    /// late-cancel strikes.
    pub registration_id: Uuid,
    pub reason: StrikeReason,
    /// Counts towards a ban within the strike window unless forgiven.
    pub created_at: DateTimeUtc,
    /// Stamped when a td or owner forgives the strike; the ban is then recomputed.
    pub forgiven_at: Option<DateTimeUtc>,
    pub forgiven_by_user_id: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "Cascade"
    )]
    User,
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
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::ForgivenByUserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    ForgivenBy,
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
