//! A `redis-server` of a test's own, on a free port, for the tests that kill Redis under the
//! nodes and start it again (`redis_outage`, `rolling`): the machine's Redis on 6379 is shared
//! and never stopped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `redis-server` of the test's own, on a port nobody else uses; killed when dropped.
pub(crate) struct OwnRedis {
    pub port: u16,
    folder: tempfile::TempDir,
    child: Option<Child>,
}

impl OwnRedis {
    /// `None` outside CI when `redis-server` is not installed (CI installs it).
    pub fn start() -> Option<Self> {
        if Command::new("redis-server").arg("--version").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "redis-server must be installed in CI");
            eprintln!("skipping: redis-server is not installed and CI is not set");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .expect("a free port");
        let folder = tempfile::tempdir().expect("a folder for Redis");
        let mut redis = Self { port, folder, child: None };
        redis.run();
        Some(redis)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/?protocol=resp3", self.port)
    }

    /// Starts the server (again) on its port and waits until it answers.
    pub fn run(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.folder.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not listen on {}", self.port);
    }

    /// kill -9: the nodes' connections break at once.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().ok();
            child.wait().ok();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
