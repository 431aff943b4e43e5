//! The job table on a real etcd: a job started through one node is found,
//! with that node, through another.

use wray_control_plane::{EtcdJobTable, JobId, JobTable, NodeId};

use crate::etcd_server::EtcdServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_started_on_one_node_is_found_from_another() {
    let etcd = EtcdServer::start();
    let (a, b) = (NodeId::random().to_string(), NodeId::random().to_string());
    let on_a = EtcdJobTable::new(etcd.etcd_client().await, "c1", &a).unwrap();
    let on_b = EtcdJobTable::new(etcd.etcd_client().await, "c1", &b).unwrap();
    let other_cluster = EtcdJobTable::new(etcd.etcd_client().await, "c2", &b).unwrap();
    assert!(EtcdJobTable::new(etcd.etcd_client().await, "c1", "n1").is_err());

    let job = on_a.start_job("wordcount main").await.unwrap();
    let second = on_b.start_job("session").await.unwrap();
    assert_ne!(job, second);
    let found = on_b.get_job(job).await.unwrap().unwrap();
    assert_eq!(found.id, job);
    assert_eq!(found.driver, "wordcount main");
    assert_eq!(found.node_id.as_deref(), Some(a.as_str()));
    assert!(other_cluster.get_job(job).await.unwrap().is_none());
    assert!(on_a.get_job(JobId(1)).await.unwrap().is_none());

    let live: Vec<JobId> = on_a
        .live_jobs()
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(live.len(), 2);
    assert!(live.contains(&job) && live.contains(&second));

    on_b.end_job(job).await.unwrap();
    assert!(on_a.get_job(job).await.unwrap().is_none());
    assert_eq!(on_a.live_jobs().await.unwrap().len(), 1);

    // A damaged record: skipped by the listing, an error when asked for.
    let mut raw = etcd.client().await;
    let bad = JobId(0xabc);
    raw.put(format!("/wray/c1/jobs/{bad}"), "nope", None)
        .await
        .unwrap();
    assert_eq!(on_a.live_jobs().await.unwrap().len(), 1);
    assert!(on_a.get_job(bad).await.is_err());
}
