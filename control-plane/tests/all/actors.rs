//! The actor directory on a real etcd, seen through two connections: a
//! name is taken once, changed and freed only by its actor, and listed in
//! pages past damaged entries.

use wray_control_plane::{ActorDirectory, ActorRecord, ActorState, Error, EtcdActorDirectory};

use crate::etcd_server::EtcdServer;

fn actor(name: &str, id: u8) -> ActorRecord {
    ActorRecord {
        name: name.to_string(),
        actor_id: format!("{id:02x}").repeat(16),
        node_id: "node-00000000000000aa".to_string(),
        class: "Counter".to_string(),
        component: "ab".repeat(32),
        detached: true,
        state: ActorState::Alive,
        owner_node: None,
        limits: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_is_taken_once_and_freed_only_by_its_actor() {
    let etcd = EtcdServer::start();
    let one = EtcdActorDirectory::new(etcd.etcd_client().await, "c1").unwrap();
    let two = EtcdActorDirectory::new(etcd.etcd_client().await, "c1").unwrap();
    let elsewhere = EtcdActorDirectory::new(etcd.etcd_client().await, "c2").unwrap();
    assert!(EtcdActorDirectory::new(etcd.etcd_client().await, "no/pe").is_err());

    one.register_named(actor("counter", 1)).await.unwrap();
    let err = two.register_named(actor("counter", 2)).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    assert!(err.to_string().contains(&"01".repeat(16)), "{err}");
    assert!(!err.is_retryable());
    elsewhere.register_named(actor("counter", 2)).await.unwrap();

    let found = two.get_named("counter").await.unwrap().unwrap();
    assert_eq!(found, actor("counter", 1));
    assert!(two.get_named("nobody").await.unwrap().is_none());
    assert!(two.get_named("a/b").await.unwrap().is_none());

    let (old, new) = ("01".repeat(16), "02".repeat(16));
    assert!(!two
        .update_state("counter", &new, ActorState::Dead)
        .await
        .unwrap());
    assert!(two
        .update_state("counter", &old, ActorState::Restarting)
        .await
        .unwrap());
    assert_eq!(
        one.get_named("counter").await.unwrap().unwrap().state,
        ActorState::Restarting
    );
    let there = "node-00000000000000bb";
    assert!(!two.moved("counter", &new, there).await.unwrap());
    assert!(two.moved("counter", &old, there).await.unwrap());
    let moved = one.get_named("counter").await.unwrap().unwrap();
    assert_eq!(
        (moved.node_id.as_str(), moved.state),
        (there, ActorState::Alive)
    );
    assert!(!two.remove_named("counter", &new).await.unwrap());
    assert!(two.get_named("counter").await.unwrap().is_some());
    assert!(two.remove_named("counter", &old).await.unwrap());
    assert!(one.get_named("counter").await.unwrap().is_none());
    assert!(!one.remove_named("counter", &old).await.unwrap());
    // Free again: another actor takes it.
    two.register_named(actor("counter", 2)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actors_are_listed_in_pages_past_damaged_entries() {
    let etcd = EtcdServer::start();
    let dir = EtcdActorDirectory::new(etcd.etcd_client().await, "c1").unwrap();
    for i in 0..7u8 {
        dir.register_named(actor(&format!("a{i}"), i + 1))
            .await
            .unwrap();
    }
    let mut raw = etcd.client().await;
    raw.put("/wray/c1/actors/a3", "garbage", None)
        .await
        .unwrap();
    raw.put(
        "/wray/c1/actors/a5",
        serde_json::to_vec(&actor("zz", 9)).unwrap(),
        None,
    )
    .await
    .unwrap();
    let err = dir.get_named("a3").await.unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");

    let mut names = Vec::new();
    let mut malformed = 0;
    let mut skipped = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = dir.list(3, after.as_deref()).await.unwrap();
        pages += 1;
        assert!(page.actors.len() + page.malformed as usize <= 3);
        names.extend(page.actors.into_iter().map(|a| a.name));
        malformed += page.malformed;
        assert_eq!(page.skipped.len() as u64, page.malformed);
        skipped.extend(page.skipped.into_iter().map(|s| s.name));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["a0", "a1", "a2", "a4", "a6"]);
    assert_eq!(malformed, 2);
    assert_eq!(skipped, ["a3", "a5"]);
    assert!(dir.list(0, None).await.is_err());
    assert!(dir.list(100_000, None).await.is_err());
}
