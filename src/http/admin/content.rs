//! What the content admin resources (cities, level tiers, promo slides) share in their
//! requests: translations checked and stored per locale, stable keys, a unique key already
//! taken, and where a new row goes in display order.

use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ActiveModelBehavior, ActiveModelTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel, QuerySelect,
};

use crate::http::reference::Name;
use crate::http::validate::Problems;
use crate::http::views::Localized;
use crate::infra::error::{AppError, AppResult, ErrorCode, OnUniqueViolation};

/// Longest name of a city or a tier, in characters.
pub const NAME_MAX: usize = 100;
/// The problem of a field whose value another row already holds.
const TAKEN: &str = "is taken";

/// The locales present in `texts`, each checked by `check` (given the field path
/// `translations.<locale>`); on create (`all_required`) a missing locale is a problem too.
pub fn check_translations<T>(
    problems: &mut Problems,
    texts: Localized<T>,
    all_required: bool,
    check: impl Fn(&mut Problems, &str, T) -> T,
) -> Vec<(&'static str, T)> {
    if all_required {
        for (locale, present) in [("ru", texts.ru.is_some()), ("en", texts.en.is_some())] {
            if !present {
                problems.add(&format!("translations.{locale}"), "is required");
            }
        }
    }
    texts
        .present()
        .into_iter()
        .map(|(locale, text)| (locale, check(problems, &format!("translations.{locale}"), text)))
        .collect()
}

/// Names per locale (of a city or a tier): 1 to 100 characters, trimmed.
pub fn check_names(problems: &mut Problems, texts: Localized<Name>, all_required: bool) -> Vec<(&'static str, Name)> {
    check_translations(problems, texts, all_required, |problems, field, text| Name {
        name: problems.text(&format!("{field}.name"), &text.name, 1, NAME_MAX),
    })
}

/// Replaces each row by its primary key (a translation by parent and locale): the locales
/// given are replaced whole, the others stay.
pub async fn replace_rows<A>(conn: &impl ConnectionTrait, rows: Vec<A>) -> Result<(), DbErr>
where
    A: ActiveModelTrait + ActiveModelBehavior + Send,
    <A::Entity as EntityTrait>::Model: IntoActiveModel<A>,
{
    for row in rows {
        A::Entity::delete(row.clone()).exec(conn).await?;
        row.insert(conn).await?;
    }
    Ok(())
}

/// A stable key (city slug, tier key): lowercase latin letters and digits in groups joined
/// by single dashes, at most `max` characters.
pub fn key(problems: &mut Problems, field: &str, value: &str, max: usize) -> String {
    let value = value.to_owned();
    let groups_ok = value
        .split('-')
        .all(|group| !group.is_empty() && group.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
    if !groups_ok || value.len() > max {
        problems.add(
            field,
            format!("must be lowercase latin letters, digits and single inner dashes, at most {max} characters"),
        );
    }
    value
}

/// A write that may hit a unique key: the violation is `VALIDATION_ERROR` on `field`,
/// "is taken", so two admins racing for one key get the same answer as a repeated request.
pub fn unless_taken<T>(result: Result<T, DbErr>, field: &str) -> AppResult<T> {
    result.on_unique_violation(ErrorCode::ValidationError, TAKEN).map_err(|err| match err.code() {
        ErrorCode::ValidationError => AppError::invalid_field(field, TAKEN),
        _ => err,
    })
}

/// Records that `field`'s value is held by another row.
pub fn add_taken(problems: &mut Problems, field: &str) {
    problems.add(field, TAKEN);
}

/// The display position that puts a new row after every existing one.
pub async fn next_sort_order<E: EntityTrait>(conn: &impl ConnectionTrait, column: E::Column) -> Result<i32, DbErr> {
    let largest: Option<Option<i32>> = E::find()
        .select_only()
        .column_as(Expr::expr(Func::max(Expr::col(column))), "largest")
        .into_tuple()
        .one(conn)
        .await?;
    Ok(largest.flatten().map_or(0, |order| order.saturating_add(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems_of(check: impl FnOnce(&mut Problems)) -> bool {
        let mut problems = Problems::default();
        check(&mut problems);
        problems.into_result().is_err()
    }

    #[test]
    fn keys_are_lowercase_latin_and_digits_joined_by_single_dashes() {
        for good in ["moscow", "saint-petersburg", "n1", "a-1-b"] {
            assert!(
                !problems_of(|p| {
                    key(p, "slug", good, 50);
                }),
                "{good}"
            );
        }
        for bad in ["", "Moscow", "москва", "-moscow", "moscow-", "saint--petersburg", "a_b", "a b", "abcdef"] {
            let max = if bad == "abcdef" { 5 } else { 50 };
            assert!(
                problems_of(|p| {
                    key(p, "slug", bad, max);
                }),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_create_needs_every_locale_and_an_edit_only_those_it_gives() {
        let only_ru = || Localized { ru: Some(Name { name: " Казань ".to_owned() }), en: None };
        let mut problems = Problems::default();
        let names = check_names(&mut problems, only_ru(), false);
        assert!(problems.into_result().is_ok());
        assert_eq!(names.len(), 1);
        assert_eq!((names[0].0, names[0].1.name.as_str()), ("ru", "Казань"));
        assert!(problems_of(|p| {
            check_names(p, only_ru(), true);
        }));
        assert!(problems_of(|p| {
            check_names(p, Localized { ru: Some(Name { name: "  ".to_owned() }), en: None }, false);
        }));
    }
}
