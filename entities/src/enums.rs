//! The closed value sets of the schema, stored as plain text (no database enum types, so the
//! same column works on SQLite and PostgreSQL and a new value needs no migration of a type).
//!
//! The stored text, the JSON text and the OpenAPI value of each variant are the same
//! snake_case word.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Platform role of a user in the admin app; none for ordinary players.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum AdminRole {
    #[sea_orm(string_value = "super_admin")]
    SuperAdmin,
    #[sea_orm(string_value = "moderator")]
    Moderator,
    #[sea_orm(string_value = "support")]
    Support,
    #[sea_orm(string_value = "marketing")]
    Marketing,
}

/// Whether an account may sign in. A deleted account never signs in again: its owner
/// deleted it, and its phone may sign up afresh as a new person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum UserStatus {
    #[sea_orm(string_value = "active")]
    Active,
    #[sea_orm(string_value = "banned")]
    Banned,
    #[sea_orm(string_value = "deleted")]
    Deleted,
}

/// Whether a club is in service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum OrganizerStatus {
    #[sea_orm(string_value = "active")]
    Active,
    #[sea_orm(string_value = "disabled")]
    Disabled,
}

/// Role of a person in one club.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum MemberRole {
    #[sea_orm(string_value = "owner")]
    Owner,
    #[sea_orm(string_value = "td")]
    Td,
    #[sea_orm(string_value = "dealer")]
    Dealer,
}

/// `current` for the one running quarter, `archived` once it has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum SeasonStatus {
    #[sea_orm(string_value = "current")]
    Current,
    #[sea_orm(string_value = "archived")]
    Archived,
}

/// A label only; the type has no behavioural effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum TournamentType {
    #[sea_orm(string_value = "mtt")]
    Mtt,
    #[sea_orm(string_value = "sng")]
    Sng,
}

/// Life cycle of a tournament; `announced` exists but is never set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum TournamentStatus {
    #[sea_orm(string_value = "announced")]
    Announced,
    #[sea_orm(string_value = "registration")]
    Registration,
    #[sea_orm(string_value = "running")]
    Running,
    #[sea_orm(string_value = "finished")]
    Finished,
    #[sea_orm(string_value = "cancelled")]
    Cancelled,
}

impl TournamentStatus {
    /// Finished or cancelled: the tournament changes no more.
    pub const fn is_over(self) -> bool {
        matches!(self, Self::Finished | Self::Cancelled)
    }
}

/// Where a registration stands; `registered` and `checked_in` take a seat of the capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum RegistrationStatus {
    #[sea_orm(string_value = "registered")]
    Registered,
    #[sea_orm(string_value = "waitlist")]
    Waitlist,
    #[sea_orm(string_value = "checked_in")]
    CheckedIn,
    #[sea_orm(string_value = "no_show")]
    NoShow,
    #[sea_orm(string_value = "cancelled")]
    Cancelled,
}

/// How a registration came in: by the player in the app or at the door by a td.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum RegistrationSource {
    #[sea_orm(string_value = "app")]
    App,
    #[sea_orm(string_value = "walk_in")]
    WalkIn,
}

/// Why a strike was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum StrikeReason {
    #[sea_orm(string_value = "no_show")]
    NoShow,
    #[sea_orm(string_value = "late_cancel")]
    LateCancel,
}

/// What a promo slide opens: a tournament card or an external address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum PromoTarget {
    #[sea_orm(string_value = "tournament")]
    Tournament,
    #[sea_orm(string_value = "url")]
    Url,
}

/// Platform of a device push token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum, Serialize, Deserialize, ToSchema)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "snake_case")]
pub enum PushPlatform {
    #[sea_orm(string_value = "ios")]
    Ios,
    #[sea_orm(string_value = "android")]
    Android,
    #[sea_orm(string_value = "web")]
    Web,
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::{ActiveEnum, Iterable};

    fn json_matches_stored_text<E>()
    where
        E: ActiveEnum<Value = String> + Iterable + Serialize + std::fmt::Debug,
    {
        for v in E::iter() {
            let json = serde_json::to_value(&v).expect("enum serialises");
            assert_eq!(json, serde_json::Value::String(v.to_value()), "{v:?}");
        }
    }

    #[test]
    fn every_enum_serialises_to_the_text_it_is_stored_as() {
        json_matches_stored_text::<AdminRole>();
        json_matches_stored_text::<UserStatus>();
        json_matches_stored_text::<OrganizerStatus>();
        json_matches_stored_text::<MemberRole>();
        json_matches_stored_text::<SeasonStatus>();
        json_matches_stored_text::<TournamentType>();
        json_matches_stored_text::<TournamentStatus>();
        json_matches_stored_text::<RegistrationStatus>();
        json_matches_stored_text::<RegistrationSource>();
        json_matches_stored_text::<StrikeReason>();
        json_matches_stored_text::<PromoTarget>();
        json_matches_stored_text::<PushPlatform>();
    }
}
