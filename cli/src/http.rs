//! The HTTP/1.1 responder behind the long-running commands' `/healthz` and `/metrics`
//! (`airlock-puller run`, `airlock-publisher watch`): one GET per connection, answered by
//! the caller's function of the path. It is hand-written because a few read-only endpoints
//! do not justify a web framework; it reads at most [`REQUEST_BYTES`] per request, gives a
//! slow client [`READ_TIMEOUT`], and answers any method but GET with 405. What each path
//! says is the caller's.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request line and a few headers; scrapers send a few hundred bytes.
pub const REQUEST_BYTES: usize = 8 * 1024;
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The content type of plain answers.
pub const TEXT: &str = "text/plain; charset=utf-8";
/// The Prometheus text exposition format.
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a path answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status line after the version, e.g. `200 OK`.
    pub status: &'static str,
    pub content_type: &'static str,
    pub body: String,
}

impl Response {
    pub fn text(status: &'static str, body: impl Into<String>) -> Response {
        Response { status, content_type: TEXT, body: body.into() }
    }
}

/// Answers a GET of a path (query left out).
pub type Respond = Arc<dyn Fn(&str) -> Response + Send + Sync>;

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener, respond: Respond) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let respond = respond.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(stream, &*respond).await {
                tracing::debug!(error = %e, "metrics connection failed");
            }
        });
    }
}

async fn answer(mut stream: TcpStream, respond: &(dyn Fn(&str) -> Response + Send + Sync)) -> std::io::Result<()> {
    let Ok(head) = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await else {
        return Ok(());
    };
    let head = head?;
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let r = match method {
        "GET" => respond(path.split('?').next().unwrap_or_default()),
        _ => Response::text("405 Method Not Allowed", "only GET\n"),
    };
    let response = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        r.status,
        r.content_type,
        r.body.len(),
        r.body
    );
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

/// The answer of the two paths every long-running command serves: `/healthz` (200, or 503
/// with why it is not healthy) and `/metrics` (rendered only when asked for).
pub fn health_or_metrics(path: &str, health: Result<(), &'static str>, metrics: impl FnOnce() -> String) -> Response {
    match (path, health) {
        ("/healthz", Ok(())) => Response::text("200 OK", "ok\n"),
        ("/healthz", Err(why)) => Response::text("503 Service Unavailable", format!("{why}\n")),
        ("/metrics", _) => Response { status: "200 OK", content_type: PROMETHEUS, body: metrics() },
        _ => Response::text("404 Not Found", "not found: try /metrics or /healthz\n"),
    }
}

/// Writes the `# HELP` and `# TYPE` lines of a metric family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    use std::fmt::Write;
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A test client: sends `request` to `addr`, returns the whole answer.
pub async fn get(addr: std::net::SocketAddr, request: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(request.as_bytes()).await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_get_by_path_and_refuses_other_methods() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let respond: Respond = Arc::new(|path| match path {
            "/healthz" => Response::text("200 OK", "ok\n"),
            _ => Response::text("404 Not Found", "no\n"),
        });
        let server = tokio::spawn(serve(listener, respond));
        let ok = get(addr, "GET /healthz?verbose HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n") && ok.ends_with("\r\n\r\nok\n"), "{ok}");
        assert!(ok.contains("Content-Length: 3\r\n"), "{ok}");
        assert!(get(addr, "GET /other HTTP/1.1\r\n\r\n").await.unwrap().starts_with("HTTP/1.1 404 "));
        assert!(get(addr, "POST /healthz HTTP/1.1\r\n\r\n").await.unwrap().starts_with("HTTP/1.1 405 "));
        server.abort();
    }
}
