//! The club's exports and printable pages: registrations.csv and results.csv (UTF-8 with a
//! BOM), the seat list and the sign-in sheet, for the club's owner or td only.

use serde_json::json;

use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app};
use crate::live::{Ready, ready, seated_ids, staff};

on_both_databases!(
    the_registrations_export_opens_in_a_spreadsheet_with_every_registration,
    the_results_export_lists_the_confirmed_places,
    the_printable_pages_show_the_seats_and_the_sign_in_sheet,
    exports_and_printable_pages_are_for_the_clubs_staff_only,
);

const BOM: &str = "\u{feff}";

/// A GET with the owner's token: status, content type, body.
async fn fetch(app: &TestApp, path: &str, token: Option<&str>) -> (u16, String, String) {
    let mut request = app.client.get(format!("{}{path}", app.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("an answer");
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (status, kind, response.text().await.expect("a body"))
}

/// The rows of a CSV export (header first), after checking its BOM.
fn rows(body: &str) -> Vec<Vec<String>> {
    let text = body.strip_prefix(BOM).unwrap_or_else(|| panic!("a BOM first: {body:?}"));
    csv::Reader::from_reader(text.as_bytes())
        .into_records()
        .map(|record| record.expect("a CSV record").iter().map(str::to_owned).collect())
        .collect()
}

fn header(body: &str) -> Vec<String> {
    let text = body.strip_prefix(BOM).expect("a BOM first");
    csv::Reader::from_reader(text.as_bytes()).headers().expect("a header").iter().map(str::to_owned).collect()
}

fn owner(day: &Ready) -> Option<&str> {
    Some(day.club.owner.access_token.as_str())
}

async fn the_registrations_export_opens_in_a_spreadsheet_with_every_registration(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990600001", 601, 3).await;
    app.patch("/me", Some(&day.players[0].access_token), json!({"name": "Анна Ахматова", "nickname": "=1+1"}))
        .await
        .assert_ok();
    staff(&app, &day.club, &day.path("walk-in"), json!({"phone": "+79996010099", "name": "Гость, с запятой"}))
        .await
        .assert_ok();
    let path = format!("/api/v1/tournaments/{}/registrations.csv", day.id);

    let (status, kind, body) = fetch(&app, &path, owner(&day)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(kind, "text/csv; charset=utf-8");
    assert_eq!(
        header(&body),
        [
            "№",
            "Имя",
            "Никнейм",
            "Телефон",
            "Статус",
            "Источник",
            "Зарегистрирован",
            "Очередь",
            "Стол",
            "Место",
            "Выбыл"
        ]
    );
    let before = rows(&body);
    assert_eq!(before.len(), 4, "three players and a walk-in: {before:?}");
    assert_eq!(before[0][1], "Анна Ахматова", "Cyrillic survives");
    assert_eq!(before[0][2], "'=1+1", "a nickname a spreadsheet would run stays text");
    assert_eq!(before[0][3], "+79996010000");
    assert_eq!(before[0][4], "Отмечен");
    assert_eq!(before[3][1], "Гость, с запятой", "a comma is quoted, not a new column");
    assert_eq!((before[3][4].as_str(), before[3][5].as_str()), ("Отмечен", "На месте"));
    assert!(before.iter().all(|row| row[8].is_empty()), "nobody sits before the start");

    let started = day.start(&app).await;
    let (_, _, body) = fetch(&app, &path, owner(&day)).await;
    let after = rows(&body);
    assert_eq!(after.len(), 4);
    assert!(after.iter().all(|row| row[8] == "1" && !row[9].is_empty()), "everyone at table 1: {after:?}");
    assert_eq!(seated_ids(&started).len(), 4);
}

async fn the_results_export_lists_the_confirmed_places(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990600011", 602, 3).await;
    let path = format!("/api/v1/tournaments/{}/results.csv", day.id);
    let (status, _, body) = fetch(&app, &path, owner(&day)).await;
    assert_eq!(status, 200);
    assert_eq!(header(&body), ["Место", "Имя", "Очки сезона", "Опыт", "Скилл до", "Скилл после"]);
    assert!(rows(&body).is_empty(), "nothing before the results are confirmed");

    day.start(&app).await;
    for out in [0, 1] {
        let body = json!({"tournamentId": day.id, "registrationId": day.registrations[out]});
        staff(&app, &day.club, "/eliminations", body).await.assert_ok();
    }
    staff(&app, &day.club, &day.path("confirm-results"), json!({})).await.assert_ok();
    let (_, _, body) = fetch(&app, &path, owner(&day)).await;
    let places = rows(&body);
    let named: Vec<(&str, &str)> = places.iter().map(|row| (row[0].as_str(), row[1].as_str())).collect();
    assert_eq!(named, [("1", "Player 2"), ("2", "Player 1"), ("3", "Player 0")]);
    assert!(places.iter().all(|row| row[2].parse::<i32>().is_ok() && row[4].contains('.')), "{places:?}");
}

async fn the_printable_pages_show_the_seats_and_the_sign_in_sheet(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990600021", 603, 12).await;
    let late = app.sign_in("+79996030099").await;
    app.post(&day.path("register"), Some(&late.access_token), json!({})).await.assert_ok();
    let seats = format!("/print/{}/seats", day.id);
    let sheet = format!("/print/{}/sign-in", day.id);

    let (status, kind, html) = fetch(&app, &seats, owner(&day)).await;
    assert_eq!((status, kind.as_str()), (200, "text/html; charset=utf-8"));
    assert!(html.contains("Рассадка появится после старта"), "{html}");
    assert!(html.contains("size: A4"), "laid out for A4");

    let (status, _, html) = fetch(&app, &sheet, owner(&day)).await;
    assert_eq!(status, 200);
    for n in 0..12 {
        assert!(html.contains(&format!("Player {n}<")), "Player {n} on the sheet");
    }
    assert!(html.contains("…0000") && !html.contains("+79996030000"), "phones only by their last four digits");
    assert!(html.contains("Зарегистрирован") && html.contains("Отмечен"));
    assert_eq!(html.matches("<tr>").count(), 14, "a header and thirteen people");

    let started = day.start(&app).await;
    let (_, _, html) = fetch(&app, &seats, owner(&day)).await;
    assert!(html.contains("Стол 1") && html.contains("Стол 2"), "two tables of six");
    assert!(html.contains("Игроки по имени"));
    for table in started["tables"].as_array().expect("tables") {
        for seat in table["seats"].as_array().expect("seats") {
            let row = format!(
                "<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                seat["name"].as_str().unwrap_or_default(),
                table["tableNo"],
                seat["seatNo"]
            );
            assert!(html.contains(&row), "{row} in the list by name");
        }
    }
    assert_eq!(html.matches("class=\"empty\"").count(), 6, "three free seats at each of two tables");
}

async fn exports_and_printable_pages_are_for_the_clubs_staff_only(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let day = ready(&app, "+79990600031", 604, 2).await;
    let td = app.add_td(&day.club, "+79996040099").await;
    let other = app.create_club("Kings", "+79996040098").await;
    let other_td = app.add_td(&other, "+79996040097").await;
    let paths = [
        format!("/api/v1/tournaments/{}/registrations.csv", day.id),
        format!("/api/v1/tournaments/{}/results.csv", day.id),
        format!("/print/{}/seats", day.id),
        format!("/print/{}/sign-in", day.id),
    ];
    for path in &paths {
        for token in [&day.players[0].access_token, &other.owner.access_token, &other_td.access_token] {
            let (status, _, body) = fetch(&app, path, Some(token)).await;
            assert_eq!(status, 403, "{path}: {body}");
            assert!(body.contains("FORBIDDEN"), "{body}");
        }
        assert_eq!(fetch(&app, path, None).await.0, 401, "{path}");
        assert_eq!(fetch(&app, path, Some(&td.access_token)).await.0, 200, "{path}: a td prints");
    }
    let unknown = uuid::Uuid::now_v7();
    assert_eq!(fetch(&app, &format!("/print/{unknown}/seats"), owner(&day)).await.0, 404);
}
