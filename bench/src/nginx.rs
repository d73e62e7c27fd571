//! The machine's limit for one read: nginx serving the bytes of floor's answer from a file,
//! with what a tuned static server has (`sendfile`, one worker per core, no access log,
//! keep-alive connections that are never recycled), measured by the same load as floor's
//! route in the same run. A route's req/s over nginx's is what its per-request work costs
//! beyond moving its bytes.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// A running nginx serving one file at `/`; stopped when dropped.
pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    /// Its configuration, the file it serves and its logs.
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts `binary` serving `body` as `application/json` on a free port of 127.0.0.1.
    pub fn serve(binary: &Path, body: &[u8]) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir().context("a folder for nginx")?;
        std::fs::write(dir.path().join("answer.json"), body).context("writing the answer nginx serves")?;
        let addr = free_address()?;
        std::fs::write(dir.path().join("nginx.conf"), config(addr, dir.path())).context("writing nginx.conf")?;
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {} (Debian's nginx package)", binary.display()))?;
        let mut nginx = Self { child, addr, _dir: dir };
        nginx.wait_until_listening()?;
        Ok(nginx)
    }

    fn wait_until_listening(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        while TcpStream::connect(self.addr).is_err() {
            if let Some(exit) = self.child.try_wait()? {
                bail!("nginx exited at start ({exit}): its error log is in its folder");
            }
            if started.elapsed() > Duration::from_secs(10) {
                bail!("nginx did not listen on {} within 10 s", self.addr);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for Nginx {
    /// Stops the master with SIGTERM, which stops its workers (a killed master leaves them
    /// serving), and kills it when that fails.
    fn drop(&mut self) {
        let terminated = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        if !terminated.is_ok_and(|status| status.success()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Its configuration: in the foreground, its files under `dir`, `/` answering the file.
fn config(addr: SocketAddr, dir: &Path) -> String {
    let dir = dir.display();
    format!(
        "daemon off;
worker_processes auto;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000000;
    keepalive_timeout 60s;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen {addr};
        root {dir};
        location / {{
            default_type application/json;
            try_files /answer.json =404;
        }}
    }}
}}
"
    )
}

/// A port of 127.0.0.1 nothing listens on now.
fn free_address() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?)
}
