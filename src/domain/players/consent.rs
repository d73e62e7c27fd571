//! Consent to personal data processing as a record: the account keeps when it was given and
//! the version of the text (`CONSENT_VERSION`), and each change is a row of its own with its
//! time, which the player's export lists. Withdrawing clears the account's record, as the
//! player app's gate reads it.

use chrono::{DateTime, Utc};
use floor_entities::{consent_changes, users};
use sea_orm::{ActiveModelTrait, ConnectionTrait, Set};
use uuid::Uuid;

use crate::infra::error::AppResult;

/// What a profile edit does to consent, if anything: giving consent is a change when there was
/// none or it was given to another version of the text; withdrawing is one when there was one.
pub fn change_of(user: &users::Model, accepted: bool, current_version: &str) -> Option<ConsentChange> {
    let given = user.consent_accepted_at.is_some();
    match accepted {
        true if !given || user.consent_version.as_deref() != Some(current_version) => {
            Some(ConsentChange::Given { version: current_version.to_owned() })
        }
        false if given => Some(ConsentChange::Withdrawn),
        _ => None,
    }
}

/// A change of consent, as [`change_of`] finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsentChange {
    Given { version: String },
    Withdrawn,
}

/// Writes `change` on the account being edited and records it, in the caller's transaction.
pub async fn apply(
    conn: &impl ConnectionTrait,
    user: &mut users::ActiveModel,
    user_id: Uuid,
    change: ConsentChange,
    at: DateTime<Utc>,
) -> AppResult<()> {
    let (accepted, version) = match change {
        ConsentChange::Given { version } => (true, Some(version)),
        ConsentChange::Withdrawn => (false, None),
    };
    user.consent_accepted_at = Set(accepted.then_some(at));
    user.consent_version = Set(version.clone());
    consent_changes::ActiveModel {
        id: Set(Uuid::now_v7()),
        user_id: Set(user_id),
        accepted: Set(accepted),
        version: Set(version),
        changed_at: Set(at),
    }
    .insert(conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use floor_entities::enums::UserStatus;

    fn user(consent: Option<&str>) -> users::Model {
        let now = Utc::now();
        users::Model {
            id: Uuid::nil(),
            phone: "+79990000000".to_owned(),
            name: None,
            nickname: None,
            avatar_url: None,
            city_slug: None,
            consent_accepted_at: consent.map(|_| now),
            consent_version: consent.map(str::to_owned),
            admin_role: None,
            status: UserStatus::Active,
            merged_into_user_id: None,
            deleted_at: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn giving_consent_is_a_change_without_one_or_for_another_version() {
        let given = Some(ConsentChange::Given { version: "2".to_owned() });
        assert_eq!(change_of(&user(None), true, "2"), given);
        assert_eq!(change_of(&user(Some("1")), true, "2"), given);
        assert_eq!(change_of(&user(Some("2")), true, "2"), None);
    }

    #[test]
    fn withdrawing_is_a_change_only_when_consent_was_given() {
        assert_eq!(change_of(&user(Some("1")), false, "2"), Some(ConsentChange::Withdrawn));
        assert_eq!(change_of(&user(None), false, "2"), None);
    }
}
