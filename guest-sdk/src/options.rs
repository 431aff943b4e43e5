//! Resource requests and limits: declared on a function or actor class
//! (`#[wray::remote(num_gpus = 1)]`), or set per call with
//! [`Options`] (Ray's `.options(..)`).

use core::time::Duration;

use crate::bindings::types as wit;
use crate::codec::Format;

/// Per-call options, overriding what the function declared (Ray's
/// `f.options(num_gpus=1).remote(..)`): `add.options(Options::new()
/// .num_cpus(0.5)).remote(1, 2)`.
///
/// Resource quantities are fractional (to 1/10,000): below 1 shares one
/// unit (a core, a GPU), above 1 must be whole. Limits are wray's own: a
/// task passing one fails with an error naming it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    num_cpus: Option<f64>,
    num_gpus: Option<f64>,
    memory: Option<u64>,
    resources: Vec<(String, f64)>,
    max_memory: Option<u64>,
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    detached: bool,
    name: Option<String>,
    max_restarts: u32,
    max_task_retries: u32,
    format: Option<Format>,
    scheduling: Scheduling,
}

/// Where in a cluster a task or actor is placed (Ray's
/// `scheduling_strategy`); a node of its own runs everything itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scheduling {
    /// Ray's hybrid policy (`DEFAULT`): on the submitting node while its
    /// busiest resource the task asks for is used under the cluster's
    /// spread threshold (50% by default), else the least used node with
    /// room, else queued where it fits, moving to a node that frees up.
    #[default]
    Default,
    /// Ray's `SPREAD`: the least used node with room, the submitting one
    /// included, whatever the threshold: a burst goes round the nodes.
    Spread,
    /// Ray's `NodeAffinitySchedulingStrategy`: on node `node_id` (as
    /// [`node_id`](crate::node_id) says it), queued there until it has
    /// room. When that node is dead or can never run the task: with
    /// `soft`, placed as [`Scheduling::Default`]; else the task fails with
    /// [`Infeasible`](crate::ErrorKind::Infeasible) naming the node.
    NodeAffinity {
        /// The node's id (`node-<16 hex>`).
        node_id: String,
        /// Fall back to the default policy instead of failing.
        soft: bool,
    },
}

impl Options {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// CPUs the task holds while it runs (default 1).
    #[must_use]
    pub fn num_cpus(mut self, n: f64) -> Self {
        self.num_cpus = Some(n);
        self
    }

    /// GPUs the task holds (default 0); see [`crate::get_gpu_ids`].
    #[must_use]
    pub fn num_gpus(mut self, n: f64) -> Self {
        self.num_gpus = Some(n);
        self
    }

    /// Bytes of node memory reserved for the task (Ray's `memory`; a
    /// reservation, not a limit: see [`max_memory`](Self::max_memory)).
    #[must_use]
    pub fn memory(mut self, bytes: u64) -> Self {
        self.memory = Some(bytes);
        self
    }

    /// `quantity` of custom resource `name` (Ray's `resources={..}`); the
    /// first call replaces what the function declared.
    #[must_use]
    pub fn resource(mut self, name: &str, quantity: f64) -> Self {
        self.resources.push((name.to_string(), quantity));
        self
    }

    /// Most bytes the task's linear memory may grow to.
    #[must_use]
    pub fn max_memory(mut self, bytes: u64) -> Self {
        self.max_memory = Some(bytes);
        self
    }

