//! Integration tests: the real server on a random port, spoken to over HTTP as the apps do,
//! on a fresh SQLite file and a fresh PostgreSQL database per test.

mod helpers;

mod admins;
mod auth;
mod cli;
mod errors;
mod health;
mod openapi;
mod organizers;
mod registration;
mod tournaments;
mod venues;
mod profile;
mod reference_data;
