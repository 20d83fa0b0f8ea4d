//! A fault-injecting proxy on 127.0.0.1 (an ephemeral port) in front of one real service,
//! for the fault tests: it passes traffic through until told to answer HTTP 500, to cut a
//! response after so many bytes, or to stop like a killed server (every open connection
//! closed, new ones refused) and later to come back on the same port.
//!
//! Two flavours. [`Proxy::http`] reads each request's head, so faults can pick requests by
//! path; it asks the upstream to close after every response (`Connection: close`), so each
//! request comes on a connection of its own and meets the rules in force when it arrives.
//! [`Proxy::tcp`] forwards bytes without looking at them (the API server speaks TLS), and
//! knows only pass and stop.
//!
//! It is not a general proxy: HTTP/1.1 only, one upstream, no TLS of its own.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// The longest request head read; a registry client's are well under 8 KiB.
const HEAD_LIMIT: usize = 64 * 1024;
/// How long [`Proxy::resume`] tries to listen on the old port again.
const REBIND_FOR: Duration = Duration::from_secs(10);
/// What a registry says when it fails (distribution spec error body).
pub const ERROR_500: &str = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\
                         Content-Length: 71\r\nConnection: close\r\n\r\n\
                         {\"errors\":[{\"code\":\"UNKNOWN\",\"message\":\"injected by the fault proxy\"}]}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Http,
    Tcp,
}

/// What happens to the requests a rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Answer HTTP 500 to this many more of them.
    Answer500 { left: usize },
    /// Cut the next one's response after this many bytes.
    Cut { after: u64 },
    /// Stop the proxy once the next one's response has passed this many bytes.
    Stop { after: u64 },
}

/// A fault for requests whose path contains `path`.
struct Rule {
    path: String,
    fault: Fault,
}

struct Shared {
    addr: SocketAddr,
    upstream: SocketAddr,
    flavour: Flavour,
    rules: Mutex<Vec<Rule>>,
    /// How long every request waits before it is passed on.
    delay: Mutex<Duration>,
    /// From a stop until the acceptor listens again.
    stopped: AtomicBool,
    /// Bumped by every stop: every open connection closes, the listener closes.
    stops: watch::Sender<u64>,
    /// What the proxy did, one line per request or stop.
    events: Mutex<Vec<String>>,
}

pub struct Proxy {
    shared: Arc<Shared>,
    /// Asks the stopped acceptor to listen again; it answers once it does.
    resumes: mpsc::UnboundedSender<oneshot::Sender<std::io::Result<()>>>,
    acceptor: JoinHandle<()>,
}

impl Proxy {
    /// An HTTP/1.1 proxy to `upstream` (`host:port`), passing everything through.
    pub async fn http(upstream: &str) -> Proxy {
        Proxy::start(upstream, Flavour::Http).await
    }

    /// A byte-forwarding proxy to `upstream` (`host:port`), passing everything through.
    pub async fn tcp(upstream: &str) -> Proxy {
        Proxy::start(upstream, Flavour::Tcp).await
    }

