//! What `airlock-puller run` answers on `/healthz` and `/metrics`; the HTTP itself is
//! `airlock_cli::http`'s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_cli::http::{self, Response};
use jiff::Timestamp;
use tokio::net::TcpListener;

use super::metrics::Metrics;

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Mutex<Metrics>>, interval: Duration) {
    http::serve(listener, Arc::new(move |path: &str| respond(path, &metrics, interval))).await
}

fn respond(path: &str, metrics: &Mutex<Metrics>, interval: Duration) -> Response {
    let metrics = metrics.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let health = if metrics.healthy(Timestamp::now(), interval) { Ok(()) } else { Err("no successful run in the last 3 intervals") };
    http::health_or_metrics(path, health, || metrics.render())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reports::report::{Report, RunReport, RunResult};

    async fn get(addr: std::net::SocketAddr, request: &str) -> String {
        http::get(addr, request).await.unwrap()
    }

    #[tokio::test]
    async fn answers_health_and_metrics() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Arc::new(Mutex::new(Metrics::new()));
        let server = tokio::spawn(serve(listener, metrics.clone(), Duration::from_secs(60)));
        let health = get(addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(health.starts_with("HTTP/1.1 503 "), "{health}");
        let mut report = Report::start(&"fleet/edge-1".parse().unwrap());
        report.finish(Ok(RunResult::UpToDate));
        metrics.lock().unwrap().record(&report);
        let health = get(addr, "GET /healthz HTTP/1.1\r\n\r\n").await;
        assert!(health.starts_with("HTTP/1.1 200 OK\r\n") && health.ends_with("\r\n\r\nok\n"), "{health}");
        let text = get(addr, "GET /metrics HTTP/1.1\r\n\r\n").await;
        assert!(
            text.contains("Content-Type: text/plain; version=0.0.4") && text.contains("airlock_sync_runs_total{result=\"ok\"} 1"),
            "{text}"
        );
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())), "{text}");
        assert!(get(addr, "GET /other HTTP/1.1\r\n\r\n").await.starts_with("HTTP/1.1 404 "));
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n").await.starts_with("HTTP/1.1 405 "));
        server.abort();
    }
}
