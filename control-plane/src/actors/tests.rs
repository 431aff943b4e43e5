//! Unit tests of the actor records and the embedded directory.

use super::*;

pub(crate) fn actor(name: &str, id: u8) -> ActorRecord {
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

#[test]
fn records_are_checked() {
    check_actor_record(&actor("a", 1)).unwrap();
    let cases = [
        (
            ActorRecord {
                name: "a/b".into(),
                ..actor("a", 1)
            },
            "`/`",
        ),
        (
            ActorRecord {
                actor_id: "XYZ".into(),
                ..actor("a", 1)
            },
            "actor_id",
        ),
        (
            ActorRecord {
                node_id: "n1".into(),
                ..actor("a", 1)
            },
            "node id",
        ),
        (
            ActorRecord {
                class: String::new(),
                ..actor("a", 1)
            },
            "class",
        ),
        (
            ActorRecord {
                component: "abc".into(),
                ..actor("a", 1)
            },
            "component",
        ),
        (
            ActorRecord {
                owner_node: Some("n1".into()),
                ..actor("a", 1)
            },
            "owner",
        ),
    ];
    for (record, says) in cases {
        let err = check_actor_record(&record).unwrap_err().to_string();
        assert!(err.contains(says), "{err} should say {says}");
    }
    assert_eq!(
        serde_json::to_string(&ActorState::Restarting).unwrap(),
        "\"RESTARTING\""
    );
}

#[tokio::test]
async fn the_embedded_directory_takes_a_name_once_and_pages() {
    let dir = EmbeddedActorDirectory::new();
    dir.register_named(actor("counter", 1)).await.unwrap();
    let err = dir.register_named(actor("counter", 2)).await.unwrap_err();
    assert!(err.to_string().contains(&"01".repeat(16)), "{err}");
    assert!(!dir.remove_named("counter", &"02".repeat(16)).await.unwrap());
    assert!(dir
        .update_state("counter", &"01".repeat(16), ActorState::Dead)
        .await
        .unwrap());
    assert_eq!(
        dir.get_named("counter").await.unwrap().unwrap().state,
        ActorState::Dead
    );
    let there = "node-00000000000000bb";
    assert!(!dir.moved("counter", &"02".repeat(16), there).await.unwrap());
    assert!(dir.moved("counter", &"01".repeat(16), "n1").await.is_err());
    assert!(dir.moved("counter", &"01".repeat(16), there).await.unwrap());
    let moved = dir.get_named("counter").await.unwrap().unwrap();
    assert_eq!(
        (moved.node_id.as_str(), moved.state),
        (there, ActorState::Alive)
    );
    assert!(dir.remove_named("counter", &"01".repeat(16)).await.unwrap());
    assert!(dir.get_named("counter").await.unwrap().is_none());
    for i in 0..5 {
        dir.register_named(actor(&format!("a{i}"), i))
            .await
            .unwrap();
    }
    let first = dir.list(2, None).await.unwrap();
    assert_eq!(first.actors.len(), 2);
    assert_eq!(first.next.as_deref(), Some("a1"));
    let last = dir.list(3, Some("a1")).await.unwrap();
    assert_eq!(
        last.actors
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>(),
        ["a2", "a3", "a4"]
    );
    assert_eq!(last.next, None);
    assert!(dir.list(0, None).await.is_err());
}
