//! Clubs: organizers, their staff, dealer invitations, venues and blind templates.

use sea_orm_migration::{prelude::*, schema::*};

use crate::m20261122_000001_create_reference_data::Cities;
use crate::m20261122_000002_create_accounts::Users;
use crate::{drop_tables, fk, index, unique};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
pub enum Organizers {
    Table,
    Id,
    Name,
    Status,
    CancelDeadlineHours,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum OrganizerMembers {
    Table,
    Id,
    OrganizerId,
    UserId,
    Role,
    CreatedAt,
}

#[derive(DeriveIden)]
enum DealerInvites {
    Table,
    Id,
    OrganizerId,
    Phone,
    CodeHash,
    ExpiresAt,
    ClaimedAt,
    ClaimedByUserId,
    CreatedByUserId,
    CreatedAt,
}

#[derive(DeriveIden)]
pub enum Locations {
    Table,
    Id,
    OrganizerId,
    Name,
    CitySlug,
    Address,
    Timezone,
    Lat,
    Lng,
    Description,
    PhotoUrl,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
pub enum BlindTemplates {
    Table,
    Id,
    OrganizerId,
    Name,
    Levels,
    StartingStack,
    LateRegLevel,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Organizers::Table)
                    .col(pk_uuid(Organizers::Id))
                    .col(text(Organizers::Name))
                    .col(text(Organizers::Status).default("active"))
                    .col(integer(Organizers::CancelDeadlineHours).default(3))
                    .col(timestamp_with_time_zone(Organizers::CreatedAt))
                    .col(timestamp_with_time_zone(Organizers::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(OrganizerMembers::Table)
                    .col(pk_uuid(OrganizerMembers::Id))
                    .col(uuid(OrganizerMembers::OrganizerId))
                    .col(uuid(OrganizerMembers::UserId))
                    .col(text(OrganizerMembers::Role))
                    .col(timestamp_with_time_zone(OrganizerMembers::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_organizer_members_organizer_id",
                        OrganizerMembers::Table,
                        OrganizerMembers::OrganizerId,
                        Organizers::Table,
                        Organizers::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_organizer_members_user_id",
                        OrganizerMembers::Table,
                        OrganizerMembers::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique(
                "ux_organizer_members_organizer_user",
                OrganizerMembers::Table,
                [OrganizerMembers::OrganizerId, OrganizerMembers::UserId],
            ))
            .await?;
        manager
            .create_index(index("ix_organizer_members_user_id", OrganizerMembers::Table, [OrganizerMembers::UserId]))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(DealerInvites::Table)
                    .col(pk_uuid(DealerInvites::Id))
                    .col(uuid(DealerInvites::OrganizerId))
                    .col(text(DealerInvites::Phone))
                    .col(text(DealerInvites::CodeHash))
                    .col(timestamp_with_time_zone(DealerInvites::ExpiresAt))
                    .col(timestamp_with_time_zone_null(DealerInvites::ClaimedAt))
                    .col(uuid_null(DealerInvites::ClaimedByUserId))
                    .col(uuid_null(DealerInvites::CreatedByUserId))
                    .col(timestamp_with_time_zone(DealerInvites::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_dealer_invites_organizer_id",
                        DealerInvites::Table,
                        DealerInvites::OrganizerId,
                        Organizers::Table,
                        Organizers::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_dealer_invites_claimed_by_user_id",
                        DealerInvites::Table,
                        DealerInvites::ClaimedByUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .foreign_key(&mut fk(
                        "fk_dealer_invites_created_by_user_id",
                        DealerInvites::Table,
                        DealerInvites::CreatedByUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique("ux_dealer_invites_code_hash", DealerInvites::Table, [DealerInvites::CodeHash]))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Locations::Table)
                    .col(pk_uuid(Locations::Id))
                    .col(uuid(Locations::OrganizerId))
                    .col(text(Locations::Name))
                    .col(text(Locations::CitySlug))
                    .col(text(Locations::Address))
                    .col(text(Locations::Timezone))
                    .col(double(Locations::Lat))
                    .col(double(Locations::Lng))
                    .col(text_null(Locations::Description))
                    .col(text_null(Locations::PhotoUrl))
                    .col(timestamp_with_time_zone(Locations::CreatedAt))
                    .col(timestamp_with_time_zone(Locations::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_locations_organizer_id",
                        Locations::Table,
                        Locations::OrganizerId,
                        Organizers::Table,
                        Organizers::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .foreign_key(
                        fk(
                            "fk_locations_city_slug",
                            Locations::Table,
                            Locations::CitySlug,
                            Cities::Table,
                            Cities::Slug,
                            ForeignKeyAction::Restrict,
                        )
                        .on_update(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager.create_index(index("ix_locations_organizer_id", Locations::Table, [Locations::OrganizerId])).await?;

        manager
            .create_table(
                Table::create()
                    .table(BlindTemplates::Table)
                    .col(pk_uuid(BlindTemplates::Id))
                    .col(uuid_null(BlindTemplates::OrganizerId))
                    .col(text(BlindTemplates::Name))
                    .col(json(BlindTemplates::Levels))
                    .col(big_integer(BlindTemplates::StartingStack))
                    .col(integer_null(BlindTemplates::LateRegLevel))
                    .col(timestamp_with_time_zone(BlindTemplates::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_blind_templates_organizer_id",
                        BlindTemplates::Table,
                        BlindTemplates::OrganizerId,
                        Organizers::Table,
                        Organizers::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_blind_templates_organizer_id",
                BlindTemplates::Table,
                [BlindTemplates::OrganizerId],
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(
            manager,
            [
                BlindTemplates::Table.into_iden(),
                Locations::Table.into_iden(),
                DealerInvites::Table.into_iden(),
                OrganizerMembers::Table.into_iden(),
                Organizers::Table.into_iden(),
            ],
        )
        .await
    }
}
