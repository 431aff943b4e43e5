//! [`EtcdClient`]: one connection to etcd, shared by every etcd-backed
//! table of a node, and the one place where an etcd call gets its deadline
//! and its error message.

use std::error::Error as _;
use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use etcd_client::{
    Client, ConnectOptions, DeleteOptions, GetOptions, KeyValue, KvClient, Txn, TxnResponse,
};

use crate::{Error, Result};

/// The largest response a call accepts (tonic's default is 4 MiB; a page of
/// heads may reach 16 x 576 KiB).
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// Where etcd is and how long a call may take.
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// Client URLs of etcd members (`http://127.0.0.1:2379`).
    pub endpoints: Vec<String>,
    /// Prefix of every key (`/wray/`); clusters sharing one etcd use
    /// different prefixes or different cluster names.
    pub prefix: String,
    /// How long opening a connection may take.
    pub connect_timeout: Duration,
    /// How long one request may take, connecting included (a 1 MiB chunk
    /// on a slow link must fit).
    pub request_timeout: Duration,
}

impl EtcdConfig {
    /// `endpoints`, the `/wray/` prefix, 3 s to connect and 5 s per request.
    pub fn new<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> Self {
        Self {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: "/wray/".to_string(),
            connect_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// A connection to etcd (the client multiplexes calls over one connection
/// per endpoint). Cheap to clone: clones share the connection, so a node
/// opens one and hands clones to its function table, node registry, actor
/// directory and job table.
#[derive(Clone)]
pub struct EtcdClient {
    client: Client,
    config: EtcdConfig,
    /// `etcd at <endpoints>`, the start of every error message.
    label: String,
}

impl std::fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdClient")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl EtcdClient {
    /// A client of the etcd at `config.endpoints`. Connecting is lazy: this
    /// succeeds while etcd is down, and calls fail until it is up.
    ///
    /// # Errors
    /// [`Error::Unavailable`] for no endpoints or a malformed one.
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        let label = format!("etcd at {}", config.endpoints.join(","));
        if config.endpoints.is_empty() {
            return Err(Error::Unavailable("no etcd endpoints given".to_string()));
        }
        // HTTP/2 pings while a watch is open find a dead connection (etcd
        // refuses pings more often than every 5 s, and idle ones).
        let options = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        let connect = Client::connect(&config.endpoints, Some(options));
        let client = match tokio::time::timeout(config.connect_timeout, connect).await {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => {
                return Err(Error::Unavailable(format!(
                    "{label}: connect: {}",
                    causes(&e)
                )))
            }
            Err(_) => {
                return Err(Error::Unavailable(format!(
                    "{label}: connect: no answer within {} ms",
                    config.connect_timeout.as_millis()
                )))
            }
        };
        Ok(Self {
            client,
            config,
            label,
        })
    }

    /// `etcd at <endpoints>`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// The underlying client (its clones share the connection).
    pub(crate) fn raw(&self) -> &Client {
        &self.client
    }

    /// Runs one etcd call under the request deadline; a failure or a missed
    /// deadline is [`Error::Unavailable`] naming the endpoints, the call
    /// and the cause.
    pub(crate) async fn call<T>(
        &self,
        what: impl Display,
        call: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T> {
        self.call_within(self.config.request_timeout, what, call)
            .await
    }

    /// [`call`](Self::call) under `deadline` rather than the request
    /// deadline (a heartbeat must not wait longer than its lease lives).
    pub(crate) async fn call_within<T>(
        &self,
        deadline: Duration,
        what: impl Display,
        call: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T> {
        match tokio::time::timeout(deadline, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(Error::Unavailable(format!(
                "{}: {what}: {}",
                self.label,
                causes(&e)
            ))),
            Err(_) => Err(Error::Unavailable(format!(
                "{}: {what}: no answer within {} ms ({})",
                self.label,
                deadline.as_millis(),
                probe(&self.config.endpoints).await
            ))),
        }
    }

    /// A KV client that accepts responses up to 16 MiB.
    pub(crate) fn kv(&self) -> KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    /// The value and mod revision at `key`, read at `revision` (0: now),
    /// with the store's revision of the read.
    pub(crate) async fn get_at(
        &self,
        key: &str,
        revision: i64,
    ) -> Result<(Option<(Vec<u8>, i64)>, i64)> {
        let options = GetOptions::new().with_revision(revision);
        let mut resp = self
            .call(format!("get {key}"), self.kv().get(key, Some(options)))
            .await?;
        let read_at = resp.header().map_or(0, |h| h.revision());
        let found = resp
            .take_kvs()
            .into_iter()
            .find(|kv| kv.key() == key.as_bytes())
            .map(|kv| {
                let rev = kv.mod_revision();
                (kv.into_key_value().1, rev)
            });
        Ok((found, read_at))
    }

    /// The value and mod revision at `key`, now.
    pub(crate) async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, i64)>> {
        Ok(self.get_at(key, 0).await?.0)
    }

    /// Every key-value under `prefix`, in key order, read in pages of
    /// `page` at one revision.
    pub(crate) async fn range(&self, prefix: &str, page: i64) -> Result<Vec<KeyValue>> {
        Ok(self.range_at(prefix, None, page, usize::MAX).await?.0)
    }

    /// The key-values under `prefix` after key `after` (none: from the
    /// start), in key order, read in pages of `page` at one revision, at
    /// most `max` of them; with that revision.
    pub(crate) async fn range_at(
        &self,
        prefix: &str,
        after: Option<&str>,
        page: i64,
        max: usize,
    ) -> Result<(Vec<KeyValue>, i64)> {
        let end = prefix_end(prefix);
        let mut from = match after {
            Some(after) => {
                let mut key = format!("{prefix}{after}").into_bytes();
                key.push(0);
                key
            }
            None => prefix.as_bytes().to_vec(),
        };
        let mut revision = 0;
        let mut all = Vec::new();
        while all.len() < max {
            let left = i64::try_from(max - all.len()).unwrap_or(i64::MAX);
            let options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(page.min(left))
                .with_revision(revision);
            let mut resp = self
                .call(
                    format!("range {prefix}"),
                    self.kv().get(from.clone(), Some(options)),
                )
                .await?;
            if revision == 0 {
                revision = resp.header().map_or(0, |h| h.revision());
            }
            let more = resp.more();
            let kvs = resp.take_kvs();
            let Some(last) = kvs.last() else { break };
            from = last.key().to_vec();
            from.push(0);
            all.extend(kvs);
            if !more {
                break;
            }
        }
        Ok((all, revision))
    }

    /// How many keys are under `prefix` now.
    pub(crate) async fn count(&self, prefix: &str) -> Result<u64> {
        let options = GetOptions::new()
            .with_range(prefix_end(prefix))
            .with_count_only();
        let resp = self
            .call(
                format!("count {prefix}*"),
                self.kv().get(prefix, Some(options)),
            )
            .await?;
        Ok(u64::try_from(resp.count()).unwrap_or(0))
    }

    /// Writes `value` at `key`.
    pub(crate) async fn put(&self, key: &str, value: Vec<u8>) -> Result<()> {
        self.call(format!("put {key}"), self.kv().put(key, value, None))
            .await
            .map(drop)
    }

    /// Deletes every key under `prefix`.
    pub(crate) async fn delete_prefix(&self, prefix: &str) -> Result<()> {
        let options = DeleteOptions::new().with_prefix();
        self.call(
            format!("delete {prefix}*"),
            self.kv().delete(prefix, Some(options)),
        )
        .await
        .map(drop)
    }

    /// Runs transaction `txn` (`what` names it in errors).
    pub(crate) async fn txn(&self, what: impl Display, txn: Txn) -> Result<TxnResponse> {
        self.call(format!("transaction {what}"), self.kv().txn(txn))
            .await
    }

    /// `Ok(())` when etcd answers its status call within the deadline.
    pub(crate) async fn health(&self) -> Result<()> {
        let mut maintenance = self.client.maintenance_client();
        self.call("status", maintenance.status()).await.map(drop)
    }
}

/// The first key after every key that starts with `prefix`.
pub(crate) fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// What an etcd call's error says, with the causes it wraps (a transport
/// error says only "transport error"; its source says "connection
/// refused").
fn causes(error: &etcd_client::Error) -> String {
    match error {
        etcd_client::Error::TransportError(e) => chain(e.to_string(), e.source()),
        etcd_client::Error::GRpcStatus(status) => chain(
            format!("{}: {}", status.code().description(), status.message()),
            status.source(),
        ),
        other => other.to_string(),
    }
}

/// `text`, then the root of the `source` chain unless `text` says it
/// already (the links between repeat each other: "transport error").
fn chain(mut text: String, mut source: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut root = None;
    while let Some(cause) = source {
        root = Some(cause);
        source = cause.source();
    }
    if let Some(root) = root.map(ToString::to_string) {
        if !text.contains(&root) {
            text.push_str(": ");
            text.push_str(&root);
        }
    }
    text
}

/// Why the first endpoint does not answer, as far as a TCP connect tells
/// (within 1 s): for an error message.
async fn probe(endpoints: &[String]) -> String {
    let Some(endpoint) = endpoints.first() else {
        return "no endpoint".to_string();
    };
    let address = endpoint
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    let connect = tokio::net::TcpStream::connect(address);
    match tokio::time::timeout(Duration::from_secs(1), connect).await {
        Ok(Ok(_)) => format!("{address} accepts connections but etcd does not answer"),
        Ok(Err(e)) => format!("cannot connect to {address}: {e}"),
        Err(_) => format!("connecting to {address} takes over 1 s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end("/wray/functions/"), b"/wray/functions0");
        assert_eq!(prefix_end("a"), b"b");
    }
}
