//! The channel between the publisher and its render worker: frames of a 4-byte big-endian
//! length and a JSON message, over the worker's stdin and stdout. Each request carries an
//! id, so many are in flight at once (the pipeline reads the store 16 at a time and signs
//! from every core), and each side both asks and answers: the signer asks the worker for
//! a run, the worker asks the signer for what it holds. A call can be made from a thread
//! ([`Peer::call_blocking`]) or a task ([`Peer::call`]).
//!
//! A frame over the size bound, or one that does not parse, closes the channel: every
//! call waiting and every call after fails with the reason, and the side that sees it
//! gives up on the other (the signer kills the worker, the worker exits).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// The channel is closed: the other side exited, or sent what no peer may.
    #[error("the channel to the {peer} closed: {reason}")]
    Closed { peer: &'static str, reason: String },
    /// The other side answered with an error.
    #[error("{0}")]
    Refused(String),
    /// The answer is not what the call expects.
    #[error("the {peer} answered a {what} call with something else: {message}")]
    Unexpected { peer: &'static str, what: String, message: String },
}

#[derive(Serialize, Deserialize)]
enum Frame {
    Request { id: u64, body: Value },
    Reply { id: u64, result: Result<Value, String> },
}

/// A request as [`Frame::Request`] writes it, its body serialised in place: through a
/// [`Value`] first, every string of a chunk's statements was copied once more.
#[derive(Serialize)]
enum Outgoing<'b, B: Serialize> {
    Request { id: u64, body: &'b B },
}

/// A request of the other side, to answer with [`Peer::reply`].
pub struct Incoming {
    pub id: u64,
    pub body: Value,
}

type Answer = Result<Value, String>;

/// Where an answer goes: a task or a thread waits for it.
enum Waiter {
    Task(oneshot::Sender<Answer>),
    Thread(std::sync::mpsc::SyncSender<Answer>),
}

type Waiting = HashMap<u64, Waiter>;

/// One end of the channel.
pub struct Peer {
    /// Who is at the other end, for messages.
    other: &'static str,
    writer: Mutex<Box<dyn Write + Send>>,
    /// `None` once the channel closed, with why in `closed`.
    waiting: Mutex<Option<Waiting>>,
    closed: Mutex<Option<String>>,
    next: AtomicU64,
    max_frame: usize,
}

impl Peer {
    /// Reads `reader` on a thread of its own; returns this end and the other side's
    /// requests, which end when the channel closes.
    pub fn start(
        other: &'static str,
        reader: impl Read + Send + 'static,
        writer: impl Write + Send + 'static,
        max_frame: usize,
    ) -> (Arc<Peer>, mpsc::UnboundedReceiver<Incoming>) {
        let peer = Arc::new(Peer {
            other,
            writer: Mutex::new(Box::new(writer)),
            waiting: Mutex::new(Some(HashMap::new())),
            closed: Mutex::new(None),
            next: AtomicU64::new(0),
            max_frame,
        });
        let (requests, incoming) = mpsc::unbounded_channel();
        let reading = Arc::clone(&peer);
        std::thread::spawn(move || {
            let reason = reading.read_all(reader, &requests);
            reading.close(reason);
        });
        (peer, incoming)
    }

    /// Why the channel closed; `None` while it is open.
    pub fn closed(&self) -> Option<String> {
        self.closed.lock().expect("no panic holds the lock").clone()
    }

    /// Asks the other side and waits for its answer on this task.
    pub async fn call<T: DeserializeOwned>(&self, what: &str, body: &impl Serialize) -> Result<T, RpcError> {
        let (tx, rx) = oneshot::channel();
        self.send(body, Waiter::Task(tx))?;
        self.answered(what, rx.await.ok())
    }

    /// Asks the other side and waits for its answer on this thread.
    pub fn call_blocking<T: DeserializeOwned>(&self, what: &str, body: &impl Serialize) -> Result<T, RpcError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.send(body, Waiter::Thread(tx))?;
        self.answered(what, rx.recv().ok())
    }

    /// Answers request `id`.
    pub fn reply(&self, id: u64, result: Result<Value, String>) {
        // A reply that cannot be written means the channel is gone; the reader says why.
        let _ = self.write(&Frame::Reply { id, result });
    }

    fn send(&self, body: &impl Serialize, waiter: Waiter) -> Result<(), RpcError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        match self.waiting.lock().expect("no panic holds the lock").as_mut() {
            Some(waiting) => waiting.insert(id, waiter),
            None => return Err(self.gone()),
        };
        self.write(&Outgoing::Request { id, body }).map_err(|reason| {
            self.close(reason);
            self.gone()
        })
    }

    /// The answer as `T`; `None` when the channel closed before it came.
    fn answered<T: DeserializeOwned>(&self, what: &str, answer: Option<Answer>) -> Result<T, RpcError> {
        let value = answer.ok_or_else(|| self.gone())?.map_err(RpcError::Refused)?;
        serde_json::from_value(value).map_err(|e| RpcError::Unexpected { peer: self.other, what: what.into(), message: e.to_string() })
    }

    fn gone(&self) -> RpcError {
        RpcError::Closed { peer: self.other, reason: self.closed().unwrap_or_else(|| "closed".into()) }
    }

    fn write(&self, frame: &impl Serialize) -> Result<(), String> {
        let bytes = serde_json::to_vec(frame).expect("frames serialise");
        if bytes.len() > self.max_frame {
            return Err(format!("a frame of {} bytes, over the limit of {}", bytes.len(), self.max_frame));
        }
        let mut writer = self.writer.lock().expect("no panic holds the lock");
        let len = u32::try_from(bytes.len()).expect("the frame limit fits 32 bits");
        writer
            .write_all(&len.to_be_bytes())
            .and_then(|()| writer.write_all(&bytes))
            .and_then(|()| writer.flush())
            .map_err(|e| e.to_string())
    }

    /// Reads frames until the channel closes; returns why.
    fn read_all(&self, mut reader: impl Read, requests: &mpsc::UnboundedSender<Incoming>) -> String {
        loop {
            let mut len = [0; 4];
            if let Err(e) = reader.read_exact(&mut len) {
                return match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => format!("the {} exited", self.other),
                    _ => e.to_string(),
                };
            }
            let len = u32::from_be_bytes(len) as usize;
            if len > self.max_frame {
                return format!("the {} sent a frame of {len} bytes, over the limit of {}", self.other, self.max_frame);
            }
            let mut bytes = vec![0; len];
            if let Err(e) = reader.read_exact(&mut bytes) {
                return format!("the {} stopped within a frame: {e}", self.other);
            }
            match serde_json::from_slice(&bytes) {
                Ok(Frame::Request { id, body }) => {
                    // Nobody takes requests any more: the process is ending.
                    let _ = requests.send(Incoming { id, body });
                }
                Ok(Frame::Reply { id, result }) => {
                    let sender = self.waiting.lock().expect("no panic holds the lock").as_mut().and_then(|w| w.remove(&id));
                    match sender {
                        Some(Waiter::Task(sender)) => drop(sender.send(result)),
                        Some(Waiter::Thread(sender)) => drop(sender.send(result)),
                        None => return format!("the {} answered request {id}, which was never asked", self.other),
                    }
                }
                Err(e) => return format!("the {} sent a malformed frame: {e}", self.other),
            }
        }
    }

    /// Fails every call waiting, and every call after, with `reason`.
    fn close(&self, reason: String) {
        let mut closed = self.closed.lock().expect("no panic holds the lock");
        if closed.is_none() {
            *closed = Some(reason);
        }
        drop(closed);
        // Dropping the senders wakes every waiting call.
        self.waiting.lock().expect("no panic holds the lock").take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type End = (Arc<Peer>, mpsc::UnboundedReceiver<Incoming>);

    /// Two peers over two pipes, as the signer and the worker are.
    fn pair() -> (End, End) {
        let (a_read, b_write) = std::io::pipe().unwrap();
        let (b_read, a_write) = std::io::pipe().unwrap();
        (Peer::start("b", a_read, a_write, 1 << 20), Peer::start("a", b_read, b_write, 1 << 20))
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn answers_many_calls_in_flight_from_tasks_and_threads() {
        let ((a, _), (b, mut asked)) = pair();
        let answering = Arc::clone(&b);
        tokio::spawn(async move {
            while let Some(request) = asked.recv().await {
                let n = request.body.as_u64().unwrap();
                // Answered out of order: the ids keep the answers apart.
                let b = Arc::clone(&answering);
                tokio::spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(20 - n % 20)).await;
                    b.reply(request.id, if n == 7 { Err("seven is refused".into()) } else { Ok(Value::from(n * 2)) });
                });
            }
        });
        let tasks: Vec<_> = (0..40u64)
            .map(|n| {
                (n, {
                    let a = Arc::clone(&a);
                    tokio::spawn(async move { a.call::<u64>("double", &n).await })
                })
            })
            .collect();
        let thread = {
            let a = Arc::clone(&a);
            std::thread::spawn(move || a.call_blocking::<u64>("double", &100u64))
        };
        for (n, task) in tasks {
            let answer = task.await.unwrap();
            if n == 7 {
                assert_eq!(answer, Err(RpcError::Refused("seven is refused".into())));
            } else {
                assert_eq!(answer, Ok(n * 2));
            }
        }
        assert_eq!(thread.join().unwrap(), Ok(200));
    }

    #[tokio::test]
    async fn a_malformed_or_oversized_frame_closes_the_channel_with_its_reason() {
        for (frame, reason) in [(b"{not json".to_vec(), "sent a malformed frame"), (vec![b' '; 2 << 20], "over the limit of 1048576")] {
            let (read, mut write) = std::io::pipe().unwrap();
            let (_unread, sink) = std::io::pipe().unwrap();
            let (peer, mut requests) = Peer::start("worker", read, sink, 1 << 20);
            let waiting = {
                let peer = Arc::clone(&peer);
                tokio::spawn(async move { peer.call::<u64>("x", &1).await })
            };
            write.write_all(&(frame.len() as u32).to_be_bytes()).unwrap();
            let _ = write.write_all(&frame);
            assert!(requests.recv().await.is_none(), "no request comes after");
            let Err(RpcError::Closed { reason: why, .. }) = waiting.await.unwrap() else { panic!("the waiting call fails") };
            assert!(why.contains(reason), "{why}");
            assert!(matches!(peer.call::<u64>("x", &1).await, Err(RpcError::Closed { .. })), "and every call after");
        }
    }
}
