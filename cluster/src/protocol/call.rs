//! The one typed client call of the peer protocol: [`call`] sends method
//! `M`'s request and reads its answer, within the client's own deadlines
//! (`PeerConfig::request_timeout`, and whatever the caller wraps it in).
//! [`Encoded`] is a request encoded once, for sending it to several nodes
//! or again.

use std::marker::PhantomData;

use bytes::Bytes;
use wray_peer::{PeerClient, PeerError};

use super::codec::{decode, encode};
use super::methods::PeerMethod;

/// A request of method `M`, encoded.
pub(crate) struct Encoded<M> {
    body: Bytes,
    method: PhantomData<fn() -> M>,
}

impl<M> Clone for Encoded<M> {
    fn clone(&self) -> Self {
        Encoded {
            body: self.body.clone(),
            method: PhantomData,
        }
    }
}

impl<M: PeerMethod> Encoded<M> {
    /// `request`, encoded.
    pub(crate) fn new(request: M::Request) -> Self {
        Encoded {
            body: encode(request),
            method: PhantomData,
        }
    }
}

/// Calls method `M` with `request` on the node at `addr`; its answer.
///
/// # Errors
/// The channel's [`PeerError`] (the node's refusal is
/// [`PeerError::Remote`]); an answer that is not `M`'s is
/// [`PeerError::Protocol`].
pub(crate) async fn call<M: PeerMethod>(
    client: &PeerClient,
    addr: &str,
    request: M::Request,
) -> Result<M::Answer, PeerError> {
    send(client, addr, &Encoded::<M>::new(request)).await
}

/// Sends the encoded `request` of method `M` to the node at `addr`; its
/// answer.
///
/// # Errors
/// As [`call`].
pub(crate) async fn send<M: PeerMethod>(
    client: &PeerClient,
    addr: &str,
    request: &Encoded<M>,
) -> Result<M::Answer, PeerError> {
    let answer = client.call(addr, M::ID, request.body.clone()).await?;
    decode::<M::Answer>(&answer).map_err(|e| PeerError::Protocol {
        addr: addr.to_string(),
        message: format!("its answer to {} is not one: {e}", M::NAME),
    })
}
