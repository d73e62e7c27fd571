//! Confirmed places of a finished tournament with what each place awarded.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "results")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tournament_id: Uuid,
    pub registration_id: Uuid,
    /// The account the result counts for; set when a guest's result moves to a claiming user.
    pub user_id: Option<Uuid>,
    /// The guest who played; guests get a place but no rating.
    pub guest_id: Option<Uuid>,
    /// 1..=N, unique per tournament.
    pub place: i32,
    pub season_points: i32,
    /// Equal to `season_points` at the time of award.
    pub xp: i32,
    /// Raw skill (0..=1) before and after this result; null for guests.
    pub skill_before: Option<f64>,
    pub skill_after: Option<f64>,
    /// Kept across a recount, so the chronological rebuild keeps its order.
    pub created_at: DateTimeUtc,
    /// The skill smoothing in force when the result was awarded; a rebuild replays the
    /// result with it, so a later configuration change applies to new awards only.
    pub skill_alpha: f64,
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
        on_delete = "NoAction"
    )]
    Registration,
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "Restrict"
    )]
    User,
    #[sea_orm(
        belongs_to = "super::guest_players::Entity",
        from = "Column::GuestId",
        to = "super::guest_players::Column::Id",
        on_delete = "Restrict"
    )]
    Guest,
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

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::User.def()
    }
}

impl Related<super::guest_players::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Guest.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
