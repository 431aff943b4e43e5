//! Per-task limits (beyond Ray): memory, time and fuel, resolved from the
//! call's options, the function's declaration and the node's defaults.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::LimitOptions;

/// The limits one task (or each call of an actor) runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Most bytes its instance's linear memory may grow to.
    pub max_memory: u64,
    /// Most wall-clock time it may run, from its start (`None`: no limit).
    pub timeout: Option<Duration>,
    /// Most wasm fuel it may burn (`None`: unmetered).
    pub fuel: Option<u64>,
}

impl Limits {
    /// Each limit from `call` if set, else from `declared`, else from
    /// `base` (the node's limits, or an actor's for its calls); `base` is
    /// also the ceiling: a call or a declaration may lower a limit, never
    /// raise it past the node's (a guest asking for `u64::MAX` ms gets the
    /// node's time limit).
    ///
    /// # Errors
    /// A message when a fuel limit is asked of a node without fuel metering
    /// (`fuel_metering` false), or a memory limit below one wasm page.
    pub fn resolve(
        call: &LimitOptions,
        declared: &LimitOptions,
        base: Limits,
        fuel_metering: bool,
    ) -> Result<Self, String> {
        let fuel = match (call.fuel.or(declared.fuel), base.fuel) {
            (Some(asked), Some(ceiling)) => Some(asked.min(ceiling)),
            (asked, ceiling) => asked.or(ceiling),
        };
        if fuel.is_some() && !fuel_metering {
            return Err(
                "a fuel limit needs a node started with fuel metering (--fuel-metering)".into(),
            );
        }
        let max_memory = call
            .max_memory
            .or(declared.max_memory)
            .unwrap_or(base.max_memory)
            .min(base.max_memory);
        if max_memory < 1 << 16 {
            return Err(format!(
                "max_memory of {max_memory} bytes is below one wasm page (65536)"
            ));
        }
        let asked = call
            .timeout_ms
            .or(declared.timeout_ms)
            .map(Duration::from_millis);
        let timeout = match (asked, base.timeout) {
            (Some(asked), Some(ceiling)) => Some(asked.min(ceiling)),
            (asked, ceiling) => asked.or(ceiling),
        };
        Ok(Limits {
            max_memory,
            timeout,
            fuel,
        })
    }
}

impl Limits {
    /// These limits (a task's, set on the node that submitted it) within
    /// `node`'s (the node that runs it): each the smaller of the two, a
    /// limit either sets applying. A fuel limit stays only where this node
    /// meters fuel (`fuel_metering`); elsewhere the task runs unmetered,
    /// within its time limit.
    pub fn within(self, node: Limits, fuel_metering: bool) -> Limits {
        fn least<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        Limits {
            max_memory: self.max_memory.min(node.max_memory),
            timeout: least(self.timeout, node.timeout),
            fuel: least(self.fuel, node.fuel).filter(|_| fuel_metering),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node's own limits, as a node's defaults give them.
    fn node_limits() -> Limits {
        Limits {
            max_memory: 256 << 20,
            timeout: Some(Duration::from_secs(600)),
            fuel: None,
        }
    }

    fn limits(mem: Option<u64>, ms: Option<u64>, fuel: Option<u64>) -> LimitOptions {
        LimitOptions {
            max_memory: mem,
            timeout_ms: ms,
            fuel,
        }
    }

    #[test]
    fn call_overrides_declaration_overrides_node() {
        let node = node_limits();
        let l = Limits::resolve(
            &limits(None, Some(5), None),
            &limits(Some(1 << 20), Some(9), None),
            node,
            false,
        )
        .unwrap();
        assert_eq!(l.max_memory, 1 << 20);
        assert_eq!(l.timeout, Some(Duration::from_millis(5)));
        let l = Limits::resolve(
            &limits(None, None, None),
            &limits(None, None, None),
            node,
            false,
        )
        .unwrap();
        assert_eq!(l, node_limits());
        let err = Limits::resolve(
            &limits(None, None, Some(10)),
            &limits(None, None, None),
            node,
            false,
        )
        .unwrap_err();
        assert!(err.contains("fuel metering"), "{err}");
        let l = Limits::resolve(
            &limits(None, None, Some(10)),
            &limits(None, None, None),
            node,
            true,
        )
        .unwrap();
        assert_eq!(l.fuel, Some(10));
    }

    #[test]
    fn the_node_is_the_ceiling() {
        let node = node_limits();
        let greedy = limits(Some(u64::MAX), Some(u64::MAX), None);
        let l = Limits::resolve(&greedy, &limits(None, None, None), node, false).unwrap();
        assert_eq!(l.max_memory, node.max_memory);
        assert_eq!(l.timeout, node.timeout);
        let metered = Limits {
            fuel: Some(100),
            ..node
        };
        let l =
            Limits::resolve(&limits(None, None, Some(u64::MAX)), &greedy, metered, true).unwrap();
        assert_eq!(l.fuel, Some(100));
        // Without a node limit, what is asked applies.
        let unlimited = Limits {
            timeout: None,
            ..node
        };
        let l = Limits::resolve(&greedy, &greedy, unlimited, false).unwrap();
        assert_eq!(l.timeout, Some(Duration::from_millis(u64::MAX)));
    }

    #[test]
    fn a_forwarded_tasks_limits_are_the_smaller_of_its_own_and_the_nodes() {
        let ms = |n| Some(Duration::from_millis(n));
        let task = Limits {
            max_memory: 1 << 30,
            timeout: None,
            fuel: Some(500),
        };
        let node = Limits {
            max_memory: 64 << 20,
            timeout: ms(2000),
            fuel: None,
        };
        let metered = task.within(node, true);
        assert_eq!(metered.max_memory, 64 << 20);
        assert_eq!(metered.timeout, ms(2000));
        assert_eq!(metered.fuel, Some(500));
        // A node without fuel metering cannot meter it.
        assert_eq!(task.within(node, false).fuel, None);
        let short = Limits {
            timeout: ms(10),
            ..task
        };
        assert_eq!(short.within(node, true).timeout, ms(10));
        let node_fuel = Limits {
            fuel: Some(100),
            ..node
        };
        assert_eq!(task.within(node_fuel, true).fuel, Some(100));
    }
}
