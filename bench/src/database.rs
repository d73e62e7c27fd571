//! The database a measured floor runs on: its own SQLite file by default, or a fresh
//! PostgreSQL database made for the run and dropped after it (several nodes share one).

use anyhow::Context;
use sea_orm::ConnectionTrait;

/// A PostgreSQL database made for one run, dropped by [`FreshDatabase::drop_it`]; or nothing,
/// for floor's own SQLite file.
pub struct FreshDatabase {
    /// What floor's `DATABASE_URL` is set to; `None`: its SQLite default.
    pub url: Option<String>,
    admin_url: Option<String>,
    name: String,
}

impl FreshDatabase {
    /// A fresh database on the PostgreSQL server of `admin_url`, or none (SQLite) without one.
    pub async fn make(admin_url: Option<&str>) -> anyhow::Result<Self> {
        let Some(admin_url) = admin_url else {
            return Ok(Self { url: None, admin_url: None, name: String::new() });
        };
        let name = format!("floor_bench_{}", uuid::Uuid::new_v4().simple());
        let admin = sea_orm::Database::connect(admin_url).await.context("connecting to PostgreSQL")?;
        admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await?;
        admin.close().await?;
        let base = admin_url.rsplit_once('/').map_or(admin_url, |(base, _)| base);
        Ok(Self { url: Some(format!("{base}/{name}")), admin_url: Some(admin_url.to_owned()), name })
    }

    /// Drops the database (after every floor on it has stopped).
    pub async fn drop_it(self) {
        let Some(admin_url) = self.admin_url else { return };
        let dropped = async {
            let admin = sea_orm::Database::connect(admin_url.as_str()).await?;
            admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await?;
            admin.close().await
        };
        if let Err(err) = dropped.await {
            eprintln!("floor-bench: could not drop the database {}: {err}", self.name);
        }
    }
}
