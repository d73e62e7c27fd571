//! Integration tests: the real server on a random port, spoken to over HTTP as the apps do,
//! on a fresh SQLite file and a fresh PostgreSQL database per test.

mod helpers;

mod admins;
mod auth;
mod cli;
mod dealer_invites;
mod dealers;
mod errors;
mod health;
mod members;
mod openapi;
mod organizers;
mod profile;
mod reference_data;
mod staffing;
mod tournament_dealers;
