//! Public player profiles and following: `/players/{userId}`, its `/follow`, `/me/follows`.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    following_twice_and_unfollowing_twice_each_leave_one_state,
    following_oneself_is_a_validation_error_and_an_unknown_player_is_not_found,
    the_public_profile_shows_the_rating_and_follows_but_never_the_phone,
    my_follows_lists_the_players_i_follow_most_recent_first,
    followers_of_names_everyone_who_follows_a_player,
);

async fn following_twice_and_unfollowing_twice_each_leave_one_state(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    let path = format!("/players/{}/follow", boris.user_id);
    let token = Some(anna.access_token.as_str());

    for _ in 0..2 {
        let reply = app.put(&path, token, json!({})).await;
        let card = reply.assert_ok();
        assert_eq!(card["userId"], boris.user_id.to_string());
        assert_eq!(card["followersCount"], 1);
        assert_eq!(card["followedByMe"], true);
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM follows").await, 1);

    for _ in 0..2 {
        let reply = app.delete(&path, token).await;
        assert_eq!(reply.status.as_u16(), 204, "{reply:?}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM follows").await, 0);
    let card = app.get(&format!("/players/{}", boris.user_id), token).await;
    assert_eq!(card.assert_ok()["followersCount"], 0);
    assert_eq!(card.body["followedByMe"], false);
    app.put(&path, None, json!({})).await.assert_error(401, "UNAUTHORIZED");
}

async fn following_oneself_is_a_validation_error_and_an_unknown_player_is_not_found(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let token = Some(anna.access_token.as_str());
    let own = format!("/players/{}/follow", anna.user_id);
    let reply = app.put(&own, token, json!({})).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "userId");
    app.delete(&own, token).await.assert_error(400, "VALIDATION_ERROR");

    let nobody = Uuid::new_v4();
    app.put(&format!("/players/{nobody}/follow"), token, json!({})).await.assert_error(404, "NOT_FOUND");
    app.delete(&format!("/players/{nobody}/follow"), token).await.assert_error(404, "NOT_FOUND");
    app.get(&format!("/players/{nobody}"), None).await.assert_error(404, "NOT_FOUND");
    app.get("/players/not-a-uuid", None).await.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(app.count("SELECT COUNT(*) FROM follows").await, 0);
}

async fn the_public_profile_shows_the_rating_and_follows_but_never_the_phone(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let phone = "+79995554433";
    let boris = app.sign_in(phone).await;
    let body = json!({"name": "Boris", "nickname": "bluff", "citySlug": "kazan", "avatarUrl": "https://cdn.example.org/b.png"});
    app.patch("/me", Some(&boris.access_token), body).await.assert_ok();
    app.exec(&format!(
        "UPDATE player_profiles SET xp = 120, level = 3, games_played = 4, wins = 1 WHERE user_id = {}",
        app.uuid_literal(boris.user_id)
    ))
    .await;
    let anna = app.sign_in("+79990001001").await;
    app.put(&format!("/players/{}/follow", boris.user_id), Some(&anna.access_token), json!({})).await.assert_ok();

    let path = format!("/players/{}", boris.user_id);
    let anonymous = app.get(&path, None).await;
    let card = anonymous.assert_ok();
    assert_eq!(
        *card,
        json!({
            "userId": boris.user_id.to_string(), "name": "Boris", "nickname": "bluff",
            "avatarUrl": "https://cdn.example.org/b.png", "citySlug": "kazan", "level": 3, "tier": "grinder",
            "skill": 5.0, "gamesPlayed": 4, "wins": 1, "followersCount": 1, "followedByMe": false,
        })
    );
    assert!(!card.to_string().contains("9995554433"), "never a phone: {card}");
    let as_anna = app.get(&path, Some(&anna.access_token)).await;
    assert_eq!(as_anna.assert_ok()["followedByMe"], true);
    assert!(!as_anna.body.to_string().contains("9995554433"));
    app.get(&path, Some("not-a-token")).await.assert_error(401, "UNAUTHORIZED");
}

async fn my_follows_lists_the_players_i_follow_most_recent_first(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    let clara = app.sign_in("+79990001003").await;
    let token = Some(anna.access_token.as_str());
    assert_eq!(app.get("/me/follows", token).await.assert_ok()["items"], json!([]));
    for player in [&boris, &clara] {
        app.put(&format!("/players/{}/follow", player.user_id), token, json!({})).await.assert_ok();
    }
    // Someone else's follows are not mine.
    app.put(&format!("/players/{}/follow", anna.user_id), Some(&boris.access_token), json!({})).await.assert_ok();

    let reply = app.get("/me/follows", token).await;
    let items = reply.assert_ok()["items"].as_array().expect("items").clone();
    let ids: Vec<&str> = items.iter().filter_map(|item| item["userId"].as_str()).collect();
    assert_eq!(ids, [clara.user_id.to_string(), boris.user_id.to_string()]);
    assert!(items.iter().all(|item| item["followedByMe"] == Value::Bool(true)));
    assert!(!reply.body.to_string().contains("+7999000100"), "no phones in the list");
    app.get("/me/follows", None).await.assert_error(401, "UNAUTHORIZED");
}

async fn followers_of_names_everyone_who_follows_a_player(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    let clara = app.sign_in("+79990001003").await;
    for follower in [&anna, &clara] {
        app.put(&format!("/players/{}/follow", boris.user_id), Some(&follower.access_token), json!({}))
            .await
            .assert_ok();
    }
    let mut of_each =
        floor::domain::tournaments::registrations::followers_of_each(app.db(), &[boris.user_id, anna.user_id])
            .await
            .expect("a query");
    let mut followers = of_each.remove(&boris.user_id).expect("Boris has followers");
    followers.sort();
    let mut expected = vec![anna.user_id, clara.user_id];
    expected.sort();
    assert_eq!(followers, expected);
    assert!(of_each.is_empty(), "no one follows Anna: {of_each:?}");
}
