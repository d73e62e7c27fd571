//! The history checker's short run (`floor_bench::history`; `floor-bench history` is the long
//! one): two `floor serve` nodes on PostgreSQL and a Redis of their own, game and desk clients
//! recording every operation, every nemesis once (clients cutting and resending, the owner
//! paused, PostgreSQL slowed to 2.5 s a statement, transactions cut at `COMMIT`, Redis down,
//! one node's clock 2 s ahead, a rolling restart), then the checker over the history and the
//! database. The counts per nemesis and per outcome are printed.

use std::time::Duration;

use floor_bench::history::{Settings, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_nemesis_leaves_each_command_applied_as_answered() {
    let the_box = crate::the_box::whole().await;
    let Some(_database) = the_box.database(crate::helpers::Backend::Postgres).await else { return };
    // Below the ephemeral range, where a client's connection never takes Redis's port.
    let port = 26000 + u16::try_from(std::process::id() % 500).expect("small") * 4;
    let settings = Settings {
        floor: env!("CARGO_BIN_EXE_floor").into(),
        restart_as: None,
        port,
        postgres_url: "postgres://postgres@127.0.0.1:5432/postgres".to_owned(),
        operations: 600,
        games: 3,
        desks: 3,
        window: Duration::from_secs(3),
    };
    let report = run(&settings).await.expect("the run");
    eprintln!("{}", report.text());
    assert!(report.every_nemesis_inflicted(), "{:?}", report.inflicted);
    assert_eq!(
        report.toothless(),
        Vec::<&str>::new(),
        "a nemesis never seen biting tested nothing: {:?}",
        report.bites
    );
    assert_eq!(report.unresolved, 0, "every command with a key resolved once the cluster healed");
    assert!(report.anomalies.is_empty(), "{}", report.explained.join("\n"));
}
