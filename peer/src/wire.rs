//! Reading and writing frames on a connection: the header first, its
//! length checked by the caller against the bound of its kind, then the
//! body, read incrementally (a peer that claims a large body and sends
//! little makes the buffer grow only with what arrives).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::frame::{Header, Kind, HEADER_LEN};

/// A connection: plain TCP or TLS over it, either side.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A connection behind a pointer (one virtual call per read or write,
/// each of which moves a whole chunk).
pub(crate) type BoxStream = Box<dyn Stream>;

/// Bodies up to this size are sent in one write with their header.
const COALESCE: usize = 64 << 10;

/// The first buffer of a body being read, in bytes; it grows (doubling)
/// only as bytes arrive.
const FIRST_BUFFER: usize = 64 << 10;

/// Reads the 16 raw bytes of a header; `Ok(None)` when the peer closed
/// the connection before its first byte (a clean close between requests).
///
/// # Errors
/// The I/O error, `UnexpectedEof` for a close inside the header.
///
/// # Cancel safety
/// Not cancel safe: bytes read before a cancel are lost (the caller drops
/// the connection).
pub(crate) async fn read_raw_header<S: AsyncRead + Unpin + ?Sized>(
    io: &mut S,
) -> std::io::Result<Option<[u8; HEADER_LEN]>> {
    let mut b = [0u8; HEADER_LEN];
    let mut filled = 0;
    while filled < HEADER_LEN {
        let n = io.read(&mut b[filled..]).await?;
        if n == 0 {
            if filled == 0 {
                return Ok(None);
            }
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
    }
    Ok(Some(b))
}

/// Reads a body of exactly `len` bytes (already checked against its
/// bound), growing the buffer only as bytes arrive.
///
/// # Errors
/// The I/O error, `UnexpectedEof` when the connection ends early.
pub(crate) async fn read_body<S: AsyncRead + Unpin + ?Sized>(
    io: &mut S,
    len: u32,
) -> std::io::Result<Vec<u8>> {
    let want = u64::from(len);
    let first = usize::try_from(want).map_or(FIRST_BUFFER, |w| w.min(FIRST_BUFFER));
    let mut body = Vec::with_capacity(first);
    (&mut *io).take(want).read_to_end(&mut body).await?;
    if u64::try_from(body.len()).ok() != Some(want) {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(body)
}

/// Writes a frame of `kind` for request `id` whose body is the
/// concatenation of `parts`, then flushes (TLS needs it).
///
/// # Errors
/// The I/O error; `InvalidInput` when the body exceeds `u32::MAX` bytes.
pub(crate) async fn write_frame<S: AsyncWrite + Unpin + ?Sized>(
    io: &mut S,
    kind: Kind,
    id: u64,
    parts: &[&[u8]],
) -> std::io::Result<()> {
    let total = parts
        .iter()
        .try_fold(0usize, |acc, p| acc.checked_add(p.len()));
    let len = total
        .and_then(|t| u32::try_from(t).ok())
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let header = Header { len, kind, id }.encode();
    if (len as usize) <= COALESCE {
        let mut b = Vec::with_capacity(HEADER_LEN + len as usize);
        b.extend_from_slice(&header);
        for p in parts {
            b.extend_from_slice(p);
        }
        io.write_all(&b).await?;
    } else {
        // Large bodies go out from the caller's slices as they are: no
        // copy into a frame buffer.
        io.write_all(&header).await?;
        for p in parts {
            io.write_all(p).await?;
        }
    }
    io.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_frame_round_trips_through_a_pipe() {
        let (mut a, mut b) = tokio::io::duplex(1 << 20);
        let big = vec![5u8; 100_000];
        write_frame(&mut a, Kind::CallOk, 9, &[b"ab", &big])
            .await
            .unwrap();
        let h = Header::decode(&read_raw_header(&mut b).await.unwrap().unwrap()).unwrap();
        assert_eq!((h.kind, h.id, h.len), (Kind::CallOk, 9, 100_002));
        let body = read_body(&mut b, h.len).await.unwrap();
        assert_eq!(&body[..2], b"ab");
        drop(a);
        assert!(read_raw_header(&mut b).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_body_that_ends_early_is_an_error_not_a_large_buffer() {
        let (mut a, mut b) = tokio::io::duplex(1024);
        a.write_all(b"only ten b").await.unwrap();
        drop(a);
        let e = read_body(&mut b, u32::MAX).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
