//! A player's (user's or guest's) place in a tournament, from sign-up to elimination.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::{RegistrationSource, RegistrationStatus};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "registrations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tournament_id: Uuid,
    /// The player's account; null for a guest seated without one.
    pub user_id: Option<Uuid>,
    /// The guest seated at the door by phone; null for a registration of an account.
    pub guest_id: Option<Uuid>,
    pub status: RegistrationStatus,
    pub source: RegistrationSource,
    /// True when the seat came from the waitlist; cancelling check-in then returns the
    /// registration to `waitlist` instead of `registered`.
    pub seated_from_waitlist: bool,
    /// Stamped at elimination, strictly increasing within a tournament; the order of these
    /// stamps gives the places. Cleared by undo, redistributed by reorder.
    pub eliminated_at: Option<DateTimeUtc>,
    pub checked_in_at: Option<DateTimeUtc>,
    pub cancelled_at: Option<DateTimeUtc>,
    /// Position in the waitlist queue; reset to now when a cancelled registration is renewed.
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
    #[sea_orm(has_one = "super::table_seats::Entity")]
    TableSeat,
    #[sea_orm(has_one = "super::results::Entity")]
    Result,
    #[sea_orm(has_many = "super::strikes::Entity", via_rel = "Relation::Registration")]
    Strikes,
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tournament.def()
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

impl Related<super::table_seats::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::TableSeat.def()
    }
}

impl Related<super::results::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Result.def()
    }
}

impl Related<super::strikes::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Strikes.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
