//! A Friday evening: a burst of registrations into one tournament from many phones at once,
//! while others read the agenda, on one node and split between two. Counts and order, not
//! timings (the benchmark times it).

use std::collections::HashMap;

use chrono::Duration;
use floor_entities::enums::RegistrationStatus;
use floor_entities::registrations;
use futures::StreamExt;
use futures::stream;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::json;

use crate::helpers::{Backend, Reply, TestApp, on_both_databases, spawn_app};

on_both_databases!(
    a_thousand_registrations_from_two_hundred_clients_fill_exactly_the_seats_while_the_agenda_is_read,
    a_rush_split_between_two_nodes_is_decided_as_one_queue,
);

const PLAYERS: u32 = 1000;
/// Requests in flight at once, each on its own connection.
const CLIENTS: usize = 200;
const CAPACITY: i32 = 100;
const AGENDA_READS: usize = 200;
const AGENDA_READERS: usize = 8;
/// Players who tap twice: the second tap goes out with the others, and must find the first.
const TWICE: usize = 50;

async fn a_thousand_registrations_from_two_hundred_clients_fill_exactly_the_seats_while_the_agenda_is_read(
    backend: Backend,
) {
    let Some(app) = spawn_app(backend).await else { return };
    rush(&[&app], 44).await;
}

/// The same rush sent half to one node, half to another sharing the database: one queue.
async fn a_rush_split_between_two_nodes_is_decided_as_one_queue(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let second = app.second_node(&[]).await;
    rush(&[&app, &second], 45).await;
}

/// [`PLAYERS`] players (the first [`TWICE`] of them tapping twice) register into a
/// tournament of [`CAPACITY`] seats through `nodes` in turn, [`CLIENTS`] at a time, while the
/// agenda is read; then everything a rush must keep is checked.
async fn rush(nodes: &[&TestApp], prefix: u32) {
    let app = nodes[0];
    let club = app.create_club("Friday club", &format!("+7999000{prefix}00")).await;
    let tournament = app.create_tournament(&club, CAPACITY, Duration::days(1)).await;
    let players = app.crowd(prefix, PLAYERS).await;

    let path = format!("/tournaments/{tournament}/register");
    let taps = players.iter().enumerate().chain(players.iter().enumerate().take(TWICE));
    let registering = stream::iter(taps)
        .enumerate()
        .map(|(n, (player, session))| {
            let node = nodes[n % nodes.len()];
            let path = &path;
            async move { (player, node.post(path, Some(&session.access_token), json!({})).await) }
        })
        .buffer_unordered(CLIENTS)
        .collect::<Vec<(usize, Reply)>>();
    let reading =
        stream::iter(0..AGENDA_READS).map(|_| app.get("/tournaments", None)).buffer_unordered(AGENDA_READERS).collect();
    let (registrations, agendas): (Vec<(usize, Reply)>, Vec<Reply>) = tokio::join!(registering, reading);

    for reply in registrations.iter().map(|(_, reply)| reply).chain(&agendas) {
        assert!(reply.status.as_u16() < 500, "a server error in the burst: {reply:?}");
        assert!(!format!("{:?}", reply.body).contains("locked"), "the database was locked: {reply:?}");
    }
    assert!(agendas.iter().all(|reply| reply.status == 200), "every agenda read was answered");

    // One place per person: of two taps, one registration and one ALREADY_REGISTERED.
    let mut places: HashMap<usize, Vec<&Reply>> = HashMap::new();
    for (player, reply) in &registrations {
        places.entry(*player).or_default().push(reply);
    }
    for (player, replies) in &places {
        let placed = replies.iter().filter(|reply| reply.status == 200).count();
        assert_eq!(placed, 1, "player {player} holds one place: {replies:?}");
        for refused in replies.iter().filter(|reply| reply.status != 200) {
            assert_eq!(refused.body["error"]["code"], "ALREADY_REGISTERED", "{refused:?}");
        }
    }
    let placed: Vec<&Reply> =
        registrations.iter().map(|(_, reply)| reply).filter(|reply| reply.status == 200).collect();
    let answered = |status: &str| placed.iter().filter(|reply| reply.body["status"] == status).count();
    assert_eq!(answered("registered"), CAPACITY as usize, "seats handed out");
    assert_eq!(answered("waitlist"), PLAYERS as usize - CAPACITY as usize, "places on the waitlist");

    // The waitlist is the order of the decisions: each answer's place is its place in the
    // stored queue, and every seat was decided before every place on the waitlist.
    let stored = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament))
        .order_by_asc(registrations::Column::CreatedAt)
        .order_by_asc(registrations::Column::Id)
        .all(app.db())
        .await
        .expect("the registrations");
    assert_eq!(stored.len(), PLAYERS as usize, "one row per person");
    let statuses: Vec<RegistrationStatus> = stored.iter().map(|row| row.status).collect();
    let seats = CAPACITY as usize;
    assert!(statuses[..seats].iter().all(|status| *status == RegistrationStatus::Registered), "seats first");
    assert!(statuses[seats..].iter().all(|status| *status == RegistrationStatus::Waitlist), "then the queue");
    let mut by_place: Vec<(i64, String)> = placed
        .iter()
        .filter(|reply| reply.body["status"] == "waitlist")
        .map(|reply| {
            let place = reply.body["waitlistPosition"].as_i64().expect("a place in the queue");
            (place, reply.body["id"].as_str().expect("an id").to_owned())
        })
        .collect();
    by_place.sort();
    let queue: Vec<(i64, String)> =
        stored[seats..].iter().zip(1..).map(|(row, place)| (place, row.id.to_string())).collect();
    assert_eq!(by_place, queue, "each answer's place in the queue is its place in the stored queue");

    for node in nodes {
        let card = node.get(&format!("/tournaments/{tournament}"), None).await;
        assert_eq!(card.body["registeredCount"], CAPACITY);
        assert_eq!(card.body["waitlistCount"], PLAYERS - CAPACITY as u32);
    }
}