    async fn start(upstream: &str, flavour: Flavour) -> Proxy {
        let upstream = tokio::net::lookup_host(upstream)
            .await
            .ok()
            .and_then(|mut addrs| addrs.next())
            .unwrap_or_else(|| panic!("upstream {upstream:?} does not resolve"));
        let listener = listen("127.0.0.1:0".parse().expect("an address")).expect("the proxy listens");
        let addr = listener.local_addr().expect("a local address");
        let shared = Arc::new(Shared {
            addr,
            upstream,
            flavour,
            rules: Mutex::new(Vec::new()),
            delay: Mutex::new(Duration::ZERO),
            stopped: AtomicBool::new(false),
            stops: watch::channel(0).0,
            events: Mutex::new(Vec::new()),
        });
        let (resumes, asked) = mpsc::unbounded_channel();
        let acceptor = tokio::spawn(accept(shared.clone(), listener, asked));
        Proxy { shared, resumes, acceptor }
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// Answers HTTP 500 to the next `count` requests whose path contains `path`
    /// (`usize::MAX`: all of them; `""` matches every path).
    pub fn answer_500(&self, path: &str, count: usize) {
        self.add(path, Fault::Answer500 { left: count });
    }

    /// Cuts the connection of the next request whose path contains `path` after `after`
    /// bytes of its response.
    pub fn cut_response(&self, path: &str, after: u64) {
        self.add(path, Fault::Cut { after });
    }

    /// Stops the proxy (as [`Proxy::stop`]) once the response to the next request whose
    /// path contains `path` has passed `after` bytes: the server dies mid-transfer.
    pub fn stop_during_response(&self, path: &str, after: u64) {
        self.add(path, Fault::Stop { after });
    }

    fn add(&self, path: &str, fault: Fault) {
        assert_eq!(self.shared.flavour, Flavour::Http, "only the HTTP proxy sees requests");
        self.shared.rules.lock().expect("rules").push(Rule { path: path.into(), fault });
    }

    /// Holds every request `by` before passing it on, as a slow or distant server does.
    pub fn delay(&self, by: Duration) {
        assert_eq!(self.shared.flavour, Flavour::Http, "only the HTTP proxy sees requests");
        *self.shared.delay.lock().expect("delay") = by;
    }

    /// Closes every open connection and refuses new ones, as a stopped server does.
    pub fn stop(&self) {
        self.shared.stop("stopped by the test");
    }

    /// Drops every rule and, if stopped, listens on the same port again.
    pub async fn resume(&self) {
        self.shared.rules.lock().expect("rules").clear();
        if !self.shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let (reply, listening) = oneshot::channel();
        self.resumes.send(reply).expect("the proxy's acceptor is running");
        let listened = listening.await.expect("the proxy's acceptor answers");
        listened.unwrap_or_else(|e| panic!("the proxy cannot listen on {} again: {e}", self.addr()));
    }

    /// What the proxy did so far: one line per request (`GET /v2/…: 500`, `… cut after N
    /// bytes`, `… passed N bytes`), per stop and per resume.
    pub fn events(&self) -> Vec<String> {
        self.shared.events.lock().expect("events").clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.shared.stops.send_modify(|n| *n += 1);
    }
}

impl Shared {
    fn event(&self, line: String) {
        self.events.lock().expect("events").push(line);
    }

    fn stop(&self, why: &str) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            self.event(format!("stopped: {why}"));
            self.stops.send_modify(|n| *n += 1);
        }
    }

    /// The fault for a request to `path`, used up as the rule says.
    fn fault_for(&self, path: &str) -> Option<Fault> {
        let mut rules = self.rules.lock().expect("rules");
        let i = rules.iter().position(|r| path.contains(&r.path))?;
        let fault = rules[i].fault;
        match &mut rules[i].fault {
            Fault::Answer500 { left } if *left > 1 => *left -= 1,
            _ => {
                rules.remove(i);
            }
        }
        Some(fault)
    }
}

/// A listener on `addr` that may take over a port a stopped listener left.
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Accepts until a stop, closes the listener, and listens again when asked to resume.
async fn accept(shared: Arc<Shared>, mut listener: TcpListener, mut asked: mpsc::UnboundedReceiver<oneshot::Sender<std::io::Result<()>>>) {
    let mut stops = shared.stops.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((client, _)) = accepted {
                    tokio::spawn(serve(shared.clone(), client));
                }
            }
            _ = stops.changed() => {
                drop(listener);
                let Some(reply) = asked.recv().await else { return };
                match listen_again(shared.addr).await {
                    Ok(again) => {
                        listener = again;
                        stops.borrow_and_update();
                        shared.stopped.store(false, Ordering::SeqCst);
                        shared.event(format!("resumed on {}", shared.addr));
                        let _ = reply.send(Ok(()));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        return;
                    }
                }
            }
        }
    }
}

/// Listens on the port a stop left, retrying while the kernel still holds it.
async fn listen_again(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let started = Instant::now();
    loop {
        match listen(addr) {
            Err(_) if started.elapsed() < REBIND_FOR => tokio::time::sleep(Duration::from_millis(50)).await,
            listened => return listened,
        }
    }
}