    /// Most wall-clock time the task may run.
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout_ms = Some(u64::try_from(limit.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Most wasm fuel the task may burn (nodes with fuel metering only).
    #[must_use]
    pub fn fuel(mut self, units: u64) -> Self {
        self.fuel = Some(units);
        self
    }

    /// For an actor (`Class::remote_with`): it lives until it is killed
    /// ([`kill`](crate::kill)), rather than exit once its last
    /// [`ActorHandle`](crate::ActorHandle) is dropped, and it outlives its
    /// job and its driver (Ray's `lifetime="detached"`): give it a
    /// [`name`](Self::name) to find it from later jobs. Ignored by remote
    /// functions.
    #[must_use]
    pub fn detached(mut self) -> Self {
        self.detached = true;
        self
    }

    /// For an actor: a name unique in the cluster (on one node, the node)
    /// while the actor lives, which [`get_actor`](crate::get_actor) finds
    /// it by from any task, job and node (Ray's `name=`). 1 to 128 bytes,
    /// no `/`, `@` or control character. A name another live actor holds
    /// kills the new actor: its calls fail with
    /// [`ActorDied`](crate::ErrorKind::ActorDied) naming the holder.
    #[must_use]
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// For an actor: how many times it is created again, its constructor
    /// re-run with its original arguments on another node its request
    /// fits, after the node it lived on died (Ray's `max_restarts`; 0 by
    /// default: it dies with its node). Calls made meanwhile wait for the
    /// new instance. Its state is the constructor's again.
    #[must_use]
    pub fn max_restarts(mut self, n: u32) -> Self {
        self.max_restarts = n;
        self
    }

    /// For an actor: how many times a call that was running when its node
    /// died runs again on the restarted actor (Ray's `max_task_retries`; 0
    /// by default: it fails with [`ActorDied`](crate::ErrorKind::ActorDied)).
    /// A call run again may have run part of its body on the dead node.
    #[must_use]
    pub fn max_task_retries(mut self, n: u32) -> Self {
        self.max_task_retries = n;
        self
    }

    /// Where in a cluster the task or actor is placed (Ray's
    /// `scheduling_strategy`): `add.options(Options::new()
    /// .scheduling(Scheduling::Spread)).remote(1, 2)`.
    #[must_use]
    pub fn scheduling(mut self, scheduling: Scheduling) -> Self {
        self.scheduling = scheduling;
        self
    }

    /// The strategy these options give, when it is not the default.
    pub(crate) fn placement(&self) -> Option<wit::SchedulingStrategy> {
        match &self.scheduling {
            Scheduling::Default => None,
            Scheduling::Spread => Some(wit::SchedulingStrategy::Spread),
            Scheduling::NodeAffinity { node_id, soft } => {
                Some(wit::SchedulingStrategy::NodeAffinity(wit::NodeAffinity {
                    node_id: node_id.clone(),
                    soft: *soft,
                }))
            }
        }
    }

    /// The actor options of these options, when any is set.
    pub(crate) fn actor_options(&self) -> Option<wit::ActorOptions> {
        let any = self.name.is_some() || self.max_restarts > 0 || self.max_task_retries > 0;
        any.then(|| wit::ActorOptions {
            name: self.name.clone(),
            max_restarts: self.max_restarts,
            max_task_retries: self.max_task_retries,
        })
    }

    /// The format the call's arguments travel in, and its results come
    /// back in: [`Format::Json`] to call a component written in another
    /// language (or one declared `as json` in `wray::deployed!`),
    /// [`Format::Rkyv`] (the default for Rust components) otherwise.
    #[must_use]
    pub fn format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// The format these options give, `default` when they say none.
    #[doc(hidden)]
    pub fn format_or(&self, default: Format) -> Format {
        self.format.unwrap_or(default)
    }

    /// The WIT options of a call returning `num_returns` objects, made in
    /// `format` (a JSON call asks for JSON results).
    pub(crate) fn to_wit(&self, num_returns: u32, format: Format) -> wit::TaskOptions {
        wit::TaskOptions {
            num_returns,
            resources: wit::ResourceRequest {
                num_cpus: self.num_cpus,
                num_gpus: self.num_gpus,
                memory: self.memory,
                custom: self.resources.clone(),
            },
            limits: wit::Limits {
                max_memory: self.max_memory,
                timeout_ms: self.timeout_ms,
                fuel: self.fuel,
            },
            detached: self.detached,
            result_codec: match format {
                Format::Json => Some(wit::Codec::Json),
                Format::Rkyv => None,
            },
        }
    }
}

/// What a function or actor class declares in its attribute; built by the
/// macros as a constant.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Declared {
    pub num_cpus: Option<f64>,
    pub num_gpus: Option<f64>,
    pub memory: Option<u64>,
    pub resources: &'static [(&'static str, f64)],
    pub max_memory: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub fuel: Option<u64>,
    pub reuse: bool,
}

impl Declared {
    /// Nothing declared: the node's defaults.
    pub const NONE: Declared = Declared {
        num_cpus: None,
        num_gpus: None,
        memory: None,
        resources: &[],
        max_memory: None,
        timeout_ms: None,
        fuel: None,
        reuse: false,
    };

    pub(crate) fn resources_wit(&self) -> wit::ResourceRequest {
        wit::ResourceRequest {
            num_cpus: self.num_cpus,
            num_gpus: self.num_gpus,
            memory: self.memory,
            custom: self
                .resources
                .iter()
                .map(|(n, q)| ((*n).to_string(), *q))
                .collect(),
        }
    }

    pub(crate) fn limits_wit(&self) -> wit::Limits {
        wit::Limits {
            max_memory: self.max_memory,
            timeout_ms: self.timeout_ms,
            fuel: self.fuel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_wit_options() {
        let o = Options::new()
            .num_cpus(0.5)
            .num_gpus(1.0)
            .resource("accelerator", 2.0)
            .timeout(Duration::from_millis(1500))
            .max_memory(1 << 20);
        let w = o.to_wit(2, Format::Rkyv);
        assert_eq!(w.num_returns, 2);
        assert_eq!(w.resources.num_cpus, Some(0.5));
        assert_eq!(w.resources.custom, vec![("accelerator".to_string(), 2.0)]);
        assert_eq!(w.limits.timeout_ms, Some(1500));
        assert_eq!(w.limits.max_memory, Some(1 << 20));
        let none = Options::new().to_wit(1, Format::Json);
        assert_eq!(none.result_codec, Some(wit::Codec::Json));
        assert_eq!(none.resources.num_gpus, None);
        assert!(Declared::NONE.resources_wit().custom.is_empty());
    }
}