/// A group that cannot commit is refused whole and leaves nothing: on PostgreSQL a trigger
/// fails the insert of one player's registration in the middle of a rush. That player, and
/// whoever shared the group, is refused; every registration that was answered `200` is stored
/// as answered, every refused player holds nothing, and each of them registers afterwards
/// into the place the queue then has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_cannot_commit_is_refused_whole_and_loses_nothing_acknowledged() {
    const SEATS: i32 = 50;
    let Some(app) = spawn_app(Backend::Postgres).await else { return };
    let club = app.create_club("Friday club", "+79990004600").await;
    let tournament = app.create_tournament(&club, SEATS, Duration::days(1)).await;
    let players = app.crowd(46, 300).await;
    let poisoned = players[150].user_id;
    app.db()
        .execute_unprepared(&format!(
            "CREATE FUNCTION refuse_one() RETURNS trigger AS $$ BEGIN \
               IF NEW.user_id = '{poisoned}' THEN RAISE EXCEPTION 'this test refuses the row'; END IF; \
               RETURN NEW; END $$ LANGUAGE plpgsql; \
             CREATE TRIGGER refuse_one BEFORE INSERT ON registrations FOR EACH ROW EXECUTE FUNCTION refuse_one();"
        ))
        .await
        .expect("the trigger made");

    let path = format!("/tournaments/{tournament}/register");
    let replies: Vec<(usize, Reply)> = stream::iter(players.iter().enumerate())
        .map(|(n, player)| {
            let path = &path;
            let app = &app;
            async move { (n, app.post(path, Some(&player.access_token), json!({})).await) }
        })
        .buffer_unordered(100)
        .collect()
        .await;

    let stored: HashMap<uuid::Uuid, registrations::Model> = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament))
        .all(app.db())
        .await
        .expect("the registrations")
        .into_iter()
        .filter_map(|row| Some((row.user_id?, row)))
        .collect();
    let mut refused = Vec::new();
    for (n, reply) in &replies {
        let user_id = players[*n].user_id;
        if reply.status == 200 {
            let row = stored.get(&user_id).unwrap_or_else(|| panic!("player {n} was answered 200 and is stored"));
            assert_eq!(reply.body["id"], row.id.to_string());
            assert_eq!(reply.body["status"], serde_json::to_value(row.status).expect("a status"));
        } else {
            assert_eq!(reply.status, 500, "a group that could not commit: {reply:?}");
            assert!(!stored.contains_key(&user_id), "refused player {n} holds nothing");
            refused.push(*n);
        }
    }
    assert!(refused.contains(&150), "the player whose row could not be written was refused");
    let seated = stored.values().filter(|row| row.status == RegistrationStatus::Registered).count();
    assert_eq!(seated, SEATS as usize, "the seats went to the registrations that were written");

    // Nothing of a refused group was kept in memory: the others register now, at the end.
    app.db().execute_unprepared("DROP TRIGGER refuse_one ON registrations").await.expect("the trigger dropped");
    let waiting = stored.values().filter(|row| row.status == RegistrationStatus::Waitlist).count() as i64;
    for (place, n) in refused.iter().enumerate() {
        let again = app.post(&path, Some(&players[*n].access_token), json!({})).await;
        assert_eq!(again.status, 200, "{again:?}");
        assert_eq!(again.body["status"], "waitlist");
        assert_eq!(again.body["waitlistPosition"], waiting + place as i64 + 1, "at the end of the queue");
    }
}
