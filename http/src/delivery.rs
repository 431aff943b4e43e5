//! [`Delivering`]: an answer's body whose delivery matters.
//!
//! - A read-once object's value ([`Delivering::value`]): the object is
//!   marked read only once hyper took the last of its bytes to write; a
//!   client that goes away before leaves it readable.
//! - A relayed answer whose body stays on the node that has it
//!   ([`Delivering::relayed`]): pulled from there a chunk at a time as
//!   the client takes it (one chunk pulled ahead), that node told at the
//!   end whether the client got it all. A pull that fails ends the body
//!   short of its `Content-Length`: hyper then breaks the connection, and
//!   the client sees an incomplete answer, never a wrong one.
//!
//! Bytes go out [`FRAME`] at a time, so that hyper takes the next piece
//! only once it wrote most of the last: "delivered" is as far as this
//! node can know it, every byte handed to the connection (the last frame
//! and what the kernel's socket buffers hold may still be on their way).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::{mpsc, oneshot};
use wray_host::{Delivered, RelayedRest};

/// The most bytes sent as one frame (256 KiB).
pub(crate) const FRAME: usize = 256 << 10;

/// Chunks of a relayed answer pulled ahead of what the client took.
const PULLED_AHEAD: usize = 1;

/// A body that knows whether it was delivered (see the module docs).
pub(crate) struct Delivering {
    /// Bytes here now, sent [`FRAME`] at a time.
    ready: Bytes,
    /// The chunks still coming (a relayed answer's).
    more: Option<mpsc::Receiver<Bytes>>,
    /// Bytes not taken yet, of all.
    left: u64,
    /// Runs once every byte was taken.
    delivered: Option<Delivered>,
}

impl Delivering {
    /// `bytes`, with `delivered` run once hyper took the last of them.
    pub(crate) fn value(bytes: Bytes, delivered: Delivered) -> Self {
        Delivering {
            left: bytes.len() as u64,
            ready: bytes,
            more: None,
            delivered: Some(delivered),
        }
    }

    /// A relayed answer: `first`, then `rest` pulled a chunk at a time
    /// on a task of the current runtime, which tells the node that has
    /// it whether the client got it all.
    pub(crate) fn relayed(first: Bytes, rest: RelayedRest) -> Self {
        let (tx, rx) = mpsc::channel(PULLED_AHEAD);
        let (told, taken) = oneshot::channel();
        let left = (first.len() as u64).saturating_add(rest.len());
        tokio::spawn(pump(rest, tx, taken));
        Delivering {
            ready: first,
            more: Some(rx),
            left,
            delivered: Some(Box::new(move || {
                let _ = told.send(());
            })),
        }
    }

    /// What runs once the body is delivered, taken out (to run elsewhere:
    /// an answer relayed to another node is delivered there).
    pub(crate) fn take_delivered(&mut self) -> Option<Delivered> {
        self.delivered.take()
    }

    /// The bytes here now, whole (none are sent from here any more).
    pub(crate) fn take_ready(&mut self) -> Bytes {
        let ready = std::mem::take(&mut self.ready);
        self.left = self.left.saturating_sub(ready.len() as u64);
        ready
    }
}

/// Pulls `rest` into `tx` as the client takes it; once every chunk went
/// and the body was taken whole (`taken`), tells the node that has it.
/// A client gone, or a failed pull, ends it with `rest` dropped: the node
/// is told the client did not get it all.
async fn pump(mut rest: RelayedRest, tx: mpsc::Sender<Bytes>, taken: oneshot::Receiver<()>) {
    loop {
        let chunk = tokio::select! {
            chunk = rest.next_chunk() => chunk,
            () = tx.closed() => return,
        };
        match chunk {
            Ok(Some(bytes)) => {
                if tx.send(bytes).await.is_err() {
                    return;
                }
            }
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("a relayed answer ends short: {e}");
                return;
            }
        }
    }
    drop(tx);
    if taken.await.is_ok() {
        if let Err(e) = rest.delivered().await {
            tracing::warn!("a relayed answer was delivered, but its node cannot be told: {e}");
        }
    }
}

impl Body for Delivering {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.ready.is_empty() {
            let Some(more) = this.more.as_mut() else {
                return Poll::Ready(None);
            };
            match more.poll_recv(cx) {
                Poll::Ready(Some(chunk)) => this.ready = chunk,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
        let frame = this.ready.split_to(this.ready.len().min(FRAME));
        this.left = this.left.saturating_sub(frame.len() as u64);
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

impl Drop for Delivering {
    fn drop(&mut self) {
        if self.left == 0 {
            if let Some(delivered) = self.delivered.take() {
                delivered();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use http_body_util::BodyExt;

    use super::*;

    fn flag() -> (Arc<AtomicBool>, Delivered) {
        let flag = Arc::new(AtomicBool::new(false));
        let set = flag.clone();
        (flag, Box::new(move || set.store(true, Ordering::SeqCst)))
    }

    #[tokio::test]
    async fn a_value_is_delivered_only_once_every_byte_was_taken() {
        let bytes = Bytes::from(vec![7u8; 3 * FRAME + 5]);
        let (ran, delivered) = flag();
        let mut body = Delivering::value(bytes.clone(), delivered);
        assert_eq!(body.size_hint().exact(), Some(bytes.len() as u64));
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first.len(), FRAME);
        drop(body);
        assert!(!ran.load(Ordering::SeqCst), "taken in part: not delivered");

        let (ran, delivered) = flag();
        let body = Delivering::value(bytes.clone(), delivered);
        let all = body.collect().await.unwrap().to_bytes();
        assert_eq!(all, bytes);
        assert!(ran.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn taken_apart_it_is_delivered_by_whoever_took_it() {
        let (ran, delivered) = flag();
        let mut body = Delivering::value(Bytes::from_static(b"value"), delivered);
        let run = body.take_delivered().expect("once");
        assert_eq!(body.take_ready(), Bytes::from_static(b"value"));
        assert!(body.is_end_stream());
        drop(body);
        assert!(!ran.load(Ordering::SeqCst));
        run();
        assert!(ran.load(Ordering::SeqCst));
    }
}
