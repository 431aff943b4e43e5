//! What one task asks of a node.

use std::collections::BTreeMap;

use super::quantity::Quantity;
use super::{ResourceOptions, CPU, GPU, MEMORY};
use serde::{Deserialize, Serialize};

/// A task's resource request, fully resolved (no "default" left).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Request {
    /// CPU cores.
    pub cpu: Quantity,
    /// GPUs.
    pub gpu: Quantity,
    /// Bytes of memory reserved.
    pub memory: u64,
    /// Custom resources by name.
    pub custom: BTreeMap<String, Quantity>,
}

impl Request {
    /// One CPU: a remote function's default (Ray's `num_cpus=1`).
    pub fn one_cpu() -> Self {
        Request {
            cpu: Quantity::ONE,
            ..Request::default()
        }
    }

    /// Resolves a request: each field from `call` if set, else from
    /// `declared`, else from `default`.
    ///
    /// # Errors
    /// A message naming the field when a quantity is negative or not a
    /// number.
    pub fn resolve(
        call: &ResourceOptions,
        declared: &ResourceOptions,
        default: &Request,
    ) -> Result<Request, String> {
        let pick = |c: Option<f64>, d: Option<f64>, what: &str, fallback: Quantity| match c.or(d) {
            Some(v) => Quantity::from_f64(v, what),
            None => Ok(fallback),
        };
        let custom_list = if call.custom.is_empty() {
            &declared.custom
        } else {
            &call.custom
        };
        let mut custom = BTreeMap::new();
        for (name, qty) in custom_list {
            if name == CPU || name == GPU || name == MEMORY {
                return Err(format!(
                    "resource `{name}` is set with num_cpus, num_gpus or memory, not as a custom resource"
                ));
            }
            let q = Quantity::from_f64(*qty, &format!("resource `{name}`"))?;
            if q > Quantity::ZERO {
                custom.insert(name.clone(), q);
            }
        }
        if custom_list.is_empty() {
            custom.clone_from(&default.custom);
        }
        Ok(Request {
            cpu: pick(call.num_cpus, declared.num_cpus, "num_cpus", default.cpu)?,
            gpu: pick(call.num_gpus, declared.num_gpus, "num_gpus", default.gpu)?,
            memory: call.memory.or(declared.memory).unwrap_or(default.memory),
            custom,
        })
    }
}

impl Request {
    /// The amounts asked for, by resource name (`CPU`, `GPU`, `memory` in
    /// bytes, custom names), zero amounts left out: what a node's
    /// published resources are compared with.
    pub fn amounts(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        if self.cpu > Quantity::ZERO {
            out.insert(CPU.to_string(), self.cpu.as_f64());
        }
        if self.gpu > Quantity::ZERO {
            out.insert(GPU.to_string(), self.gpu.as_f64());
        }
        if self.memory > 0 {
            out.insert(MEMORY.to_string(), self.memory as f64);
        }
        for (name, q) in &self.custom {
            if *q > Quantity::ZERO {
                out.insert(name.clone(), q.as_f64());
            }
        }
        out
    }

    /// Whether `offered` (amounts by name, as [`Request::amounts`]) covers
    /// every amount asked for.
    pub fn fits(&self, offered: &BTreeMap<String, f64>) -> bool {
        self.amounts()
            .iter()
            .all(|(name, want)| offered.get(name).is_some_and(|have| have >= want))
    }
}

impl std::fmt::Display for Request {
    /// Ray's notation: `{CPU: 1, GPU: 0.5, accelerator: 1}`, zero amounts
    /// left out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if self.cpu > Quantity::ZERO {
            parts.push(format!("{CPU}: {}", self.cpu));
        }
        if self.gpu > Quantity::ZERO {
            parts.push(format!("{GPU}: {}", self.gpu));
        }
        if self.memory > 0 {
            parts.push(format!("{MEMORY}: {}", self.memory));
        }
        for (name, q) in &self.custom {
            parts.push(format!("{name}: {q}"));
        }
        write!(f, "{{{}}}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(cpus: Option<f64>, gpus: Option<f64>, custom: &[(&str, f64)]) -> ResourceOptions {
        ResourceOptions {
            num_cpus: cpus,
            num_gpus: gpus,
            memory: None,
            custom: custom.iter().map(|(n, q)| (n.to_string(), *q)).collect(),
        }
    }

    #[test]
    fn call_overrides_declaration_overrides_default() {
        let default = Request::one_cpu();
        let declared = req(Some(0.5), Some(1.0), &[("accelerator", 1.0)]);
        let r = Request::resolve(&req(None, None, &[]), &declared, &default).unwrap();
        assert_eq!(r.to_string(), "{CPU: 0.5, GPU: 1, accelerator: 1}");
        let r =
            Request::resolve(&req(Some(2.0), None, &[("x", 0.25)]), &declared, &default).unwrap();
        assert_eq!(r.to_string(), "{CPU: 2, GPU: 1, x: 0.25}");
        let r = Request::resolve(&req(None, None, &[]), &req(None, None, &[]), &default).unwrap();
        assert_eq!(r, Request::one_cpu());
        let err = Request::resolve(&req(None, Some(-1.0), &[]), &declared, &default).unwrap_err();
        assert!(err.contains("num_gpus"), "{err}");
        let err =
            Request::resolve(&req(None, None, &[("GPU", 1.0)]), &declared, &default).unwrap_err();
        assert!(err.contains("num_gpus"), "{err}");
    }
}
