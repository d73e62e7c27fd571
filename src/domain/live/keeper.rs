//! The keeper of this node's leases: every [`RENEW_EVERY`] (or at once when another node says
//! it handed its tournaments over) it renews the leases this node holds, stops the actors of
//! those it lost, and takes the running tournaments nobody holds, so a dead node's clocks
//! move again within a lease and a renewal.

use std::time::Duration;

use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use super::engine::Live;
use super::leases::RENEW_EVERY;

/// How long the keeper waits after a failed round (the database is unreachable).
const AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Keeps the leases until `shutdown`; nothing to do on a single node.
pub async fn keep(live: Live, shutdown: CancellationToken) {
    let Some(nodes) = live.nodes().cloned() else { return };
    let mut tick = tokio::time::interval(RENEW_EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
            () = nodes.keeper.notified() => {}
        }
        let round = async {
            for lost in nodes.leases.renew().await? {
                live.registry().let_go(lost);
            }
            let orphans = nodes.leases.orphans().await?;
            live.registry().resume(&orphans).await;
            crate::infra::error::AppResult::Ok(())
        };
        if let Err(err) = round.await {
            tracing::warn!(error = %err, "could not keep the tournament leases; trying again");
            tokio::time::sleep(AFTER_FAILURE).await;
        }
    }
}
