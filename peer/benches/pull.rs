//! Throughput of a pull over loopback against a plain TCP copy, in one
//! run on one machine: a 1 GiB blob pulled with [`PeerClient::pull`]
//! (4 MiB chunks, 4 in flight, and 1 in flight) and the same 1 GiB copied
//! over one plain tokio TCP connection (`write_all` of 4 MiB slices from
//! the source, `read_exact` of 4 MiB slices into the destination). Prints
//! GB/s (10^9 bytes a second) of each, best of 3, and the ratio.
//!
//! Run: `cargo bench -p wray-peer --bench pull`
//! (`WRAY_PEER_BENCH_MIB=256` for a smaller blob,
//! `WRAY_PEER_BENCH_CHUNK_KIB=1024` for another chunk size,
//! `WRAY_PEER_BENCH_IN_FLIGHT=4,2,1` for the pulls to run).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wray_peer::{
    Blob, PeerClient, PeerConfig, PeerHandler, PeerIdentity, PeerServer, RemoteError, Token,
    DEFAULT_CHUNK,
};

/// Serves slices of one blob.
struct OneBlob(Bytes);

#[async_trait::async_trait]
impl PeerHandler for OneBlob {
    async fn call(&self, _: &PeerIdentity, _: u16, body: Bytes) -> Result<Bytes, RemoteError> {
        Ok(body)
    }
    async fn read(
        &self,
        _: &PeerIdentity,
        _: &[u8],
        offset: u64,
        len: u32,
    ) -> Result<Blob, RemoteError> {
        let start = usize::try_from(offset).map_err(|_| RemoteError::new(416, "offset"))?;
        let end = start
            .checked_add(len as usize)
            .filter(|e| *e <= self.0.len())
            .ok_or_else(|| RemoteError::new(416, "range past the end"))?;
        Ok(Blob::from(self.0.slice(start..end)))
    }
}

const RUNS: usize = 5;

fn gbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

/// One plain TCP copy of `src` into `dest`, `chunk` bytes a call.
async fn tcp_copy(src: Bytes, dest: &mut [u8], chunk: usize) -> anyhow::Result<Duration> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let sender = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await?;
        s.set_nodelay(true)?;
        for c in src.chunks(chunk) {
            s.write_all(c).await?;
        }
        s.flush().await?;
        anyhow::Ok(())
    });
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let start = Instant::now();
    for c in dest.chunks_mut(chunk) {
        s.read_exact(c).await?;
    }
    let took = start.elapsed();
    sender.await??;
    Ok(took)
}

async fn bench() -> anyhow::Result<()> {
    let mib: usize = std::env::var("WRAY_PEER_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let len = mib << 20;
    let src: Bytes = (0..len)
        .map(|i| (i * 31 % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    let mut dest = vec![0u8; len];
    let token = Token::new(b"bench-cluster-token-0123".to_vec())?;
    let config = PeerConfig::new(token);
    let server = PeerServer::bind(
        "127.0.0.1:0",
        config.clone(),
        Arc::new(OneBlob(src.clone())),
    )
    .await?;
    let addr = server.local_addr().to_string();
    let chunk: u32 = std::env::var("WRAY_PEER_BENCH_CHUNK_KIB")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(DEFAULT_CHUNK, |k| k << 10);
    let in_flights: Vec<usize> = std::env::var("WRAY_PEER_BENCH_IN_FLIGHT")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| vec![4, 2, 1]);

    // The sides alternate within each run, so a change in the machine's
    // load meets both alike; the best run of each is reported.
    let clients: Vec<(usize, PeerClient)> = in_flights
        .iter()
        .map(|&n| {
            let mut c = config.clone();
            c.pull_in_flight = n;
            Ok((n, PeerClient::new(c, "bench")?))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut tcp = Duration::MAX;
    let mut pulls = vec![Duration::MAX; clients.len()];
    for _ in 0..RUNS {
        dest.fill(0);
        tcp = tcp.min(tcp_copy(src.clone(), &mut dest, chunk as usize).await?);
        anyhow::ensure!(dest[..] == src[..], "copied bytes differ");
        for ((_, client), best) in clients.iter().zip(pulls.iter_mut()) {
            dest.fill(0);
            let stats = client
                .pull(&addr, b"blob", len as u64, &mut dest, chunk)
                .await?;
            *best = (*best).min(stats.elapsed);
            anyhow::ensure!(dest[..] == src[..], "pulled bytes differ");
        }
    }
    let results = clients
        .iter()
        .zip(pulls)
        .map(|((n, _), d)| (format!("wray-peer pull, {n} in flight"), d));
    server.shutdown(Duration::from_secs(5)).await;

    println!(
        "{mib} MiB over loopback, {} KiB chunks, best of {RUNS}:",
        chunk >> 10
    );
    println!(
        "  plain TCP copy (1 connection)      {:>6.2} GB/s",
        gbps(len, tcp)
    );
    for (name, d) in results {
        println!(
            "  {name:<34} {:>6.2} GB/s  ratio {:.2}",
            gbps(len, d),
            tcp.as_secs_f64() / d.as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(bench())
}
