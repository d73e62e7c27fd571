//! Integration tests: the real server on a random port, spoken to over HTTP as the apps do,
//! on a fresh SQLite file and a fresh PostgreSQL database per test.

mod helpers;

mod fake_fcm;

mod admin_tournaments;
mod admins;
mod asyncapi;
mod auth;
mod broadcasts;
mod burst;
mod calendar;
mod cli;
mod compression;
mod content_admin;
mod contract_tools;
mod dealer_invites;
mod dealers;
mod deploy;
mod devices;
mod docs;
mod errors;
mod etags;
mod exports;
mod failover;
mod game_day;
mod health;
mod idempotency;
mod integrity;
mod jobs;
mod limits;
mod live;
mod load_balancer;
mod members;
mod metrics;
mod moderation;
mod notifications;
mod openapi;
mod organizers;
mod permissions;
mod players;
mod profile;
mod rating;
mod reads;
mod redis_outage;
mod reference_data;
mod registration;
mod schemathesis;
mod screen;
mod seasons;
mod staffing;
mod tournament_dealers;
mod tournaments;
mod uploads;
mod venues;
mod watchers;
