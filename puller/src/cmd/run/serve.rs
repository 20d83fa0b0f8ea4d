//! The HTTP/1.1 responder of `airlock-puller run`: `GET /healthz` and `GET /metrics`, one
//! request per connection. It is hand-written because two read-only endpoints do not
//! justify a web framework; it reads at most [`REQUEST_BYTES`] per request, gives a slow
//! client [`READ_TIMEOUT`], and answers nothing but those two paths.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::metrics::Metrics;

/// A request line and a few headers; scrapers send a few hundred bytes.
const REQUEST_BYTES: usize = 8 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Mutex<Metrics>>, interval: Duration) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(stream, &metrics, interval).await {
                tracing::debug!(error = %e, "metrics connection failed");
            }
        });
    }
}

async fn answer(mut stream: TcpStream, metrics: &Mutex<Metrics>, interval: Duration) -> std::io::Result<()> {
    let Ok(head) = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await else {
        return Ok(());
    };
    let head = head?;
    let (status, content_type, body) = respond(&head, metrics, interval);
    let response =
        format!("HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// Reads until the end of the headers, the size cap, or the end of the stream.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while head.len() < REQUEST_BYTES && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(head)
}

fn respond(head: &[u8], metrics: &Mutex<Metrics>, interval: Duration) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    if method != "GET" {
        return ("405 Method Not Allowed", TEXT, "only GET\n".into());
    }
    let metrics = metrics.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match path.split('?').next().unwrap_or_default() {
        "/healthz" if metrics.healthy(Timestamp::now(), interval) => ("200 OK", TEXT, "ok\n".into()),
        "/healthz" => ("503 Service Unavailable", TEXT, "no successful run in the last 3 intervals\n".into()),
        "/metrics" => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics.render()),
        _ => ("404 Not Found", TEXT, "not found: try /metrics or /healthz\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reports::report::{Report, RunReport, RunResult};

    async fn get(addr: std::net::SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
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
