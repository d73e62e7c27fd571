//! The tournament card: a tournament as the apps show it, with its texts, its seats taken and
//! waiting, its club's and venue's names, read for many cards in a few queries.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use floor_entities::enums::{TournamentStatus, TournamentType};
use floor_entities::{locations, organizers, tournament_translations, tournaments};
use sea_orm::ConnectionTrait;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tournaments::{SeatCounts, TournamentText, seat_counts};
use crate::http::registrations::RegistrationView;
use crate::http::views::Localized;
use crate::infra::db::find_where_in;
use crate::infra::error::{AppError, AppResult};

/// A tournament card. There is no money flow: `entryFee` is always 0 and `paymentStatus`
/// always `not_required`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TournamentView {
    pub id: Uuid,
    pub organizer_id: Uuid,
    pub location_id: Uuid,
    pub season_id: Uuid,
    pub blind_template_id: Uuid,
    #[serde(rename = "type")]
    pub tournament_type: TournamentType,
    pub starts_at: DateTime<Utc>,
    pub capacity: i32,
    pub status: TournamentStatus,
    pub prizes: Option<String>,
    pub chat_link: Option<String>,
    pub banner_url: Option<String>,
    pub entry_fee: i32,
    pub payment_status: String,
    pub translations: Localized<TournamentText>,
    /// Seats taken: `registered` + `checked_in`.
    pub registered_count: i64,
    pub waitlist_count: i64,
    /// The club's name and the venue's name and city, so a card needs no further request.
    pub organizer_name: String,
    pub location_name: String,
    pub city_slug: String,
}

/// A card with the caller's own registration, for the player app's register button.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TournamentDetailView {
    #[serde(flatten)]
    pub tournament: TournamentView,
    /// The live clock for the venue's screen (a public page): for a link or a QR code.
    pub screen_url: String,
    /// The public page of the tournament, the link the apps share.
    pub share_url: String,
    /// The signed-in caller's registration here; null when anonymous or not registered.
    pub my_registration: Option<RegistrationView>,
}

/// The cards of `models`, in their order, with texts and counts read in two queries.
pub async fn tournament_views(
    conn: &impl ConnectionTrait,
    models: Vec<tournaments::Model>,
) -> AppResult<Vec<TournamentView>> {
    let ids: Vec<Uuid> = models.iter().map(|t| t.id).collect();
    let mut texts: HashMap<Uuid, Localized<TournamentText>> = HashMap::new();
    for row in
        find_where_in::<tournament_translations::Entity, _>(conn, tournament_translations::Column::TournamentId, &ids)
            .await?
    {
        let text = TournamentText { title: row.title, subtitle: row.subtitle };
        texts.entry(row.tournament_id).or_default().set(&row.locale, text);
    }
    let counts = seat_counts(conn, &ids).await?;
    let club_ids: Vec<Uuid> = models.iter().map(|t| t.organizer_id).collect();
    let clubs: HashMap<Uuid, String> = find_where_in::<organizers::Entity, _>(conn, organizers::Column::Id, &club_ids)
        .await?
        .into_iter()
        .map(|club| (club.id, club.name))
        .collect();
    let venue_ids: Vec<Uuid> = models.iter().map(|t| t.location_id).collect();
    let venues: HashMap<Uuid, locations::Model> =
        find_where_in::<locations::Entity, _>(conn, locations::Column::Id, &venue_ids)
            .await?
            .into_iter()
            .map(|venue| (venue.id, venue))
            .collect();
    Ok(models
        .into_iter()
        .map(|t| {
            let SeatCounts { taken, waitlist } = counts.get(&t.id).copied().unwrap_or_default();
            TournamentView {
                translations: texts.remove(&t.id).unwrap_or_default(),
                registered_count: taken,
                waitlist_count: waitlist,
                organizer_name: clubs.get(&t.organizer_id).cloned().unwrap_or_default(),
                location_name: venues.get(&t.location_id).map(|v| v.name.clone()).unwrap_or_default(),
                city_slug: venues.get(&t.location_id).map(|v| v.city_slug.clone()).unwrap_or_default(),
                id: t.id,
                organizer_id: t.organizer_id,
                location_id: t.location_id,
                season_id: t.season_id,
                blind_template_id: t.blind_template_id,
                tournament_type: t.tournament_type,
                starts_at: t.starts_at,
                capacity: t.capacity,
                status: t.status,
                prizes: t.prizes,
                chat_link: t.chat_link,
                banner_url: t.banner_url,
                entry_fee: 0,
                payment_status: t.payment_status,
            }
        })
        .collect())
}

pub async fn tournament_view(conn: &impl ConnectionTrait, model: tournaments::Model) -> AppResult<TournamentView> {
    tournament_views(conn, vec![model])
        .await?
        .pop()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a view of one tournament came back empty")))
}
