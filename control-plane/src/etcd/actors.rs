//! [`EtcdActorDirectory`]: named actors at `<prefix><cluster>/actors/<name>`.
//! A registration is a transaction that writes only if the key was never
//! created (create revision 0); a state change or removal is a transaction
//! on the entry's mod revision, after checking it is still the same actor.

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, Txn, TxnOp};

use super::cluster_keys::ClusterKeys;
use super::{backoff, EtcdClient};
use crate::actors::{
    check_actor_record, check_limit, check_node, decode_actor_record, name_taken, ActorDirectory,
    ActorPage, ActorRecord, ActorState, MAX_NAMED_ACTORS,
};
use crate::codec::encode_json;
use crate::function_table::{check_name, WRITE_ATTEMPTS};
use crate::{Error, Result};

/// The actor directory of one cluster on etcd. Cheap to share.
#[derive(Debug, Clone)]
pub struct EtcdActorDirectory {
    etcd: EtcdClient,
    keys: ClusterKeys,
}

impl EtcdActorDirectory {
    /// The directory of `cluster` on the connection `etcd`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad cluster name.
    pub fn new(etcd: EtcdClient, cluster: &str) -> Result<Self> {
        let keys = ClusterKeys::new(&etcd.config().prefix, cluster)?;
        Ok(Self { etcd, keys })
    }

    /// The entry named `name` and its mod revision.
    async fn read(&self, name: &str) -> Result<Option<(ActorRecord, i64)>> {
        let key = self.keys.actor(name);
        match self.etcd.get(&key).await? {
            None => Ok(None),
            Some((value, rev)) => Ok(Some((decode_actor_record(&key, name, &value)?, rev))),
        }
    }

    /// Runs `change` on the entry named `name` while it is actor
    /// `actor_id`'s: `Some(ops)` to apply if the entry is unchanged, `None`
    /// to leave it. Whether it was that actor's.
    async fn change_if_same(
        &self,
        name: &str,
        actor_id: &str,
        change: impl Fn(&ActorRecord) -> Vec<TxnOp>,
    ) -> Result<bool> {
        if check_name(name).is_err() {
            return Ok(false);
        }
        let key = self.keys.actor(name);
        for attempt in 1..=WRITE_ATTEMPTS {
            if attempt > 1 {
                backoff(attempt).await;
            }
            let Some((record, rev)) = self.read(name).await? else {
                return Ok(false);
            };
            if record.actor_id != actor_id {
                return Ok(false);
            }
            let txn = Txn::new()
                .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, rev)])
                .and_then(change(&record));
            if self
                .etcd
                .txn(format!("change named actor {name}"), txn)
                .await?
                .succeeded()
            {
                return Ok(true);
            }
        }
        Err(Error::Conflict {
            name: name.to_string(),
            attempts: WRITE_ATTEMPTS,
        })
    }
}

#[async_trait]
impl ActorDirectory for EtcdActorDirectory {
    async fn register_named(&self, record: ActorRecord) -> Result<()> {
        check_actor_record(&record)?;
        let held = self.etcd.count(&self.keys.actors()).await?;
        if held >= MAX_NAMED_ACTORS {
            return Err(Error::DirectoryFull {
                what: "actor directory",
                held,
                limit: MAX_NAMED_ACTORS,
            });
        }
        let key = self.keys.actor(&record.name);
        let txn = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key.as_str(), encode_json(&record), None)])
            .or_else([TxnOp::get(key.as_str(), None)]);
        let resp = self
            .etcd
            .txn(format!("register named actor {}", record.name), txn)
            .await?;
        if resp.succeeded() {
            return Ok(());
        }
        // The holder, as far as it decodes (a damaged entry still holds
        // the name).
        let holder = resp.op_responses().into_iter().find_map(|op| match op {
            etcd_client::TxnOpResponse::Get(get) => get
                .kvs()
                .first()
                .and_then(|kv| decode_actor_record(&key, &record.name, kv.value()).ok()),
            _ => None,
        });
        Err(name_taken(&record.name, holder.as_ref()))
    }

    async fn get_named(&self, name: &str) -> Result<Option<ActorRecord>> {
        if check_name(name).is_err() {
            return Ok(None);
        }
        Ok(self.read(name).await?.map(|(record, _)| record))
    }

    async fn update_state(&self, name: &str, actor_id: &str, state: ActorState) -> Result<bool> {
        let key = self.keys.actor(name);
        self.change_if_same(name, actor_id, |record| {
            let changed = ActorRecord {
                state,
                ..record.clone()
            };
            vec![TxnOp::put(key.as_str(), encode_json(&changed), None)]
        })
        .await
    }

    async fn moved(&self, name: &str, actor_id: &str, node_id: &str) -> Result<bool> {
        check_node(node_id)?;
        let key = self.keys.actor(name);
        self.change_if_same(name, actor_id, |record| {
            let changed = ActorRecord {
                node_id: node_id.to_string(),
                state: ActorState::Alive,
                ..record.clone()
            };
            vec![TxnOp::put(key.as_str(), encode_json(&changed), None)]
        })
        .await
    }

    async fn remove_named(&self, name: &str, actor_id: &str) -> Result<bool> {
        let key = self.keys.actor(name);
        // A damaged entry cannot be matched to an actor: it stays (an
        // operator removes it with etcdctl).
        match self
            .change_if_same(name, actor_id, |_| vec![TxnOp::delete(key.as_str(), None)])
            .await
        {
            Err(Error::Corrupt { .. }) => Ok(false),
            other => other,
        }
    }

    async fn list(&self, limit: usize, after: Option<&str>) -> Result<ActorPage> {
        check_limit(limit)?;
        let prefix = self.keys.actors();
        // One more than asked: whether a next page exists.
        let (kvs, _) = self
            .etcd
            .range_at(
                &prefix,
                after,
                i64::try_from(limit + 1).unwrap_or(i64::MAX),
                limit + 1,
            )
            .await?;
        let more = kvs.len() > limit;
        let mut page = ActorPage::default();
        let mut last = None;
        for kv in kvs.iter().take(limit) {
            let key = String::from_utf8_lossy(kv.key());
            let name = key.strip_prefix(prefix.as_str()).unwrap_or_default();
            last = Some(name.to_string());
            match decode_actor_record(&key, name, kv.value()) {
                Ok(record) => page.actors.push(record),
                Err(e) => {
                    page.malformed += 1;
                    tracing::warn!("malformed actor entry skipped: {e}");
                    if page.skipped.len() < crate::MAX_SKIPPED {
                        page.skipped.push(crate::Skipped {
                            name: name.to_string(),
                            key: key.to_string(),
                            error: e.to_string(),
                        });
                    }
                }
            }
        }
        page.next = if more { last } else { None };
        Ok(page)
    }
}
