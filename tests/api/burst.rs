//! A Friday evening: a burst of registrations into one tournament from many phones at once,
//! while others read the agenda. Counts, not timings (the benchmark times it).

use chrono::Duration;
use futures::StreamExt;
use futures::stream;
use serde_json::json;

use crate::helpers::{Backend, Reply, on_both_databases, spawn_app};

on_both_databases!(a_thousand_registrations_from_two_hundred_clients_fill_exactly_the_seats_while_the_agenda_is_read);

const PLAYERS: u32 = 1000;
/// Requests in flight at once, each on its own connection.
const CLIENTS: usize = 200;
const CAPACITY: i32 = 100;
const AGENDA_READS: usize = 200;
const AGENDA_READERS: usize = 8;

async fn a_thousand_registrations_from_two_hundred_clients_fill_exactly_the_seats_while_the_agenda_is_read(
    backend: Backend,
) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Friday club", "+79990004400").await;
    let tournament = app.create_tournament(&club, CAPACITY, Duration::days(1)).await;
    let players = app.crowd(44, PLAYERS).await;

    let path = format!("/tournaments/{tournament}/register");
    let registering = stream::iter(&players)
        .map(|player| app.post(&path, Some(&player.access_token), json!({})))
        .buffer_unordered(CLIENTS)
        .collect::<Vec<Reply>>();
    let reading =
        stream::iter(0..AGENDA_READS).map(|_| app.get("/tournaments", None)).buffer_unordered(AGENDA_READERS).collect();
    let (registrations, agendas): (Vec<Reply>, Vec<Reply>) = tokio::join!(registering, reading);

    for reply in registrations.iter().chain(&agendas) {
        assert!(reply.status.as_u16() < 500, "a server error in the burst: {reply:?}");
        assert!(!format!("{:?}", reply.body).contains("locked"), "the database was locked: {reply:?}");
    }
    let answered = |status: &str| registrations.iter().filter(|reply| reply.body["status"] == status).count();
    assert_eq!(answered("registered"), CAPACITY as usize, "seats handed out");
    assert_eq!(answered("waitlist"), PLAYERS as usize - CAPACITY as usize, "places on the waitlist");
    assert!(agendas.iter().all(|reply| reply.status == 200), "every agenda read was answered");

    let stored = |status: &str| {
        format!(
            "SELECT COUNT(*) FROM registrations WHERE tournament_id = {} AND status = '{status}'",
            app.uuid_literal(tournament)
        )
    };
    assert_eq!(app.count(&stored("registered")).await, i64::from(CAPACITY));
    assert_eq!(app.count(&stored("waitlist")).await, i64::from(PLAYERS) - i64::from(CAPACITY));
    let card = app.get(&format!("/tournaments/{tournament}"), None).await;
    assert_eq!(card.body["registeredCount"], CAPACITY);
    assert_eq!(card.body["waitlistCount"], PLAYERS - CAPACITY as u32);
}
