//! Who may do what: the spec's platform permission table and the club-role rule, as pure
//! functions. The HTTP guards in `http::extract` only look these up.

use floor_entities::enums::{AdminRole, MemberRole};
use serde::Serialize;
use utoipa::ToSchema;

/// A platform permission, granted by an `adminRole`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub enum Permission {
    #[serde(rename = "organizers.manage")]
    OrganizersManage,
    #[serde(rename = "seasons.manage")]
    SeasonsManage,
    #[serde(rename = "rating_config.manage")]
    RatingConfigManage,
    #[serde(rename = "moderation")]
    Moderation,
    #[serde(rename = "push.send")]
    PushSend,
    #[serde(rename = "metrics.view")]
    MetricsView,
    #[serde(rename = "admins.manage")]
    AdminsManage,
    #[serde(rename = "cities.manage")]
    CitiesManage,
    #[serde(rename = "content.manage")]
    ContentManage,
    #[serde(rename = "tournaments.manage")]
    TournamentsManage,
}

impl Permission {
    pub const ALL: [Permission; 10] = [
        Permission::OrganizersManage,
        Permission::SeasonsManage,
        Permission::RatingConfigManage,
        Permission::Moderation,
        Permission::PushSend,
        Permission::MetricsView,
        Permission::AdminsManage,
        Permission::CitiesManage,
        Permission::ContentManage,
        Permission::TournamentsManage,
    ];
}

/// The spec's table: whether `role` carries `permission`.
pub fn role_grants(role: AdminRole, permission: Permission) -> bool {
    use Permission::*;
    match role {
        AdminRole::SuperAdmin => true,
        AdminRole::Moderator => matches!(permission, Moderation | PushSend | MetricsView),
        AdminRole::Support => matches!(permission, MetricsView),
        AdminRole::Marketing => matches!(permission, PushSend | MetricsView | ContentManage),
    }
}

/// Whether a user with `admin_role` holds `permission`.
pub fn has_permission(admin_role: Option<AdminRole>, permission: Permission) -> bool {
    admin_role.is_some_and(|role| role_grants(role, permission))
}

/// Who may act on a club's resource: members with one of `roles`, or a platform admin with
/// `permission` where the contract lists one. Platform roles give no club rights otherwise.
#[derive(Clone, Copy, Debug)]
pub struct ClubRule {
    pub roles: &'static [MemberRole],
    pub permission: Option<Permission>,
}

impl ClubRule {
    pub const OWNER: ClubRule = ClubRule { roles: &[MemberRole::Owner], permission: None };
    pub const STAFF: ClubRule = ClubRule { roles: &[MemberRole::Owner, MemberRole::Td], permission: None };

    /// The decision, given the caller's role in the club (if a member) and platform role.
    pub fn allows(&self, member_role: Option<MemberRole>, admin_role: Option<AdminRole>) -> bool {
        member_role.is_some_and(|role| self.roles.contains(&role))
            || self.permission.is_some_and(|permission| has_permission(admin_role, permission))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Permission::*;

    /// The spec's table, row by row: (permission, super_admin, moderator, support, marketing).
    const TABLE: [(Permission, bool, bool, bool, bool); 10] = [
        (OrganizersManage, true, false, false, false),
        (SeasonsManage, true, false, false, false),
        (RatingConfigManage, true, false, false, false),
        (Moderation, true, true, false, false),
        (PushSend, true, true, false, true),
        (MetricsView, true, true, true, true),
        (AdminsManage, true, false, false, false),
        (CitiesManage, true, false, false, false),
        (ContentManage, true, false, false, true),
        (TournamentsManage, true, false, false, false),
    ];

    #[test]
    fn every_cell_of_the_permission_table_holds() {
        assert_eq!(TABLE.len(), Permission::ALL.len());
        for (permission, super_admin, moderator, support, marketing) in TABLE {
            assert_eq!(role_grants(AdminRole::SuperAdmin, permission), super_admin, "{permission:?}");
            assert_eq!(role_grants(AdminRole::Moderator, permission), moderator, "{permission:?}");
            assert_eq!(role_grants(AdminRole::Support, permission), support, "{permission:?}");
            assert_eq!(role_grants(AdminRole::Marketing, permission), marketing, "{permission:?}");
        }
    }

    #[test]
    fn a_user_without_an_admin_role_has_no_permission() {
        for permission in Permission::ALL {
            assert!(!has_permission(None, permission));
        }
    }

    #[test]
    fn club_staff_means_owner_or_td_and_never_dealer() {
        assert!(ClubRule::STAFF.allows(Some(MemberRole::Owner), None));
        assert!(ClubRule::STAFF.allows(Some(MemberRole::Td), None));
        assert!(!ClubRule::STAFF.allows(Some(MemberRole::Dealer), None));
        assert!(!ClubRule::STAFF.allows(None, None));
    }

    #[test]
    fn a_platform_role_gives_no_club_rights_without_a_listed_permission() {
        assert!(!ClubRule::STAFF.allows(None, Some(AdminRole::SuperAdmin)));
        assert!(!ClubRule::OWNER.allows(Some(MemberRole::Td), Some(AdminRole::SuperAdmin)));
    }

    #[test]
    fn a_listed_permission_opens_the_club_resource_to_its_holders_only() {
        let rule = ClubRule { roles: ClubRule::STAFF.roles, permission: Some(TournamentsManage) };
        assert!(rule.allows(None, Some(AdminRole::SuperAdmin)));
        assert!(!rule.allows(None, Some(AdminRole::Marketing)));
        assert!(!rule.allows(None, Some(AdminRole::Moderator)));
        assert!(rule.allows(Some(MemberRole::Td), None));
    }
}
