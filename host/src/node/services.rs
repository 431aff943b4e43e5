//! `NodeServices`: the node's side of the executor's
//! `Services` — what a running instance may ask — over the
//! node's scheduler and object store.

use std::sync::Arc;
use std::time::Instant;

use wray_control_plane::{ActorId, ObjectId, TaskId};

use crate::cancel_token::CancelToken;
use crate::config::NodeConfig;
use crate::executor::services::{ActorFound, BoxFuture, Refused, Services};
use crate::node::names::Names;
use crate::objects::{Holds, ObjectStore};
use crate::resources::Allocation;
use crate::scheduler::blocking::{Blocker, WaitEnd};
use crate::scheduler::submit::Submission;
use crate::scheduler::{Callee, Scheduler};

/// The services of one node (see the module docs): its scheduler, and its
/// named actors.
pub(crate) struct NodeServices {
    pub sched: Arc<Scheduler>,
    pub names: Arc<Names>,
}

impl Services for NodeServices {
    fn objects(&self) -> &ObjectStore {
        self.sched.objects()
    }

    fn node_id(&self) -> &str {
        self.sched.node_id()
    }

    fn config(&self) -> &NodeConfig {
        self.sched.config()
    }

    fn shutdown(&self) -> &CancelToken {
        self.sched.shutdown()
    }

    fn submit_function(
        &self,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        function: String,
    ) -> Result<Vec<ObjectId>, Refused> {
        Ok(self
            .sched
            .submit_function(component, caller, call, function)?)
    }

    fn create_actor(
        &self,
        component: Callee<'_>,
        caller: &mut Holds,
        call: Submission,
        class: String,
    ) -> Result<(), Refused> {
        Ok(self.sched.create_actor(component, caller, call, class)?)
    }

    fn call_actor(
        &self,
        caller: &mut Holds,
        actor: ActorId,
        reachable: bool,
        call: Submission,
        method: String,
    ) -> Result<Vec<ObjectId>, Refused> {
        Ok(self
            .sched
            .call_actor(caller, actor, reachable, call, method)?)
    }

    fn name_actor<'a>(&'a self, actor: ActorId, name: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(self.names.name(actor, name))
    }

    fn get_actor<'a>(
        &'a self,
        caller: &'a mut Holds,
        name: &'a str,
        class: &'a str,
    ) -> BoxFuture<'a, Result<ActorFound, Refused>> {
        Box::pin(async move { Ok(self.names.get(caller, name, class).await?) })
    }

    fn cancel(&self, task: TaskId, force: bool, recursive: bool) -> bool {
        self.sched.cancel(task, force, recursive)
    }

    fn kill_actor(&self, actor: ActorId, by: &str) -> bool {
        self.sched.kill_actor(actor, by)
    }

    fn wait_sealed<'a>(
        &'a self,
        ids: &'a [ObjectId],
        need: usize,
        until: Option<Instant>,
        blocker: Blocker<'a>,
    ) -> BoxFuture<'a, WaitEnd> {
        Box::pin(self.sched.wait_sealed(ids, need, until, blocker))
    }

    fn release_resources(&self, allocation: &Allocation) {
        self.sched.release_resources(allocation);
    }
}

#[cfg(test)]
mod tests {
    use wray_control_plane::{JobId, TaskId};

    use super::*;
    use crate::executor::services::DescribeOnly;
    use crate::node::Node;
    use crate::objects::Object;
    use crate::proto::TaskOptions;
    use crate::NodeConfig;

    #[test]
    fn describe_s_services_refuse_work_and_keep_objects_to_themselves() {
        let node = Node::start(NodeConfig::default()).unwrap();
        let services = DescribeOnly::new(node.exec.services.clone());
        let driver = TaskId::driver(JobId::random());
        let call = |i| {
            let id = driver.child(i);
            Submission::new(
                driver,
                id,
                Vec::new(),
                TaskOptions::new(),
                false,
                services.objects(),
                |_| true,
            )
        };
        let hash: Arc<str> = Arc::from("h");
        let mut holds = Holds::default();
        let refused =
            services.submit_function(Callee::Hash(&hash), &mut holds, call(1), "f".into());
        assert!(refused
            .unwrap_err()
            .to_string()
            .contains("`describe` may not submit"));
        let refused = services.create_actor(Callee::Named("x"), &mut holds, call(2), "C".into());
        assert!(matches!(refused, Err(Refused::Describing)));
        assert!(!services.kill_actor(driver, "describe"));
        // A put lands in describe's own store, never in the node's.
        let id = driver.put_object(0).unwrap();
        services.objects().register_pending(id);
        services.objects().acquire(&id);
        services.objects().seal(id, Object::empty());
        assert!(services.objects().exists(&id) && !node.sched.objects().exists(&id));
        assert_eq!(node.sched.stats().submitted, 0);
    }
}
