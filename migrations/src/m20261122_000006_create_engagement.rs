//! Engagement: promo slides, follows, push tokens, the notification journal and the audit log.

use sea_orm_migration::{prelude::*, schema::*};

use crate::m20261122_000002_create_accounts::Users;
use crate::m20261122_000004_create_tournaments::Tournaments;
use crate::{drop_tables, fk, index, unique};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PromoSlides {
    Table,
    Id,
    PictureUrl,
    TargetKind,
    TargetTournamentId,
    TargetUrl,
    StartsAt,
    EndsAt,
    SortOrder,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum PromoSlideTranslations {
    Table,
    SlideId,
    Locale,
    Title,
    Subtitle,
}

#[derive(DeriveIden)]
enum Follows {
    Table,
    FollowerId,
    FolloweeId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PushTokens {
    Table,
    Token,
    UserId,
    Platform,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Notifications {
    Table,
    Id,
    UserId,
    Kind,
    Payload,
    DedupKey,
    CreatedAt,
    SentAt,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    ActorUserId,
    Action,
    TargetType,
    TargetId,
    Details,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PromoSlides::Table)
                    .col(pk_uuid(PromoSlides::Id))
                    .col(text(PromoSlides::PictureUrl))
                    .col(text(PromoSlides::TargetKind))
                    .col(uuid_null(PromoSlides::TargetTournamentId))
                    .col(text_null(PromoSlides::TargetUrl))
                    .col(timestamp_with_time_zone_null(PromoSlides::StartsAt))
                    .col(timestamp_with_time_zone_null(PromoSlides::EndsAt))
                    .col(integer(PromoSlides::SortOrder).default(0))
                    .col(timestamp_with_time_zone(PromoSlides::CreatedAt))
                    .col(timestamp_with_time_zone(PromoSlides::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_promo_slides_target_tournament_id",
                        PromoSlides::Table,
                        PromoSlides::TargetTournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(PromoSlideTranslations::Table)
                    .col(uuid(PromoSlideTranslations::SlideId))
                    .col(text(PromoSlideTranslations::Locale))
                    .col(text(PromoSlideTranslations::Title))
                    .col(text_null(PromoSlideTranslations::Subtitle))
                    .primary_key(
                        Index::create().col(PromoSlideTranslations::SlideId).col(PromoSlideTranslations::Locale),
                    )
                    .foreign_key(&mut fk(
                        "fk_promo_slide_translations_slide_id",
                        PromoSlideTranslations::Table,
                        PromoSlideTranslations::SlideId,
                        PromoSlides::Table,
                        PromoSlides::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Follows::Table)
                    .col(uuid(Follows::FollowerId))
                    .col(uuid(Follows::FolloweeId))
                    .col(timestamp_with_time_zone(Follows::CreatedAt))
                    .primary_key(Index::create().col(Follows::FollowerId).col(Follows::FolloweeId))
                    .foreign_key(&mut fk(
                        "fk_follows_follower_id",
                        Follows::Table,
                        Follows::FollowerId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_follows_followee_id",
                        Follows::Table,
                        Follows::FolloweeId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager.create_index(index("ix_follows_followee_id", Follows::Table, [Follows::FolloweeId])).await?;

        manager
            .create_table(
                Table::create()
                    .table(PushTokens::Table)
                    .col(text(PushTokens::Token).primary_key())
                    .col(uuid(PushTokens::UserId))
                    .col(text(PushTokens::Platform))
                    .col(timestamp_with_time_zone(PushTokens::CreatedAt))
                    .col(timestamp_with_time_zone(PushTokens::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_push_tokens_user_id",
                        PushTokens::Table,
                        PushTokens::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager.create_index(index("ix_push_tokens_user_id", PushTokens::Table, [PushTokens::UserId])).await?;

        manager
            .create_table(
                Table::create()
                    .table(Notifications::Table)
                    .col(pk_uuid(Notifications::Id))
                    .col(uuid(Notifications::UserId))
                    .col(text(Notifications::Kind))
                    .col(json(Notifications::Payload))
                    .col(text_null(Notifications::DedupKey))
                    .col(timestamp_with_time_zone(Notifications::CreatedAt))
                    .col(timestamp_with_time_zone_null(Notifications::SentAt))
                    .foreign_key(&mut fk(
                        "fk_notifications_user_id",
                        Notifications::Table,
                        Notifications::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique(
                "ux_notifications_user_dedup_key",
                Notifications::Table,
                [Notifications::UserId, Notifications::DedupKey],
            ))
            .await?;
        manager
            .create_index(index(
                "ix_notifications_user_id_created_at",
                Notifications::Table,
                [Notifications::UserId, Notifications::CreatedAt],
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(AuditLog::Table)
                    .col(pk_uuid(AuditLog::Id))
                    .col(uuid_null(AuditLog::ActorUserId))
                    .col(text(AuditLog::Action))
                    .col(text_null(AuditLog::TargetType))
                    .col(text_null(AuditLog::TargetId))
                    .col(json(AuditLog::Details))
                    .col(timestamp_with_time_zone(AuditLog::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_audit_log_actor_user_id",
                        AuditLog::Table,
                        AuditLog::ActorUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .to_owned(),
            )
            .await?;
        manager.create_index(index("ix_audit_log_created_at", AuditLog::Table, [AuditLog::CreatedAt])).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(
            manager,
            [
                AuditLog::Table.into_iden(),
                Notifications::Table.into_iden(),
                PushTokens::Table.into_iden(),
                Follows::Table.into_iden(),
                PromoSlideTranslations::Table.into_iden(),
                PromoSlides::Table.into_iden(),
            ],
        )
        .await
    }
}
