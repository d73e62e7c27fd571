//! Venues of a club, where its tournaments take place.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "locations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub organizer_id: Uuid,
    pub name: String,
    /// City of the venue; follows a slug rename, and a city with venues cannot be deleted.
    pub city_slug: String,
    pub address: String,
    /// IANA zone name (`Europe/Moscow`) for displaying local start times.
    pub timezone: String,
    pub lat: f64,
    pub lng: f64,
    pub description: Option<String>,
    pub photo_url: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::organizers::Entity",
        from = "Column::OrganizerId",
        to = "super::organizers::Column::Id",
        on_delete = "Restrict"
    )]
    Organizer,
    #[sea_orm(
        belongs_to = "super::cities::Entity",
        from = "Column::CitySlug",
        to = "super::cities::Column::Slug",
        on_update = "Cascade",
        on_delete = "Restrict"
    )]
    City,
    #[sea_orm(has_many = "super::tournaments::Entity", via_rel = "Relation::Location")]
    Tournaments,
}

impl Related<super::organizers::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Organizer.def()
    }
}

impl Related<super::cities::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::City.def()
    }
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tournaments.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