/// One client connection, closed when the proxy stops.
async fn serve(shared: Arc<Shared>, client: TcpStream) {
    let mut stops = shared.stops.subscribe();
    if shared.stopped.load(Ordering::SeqCst) {
        return;
    }
    let work = async {
        match shared.flavour {
            Flavour::Http => http(&shared, client).await,
            Flavour::Tcp => tcp(&shared, client).await,
        }
    };
    tokio::select! {
        _ = work => {}
        _ = stops.changed() => {}
    }
}

async fn tcp(shared: &Shared, mut client: TcpStream) {
    let Ok(mut upstream) = TcpStream::connect(shared.upstream).await else { return };
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// One request: answered by a fault or forwarded with `Connection: close`.
async fn http(shared: &Shared, mut client: TcpStream) {
    let Some((head, body_start)) = read_head(&mut client).await else { return };
    let request = head.lines().next().unwrap_or_default().to_string();
    let mut words = request.split(' ');
    let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let fault = shared.fault_for(path);
    let what = format!("{method} {path}");
    let delay = *shared.delay.lock().expect("delay");
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(Fault::Answer500 { .. }) = fault {
        let _ = client.write_all(ERROR_500.as_bytes()).await;
        shared.event(format!("{what}: 500"));
        return;
    }
    let Ok(mut upstream) = TcpStream::connect(shared.upstream).await else {
        shared.event(format!("{what}: upstream unreachable"));
        return;
    };
    if upstream.write_all(close_after_response(&head).as_bytes()).await.is_err() || upstream.write_all(&body_start).await.is_err() {
        return;
    }
    let limit = match fault {
        Some(Fault::Cut { after } | Fault::Stop { after }) => Some(after),
        _ => None,
    };
    let (mut from_client, mut to_client) = client.split();
    let (mut from_upstream, mut to_upstream) = upstream.split();
    let response = relay(&mut from_upstream, &mut to_client, limit);
    tokio::pin!(response);
    // A request body, if any, goes up while the response comes down.
    let passed = tokio::select! {
        passed = &mut response => passed,
        _ = tokio::io::copy(&mut from_client, &mut to_upstream) => response.await,
    };
    match (fault, limit) {
        (Some(Fault::Stop { .. }), Some(after)) if passed >= after => {
            shared.event(format!("{what}: stopped the server after {passed} bytes"));
            shared.stop(&format!("during the response to {what}"));
        }
        (_, Some(after)) if passed >= after => shared.event(format!("{what}: cut after {passed} bytes")),
        _ => shared.event(format!("{what}: passed {passed} bytes")),
    }
}

/// The request head up to its blank line, and whatever body bytes came with it.
async fn read_head(client: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let body = buf.split_off(end + 4);
            return Some((String::from_utf8(buf).ok()?, body));
        }
        if buf.len() > HEAD_LIMIT {
            return None;
        }
        let n = client.read(&mut chunk).await.ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `head` with its connection headers replaced by `Connection: close`, so the upstream
/// closes after its response and the client opens a new connection for the next request.
pub fn close_after_response(head: &str) -> String {
    let mut out = String::with_capacity(head.len() + 20);
    for line in head.trim_end_matches("\r\n").split("\r\n") {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if name != "connection" && name != "keep-alive" {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    out
}

/// Copies until the reader ends or `limit` bytes have passed; returns the bytes passed.
async fn relay(from: &mut (impl AsyncRead + Unpin), to: &mut (impl AsyncWrite + Unpin), limit: Option<u64>) -> u64 {
    let mut passed = 0u64;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let room = limit.map_or(buf.len() as u64, |l| (l - passed).min(buf.len() as u64)) as usize;
        if room == 0 {
            return passed;
        }
        let n = match from.read(&mut buf[..room]).await {
            Ok(0) | Err(_) => return passed,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            return passed;
        }
        passed += n as u64;
    }
}
