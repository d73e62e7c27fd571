//! A watcher's Engine.IO long-polling session: a `GET` waits for the server's packets, a
//! `POST` carries the watcher's, both over one HTTP/1.1 client shared by every watcher
//! (keep-alive, pooled). Only the Socket.IO part is the same as over WebSocket.

use anyhow::{Context, bail};
use reqwest::header::CONTENT_TYPE;

use crate::engineio::{self, ENGINE_IO_PATH, Packet};

pub struct PollConn {
    client: reqwest::Client,
    /// The session's URL (with its `sid`).
    url: String,
    /// The last `GET`'s payload; `body[pos..]` are packets not handed out yet.
    body: Vec<u8>,
    pos: usize,
}

impl PollConn {
    /// Opens a session: the first `GET` answers with the open packet (`0{"sid":...}`).
    pub async fn open(client: &reqwest::Client, base: &str) -> anyhow::Result<Self> {
        let url = format!("{base}{ENGINE_IO_PATH}?EIO=4&transport=polling");
        let body = get(client, &url).await?;
        let (open, rest) = engineio::split_first_packet(&body);
        let Packet::Open(json) = engineio::parse(open) else { bail!("open: no open packet") };
        let Some(sid) = engineio::open_sid(json) else { bail!("open: no sid") };
        let url = format!("{url}&sid={sid}");
        let pos = body.len() - rest.len();
        Ok(Self { client: client.clone(), url, body, pos })
    }

    /// Sends one packet.
    pub async fn send(&mut self, packet: &[u8]) -> anyhow::Result<()> {
        let response = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "text/plain;charset=UTF-8")
            .body(packet.to_vec())
            .send()
            .await
            .context("POST")?;
        if !response.status().is_success() {
            bail!("POST: {}", response.status());
        }
        response.bytes().await.context("POST")?;
        Ok(())
    }

    /// The next packet from the server, polling for more when the last payload is used up;
    /// `None` once the server has ended the session.
    pub async fn next_packet(&mut self) -> anyhow::Result<Option<&[u8]>> {
        while self.pos == self.body.len() {
            let response = self.client.get(&self.url).send().await.context("GET")?;
            // engineioxide answers a session it no longer knows with 400.
            if response.status() == reqwest::StatusCode::BAD_REQUEST {
                return Ok(None);
            }
            if !response.status().is_success() {
                bail!("GET: {}", response.status());
            }
            self.body = response.bytes().await.context("GET")?.into();
            self.pos = 0;
        }
        let (packet, rest) = engineio::split_first_packet(&self.body[self.pos..]);
        let start = self.pos;
        self.pos = self.body.len() - rest.len();
        Ok(Some(&self.body[start..start + packet.len()]))
    }
}

async fn get(client: &reqwest::Client, url: &str) -> anyhow::Result<Vec<u8>> {
    let response = client.get(url).send().await.context("GET")?;
    if !response.status().is_success() {
        bail!("GET: {}", response.status());
    }
    Ok(response.bytes().await.context("GET")?.into())
}
