//! A node's resources: totals, free amounts, and per-unit ids.
//!
//! `CPU`, `GPU` and every custom resource are *unit-instance* resources, as
//! Ray's GPUs are: each whole unit has an id (a core, a GPU index, a custom
//! unit number) and its own free fraction. A request below one unit must fit
//! inside a single unit (first fit by id, so 0.5-GPU tasks pack two per GPU);
//! a request of one unit or more must be whole and takes that many entirely
//! free units (lowest ids first). `memory` is a plain amount in bytes.
//! Source: Ray's `ResourceInstanceSet` (`src/ray/common/scheduling/
//! resource_instance_set.cc`).

use std::collections::BTreeMap;

use super::discovery::GpuInfo;
use super::{CPU, GPU, MEMORY};
use crate::proto::quantity::{Quantity, SCALE};
use crate::proto::Request;

/// What a node has in all.
#[derive(Debug, Clone, Default)]
pub struct ResourceTotals {
    /// OS ids of the cores behind the node's CPU units, one per unit (the
    /// cores workers are pinned to).
    pub cpu_ids: Vec<u32>,
    /// The node's GPUs, one unit each.
    pub gpus: Vec<GpuInfo>,
    /// Bytes of memory tasks may reserve.
    pub memory: u64,
    /// Custom resources.
    pub custom: BTreeMap<String, Quantity>,
}

/// One unit held by a task: its index in the node's list, its id, and how
/// much of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    index: usize,
    /// The unit's id (core, GPU index, custom unit number).
    pub id: u32,
    /// The amount held (a fraction of one unit, or all of it).
    pub amount: Quantity,
}

/// What a running task (or live actor) holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allocation {
    /// CPU units (cores).
    pub cpu: Vec<Grant>,
    /// GPU units.
    pub gpu: Vec<Grant>,
    /// Bytes of memory.
    pub memory: u64,
    /// Custom resources' units, by name.
    pub custom: BTreeMap<String, Vec<Grant>>,
}

impl Allocation {
    /// `(resource, [(id, fraction)])` for every unit resource held, as the
    /// guest's `get-resource-ids` reports it.
    pub fn ids(&self) -> Vec<(String, Vec<(u32, f64)>)> {
        let list = |g: &[Grant]| g.iter().map(|g| (g.id, g.amount.as_f64())).collect();
        let mut out = Vec::new();
        if !self.cpu.is_empty() {
            out.push((CPU.to_string(), list(&self.cpu)));
        }
        if !self.gpu.is_empty() {
            out.push((GPU.to_string(), list(&self.gpu)));
        }
        for (name, grants) in &self.custom {
            out.push((name.clone(), list(grants)));
        }
        out
    }
}

/// The units of one resource.
#[derive(Debug, Clone)]
struct Units {
    ids: Vec<u32>,
    capacity: Vec<u64>,
    free: Vec<u64>,
}

impl Units {
    /// Units with ids `ids`, each whole.
    fn whole(ids: Vec<u32>) -> Self {
        let capacity = vec![SCALE; ids.len()];
        Units {
            free: capacity.clone(),
            capacity,
            ids,
        }
    }

    /// `total` split into whole units numbered from 0, plus a partial last
    /// one.
    fn of_total(total: Quantity) -> Self {
        let mut capacity = vec![SCALE; usize::try_from(total.units()).unwrap_or(0)];
        if total.0 % SCALE != 0 {
            capacity.push(total.0 % SCALE);
        }
        let ids = (0..capacity.len() as u32).collect();
        Units {
            free: capacity.clone(),
            capacity,
            ids,
        }
    }

    fn total(&self) -> Quantity {
        Quantity(self.capacity.iter().sum())
    }

    fn available(&self) -> Quantity {
        Quantity(self.free.iter().sum())
    }

    /// Whether `q` fits in these units when all are free (no allocation:
    /// it runs on every submission).
    fn feasible(&self, q: Quantity) -> bool {
        if q == Quantity::ZERO {
            true
        } else if q.0 < SCALE {
            self.capacity.iter().any(|c| *c >= q.0)
        } else {
            q.is_whole()
                && self.capacity.iter().filter(|c| **c == SCALE).count() as u64 >= q.units()
        }
    }

    /// Which units (index, amount) would serve `q` from `free`.
    fn pick(free: &[u64], capacity: &[u64], q: Quantity) -> Option<Vec<(usize, u64)>> {
        if q == Quantity::ZERO {
            return Some(Vec::new());
        }
        if q.0 < SCALE {
            let i = free.iter().position(|f| *f >= q.0)?;
            return Some(vec![(i, q.0)]);
        }
        if !q.is_whole() {
            return None;
        }
        let need = usize::try_from(q.units()).ok()?;
        let whole: Vec<usize> = (0..free.len())
            .filter(|&i| capacity[i] == SCALE && free[i] == SCALE)
            .take(need)
            .collect();
        (whole.len() == need).then(|| whole.into_iter().map(|i| (i, SCALE)).collect())
    }

    fn take(&mut self, q: Quantity) -> Option<Vec<Grant>> {
        let picked = Self::pick(&self.free, &self.capacity, q)?;
        Some(
            picked
                .into_iter()
                .map(|(index, amount)| {
                    self.free[index] -= amount;
                    Grant {
                        index,
                        id: self.ids[index],
                        amount: Quantity(amount),
                    }
                })
                .collect(),
        )
    }

    fn give(&mut self, grants: &[Grant]) {
        for g in grants {
            if let Some(f) = self.free.get_mut(g.index) {
                *f = (*f + g.amount.0).min(self.capacity[g.index]);
            }
        }
    }
}

/// A node's resources and what is free of them.
#[derive(Debug, Clone)]
pub struct NodeResources {
    cpu: Units,
    gpu: Units,
    memory_total: u64,
    memory_free: u64,
    custom: BTreeMap<String, Units>,
}

impl NodeResources {
    /// All of `totals`, free.
    pub fn new(totals: &ResourceTotals) -> Self {
        NodeResources {
            cpu: Units::whole(totals.cpu_ids.clone()),
            gpu: Units::whole(totals.gpus.iter().map(|g| g.index).collect()),
            memory_total: totals.memory,
            memory_free: totals.memory,
            custom: totals
                .custom
                .iter()
                .map(|(n, q)| (n.clone(), Units::of_total(*q)))
                .collect(),
        }
    }

    /// Whether `request` could ever run here (with everything free).
    ///
    /// # Errors
    /// Why not, naming the request and the node's totals.
    pub fn check_feasible(&self, request: &Request) -> Result<(), String> {
        let mut short = Vec::new();
        if !self.cpu.feasible(request.cpu) {
            short.push(CPU);
        }
        if !self.gpu.feasible(request.gpu) {
            short.push(GPU);
        }
        if request.memory > self.memory_total {
            short.push(MEMORY);
        }
        for (name, q) in &request.custom {
            if !self.custom.get(name).is_some_and(|u| u.feasible(*q)) {
                short.push(name);
            }
        }
        if short.is_empty() {
            return Ok(());
        }
        let fractional = [(request.cpu, CPU), (request.gpu, GPU)]
            .into_iter()
            .chain(request.custom.iter().map(|(n, q)| (*q, n.as_str())))
            .any(|(q, n)| short.contains(&n) && q > Quantity::ONE && !q.is_whole());
        Err(format!(
            "resource request {request} can never be satisfied: not enough {} on a node with {}{}",
            short.join(", "),
            self.totals_text(),
            if fractional {
                " (a request above 1 unit must be a whole number)"
            } else {
                ""
            }
        ))
    }

    /// Whether what is free now covers `request` (unit by unit, as
    /// [`NodeResources::try_allocate`] would take it).
    pub fn fits(&self, request: &Request) -> bool {
        let fits = |u: &Units, q| Units::pick(&u.free, &u.capacity, q).is_some();
        request.memory <= self.memory_free
            && fits(&self.cpu, request.cpu)
            && fits(&self.gpu, request.gpu)
            && request
                .custom
                .iter()
                .all(|(name, q)| self.custom.get(name).is_some_and(|u| fits(u, *q)))
    }

    /// Takes what `request` needs, all or nothing.
    pub fn try_allocate(&mut self, request: &Request) -> Option<Allocation> {
        // Check every unit resource before taking any.
        if !self.fits(request) {
            return None;
        }
        let mut custom = BTreeMap::new();
        for (name, q) in &request.custom {
            let units = self.custom.get_mut(name)?;
            custom.insert(name.clone(), units.take(*q)?);
        }
        self.memory_free -= request.memory;
        Some(Allocation {
            cpu: self.cpu.take(request.cpu)?,
            gpu: self.gpu.take(request.gpu)?,
            memory: request.memory,
            custom,
        })
    }

    /// Gives everything in `allocation` back.
    pub fn release(&mut self, allocation: &Allocation) {
        self.cpu.give(&allocation.cpu);
        self.gpu.give(&allocation.gpu);
        self.memory_free = (self.memory_free + allocation.memory).min(self.memory_total);
        for (name, grants) in &allocation.custom {
            if let Some(u) = self.custom.get_mut(name) {
                u.give(grants);
            }
        }
    }

    /// Gives back only the CPU units of `allocation` (a task blocking in
    /// `get`); returns how much to take again later.
    pub fn release_cpu(&mut self, allocation: &mut Allocation) -> Quantity {
        let cpu = std::mem::take(&mut allocation.cpu);
        self.cpu.give(&cpu);
        Quantity(cpu.iter().map(|g| g.amount.0).sum())
    }

    /// Takes `cpu` CPU units again into `allocation`, if free.
    pub fn try_reacquire_cpu(&mut self, allocation: &mut Allocation, cpu: Quantity) -> bool {
        match self.cpu.take(cpu) {
            Some(grants) => {
                allocation.cpu = grants;
                true
            }
            None => false,
        }
    }

    /// Whether `cpu` CPU units are free now.
    pub fn cpu_fits(&self, cpu: Quantity) -> bool {
        Units::pick(&self.cpu.free, &self.cpu.capacity, cpu).is_some()
    }

    /// Totals by resource name (Ray's `cluster_resources()`, one node).
    pub fn totals(&self) -> BTreeMap<String, f64> {
        self.amounts(Units::total, self.memory_total)
    }

    /// Free amounts by resource name (Ray's `available_resources()`).
    pub fn available(&self) -> BTreeMap<String, f64> {
        self.amounts(Units::available, self.memory_free)
    }

    fn amounts(&self, f: impl Fn(&Units) -> Quantity, memory: u64) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        out.insert(CPU.to_string(), f(&self.cpu).as_f64());
        out.insert(GPU.to_string(), f(&self.gpu).as_f64());
        out.insert(MEMORY.to_string(), memory as f64);
        for (name, u) in &self.custom {
            out.insert(name.clone(), f(u).as_f64());
        }
        out
    }

    fn totals_text(&self) -> String {
        let mut parts = vec![
            format!("{CPU}: {}", self.cpu.total()),
            format!("{GPU}: {}", self.gpu.total()),
            format!("{MEMORY}: {}", self.memory_total),
        ];
        for (name, u) in &self.custom {
            parts.push(format!("{name}: {}", u.total()));
        }
        format!("{{{}}}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpus: u32, gpus: u32, custom: &[(&str, f64)]) -> NodeResources {
        NodeResources::new(&ResourceTotals {
            cpu_ids: (0..cpus).collect(),
            gpus: (0..gpus).map(GpuInfo::fake).collect(),
            memory: 1 << 30,
            custom: custom
                .iter()
                .map(|(n, q)| (n.to_string(), Quantity::from_f64(*q, n).unwrap()))
                .collect(),
        })
    }

    fn gpus(q: f64) -> Request {
        Request {
            gpu: Quantity::from_f64(q, "gpu").unwrap(),
            ..Request::default()
        }
    }

    #[test]
    fn half_gpus_pack_two_per_gpu_and_a_fifth_waits() {
        let mut n = node(4, 2, &[]);
        let held: Vec<Allocation> = (0..4)
            .map(|_| n.try_allocate(&gpus(0.5)).unwrap())
            .collect();
        let ids: Vec<u32> = held.iter().map(|a| a.gpu[0].id).collect();
        assert_eq!(ids, [0, 0, 1, 1]);
        assert!(n.try_allocate(&gpus(0.5)).is_none());
        n.release(&held[2]);
        assert_eq!(n.try_allocate(&gpus(0.5)).unwrap().gpu[0].id, 1);
        assert_eq!(n.available()["GPU"], 0.0);
    }

    #[test]
    fn whole_requests_take_free_units_and_fractions_above_one_are_infeasible() {
        let mut n = node(2, 4, &[("accelerator", 1.5)]);
        let a = n.try_allocate(&gpus(0.5)).unwrap();
        let b = n.try_allocate(&gpus(2.0)).unwrap();
        assert_eq!(b.gpu.iter().map(|g| g.id).collect::<Vec<_>>(), [1, 2]);
        assert!(n.try_allocate(&gpus(2.0)).is_none(), "only GPU 3 is whole");
        assert!(n.check_feasible(&gpus(2.0)).is_ok(), "feasible later");
        let err = n.check_feasible(&gpus(1.5)).unwrap_err();
        assert!(err.contains("whole number"), "{err}");
        let err = n.check_feasible(&gpus(5.0)).unwrap_err();
        assert!(err.contains("{GPU: 5}") && err.contains("GPU: 4"), "{err}");
        n.release(&a);
        n.release(&b);
        assert_eq!(n.available()["GPU"], 4.0);
        // A partial custom unit serves fractions up to its size.
        let acc = |q| Request {
            custom: [(
                "accelerator".to_string(),
                Quantity::from_f64(q, "a").unwrap(),
            )]
            .into(),
            ..Request::default()
        };
        let one = n.try_allocate(&acc(1.0)).unwrap();
        let half = n.try_allocate(&acc(0.5)).unwrap();
        assert_eq!(
            (
                one.custom["accelerator"][0].id,
                half.custom["accelerator"][0].id
            ),
            (0, 1)
        );
        assert!(n.check_feasible(&acc(0.6)).is_ok());
        let err = n.check_feasible(&Request {
            custom: [("tpu".to_string(), Quantity::ONE)].into(),
            ..Request::default()
        });
        assert!(err.unwrap_err().contains("not enough tpu"));
    }

    #[test]
    fn a_blocked_task_gives_back_cpu_and_keeps_its_gpu() {
        let mut n = node(1, 1, &[]);
        let mut a = n
            .try_allocate(&Request {
                cpu: Quantity::ONE,
                gpu: Quantity::ONE,
                ..Request::default()
            })
            .unwrap();
        assert!(!n.cpu_fits(Quantity::ONE));
        let cpu = n.release_cpu(&mut a);
        assert_eq!(cpu, Quantity::ONE);
        assert!(n.try_allocate(&Request::one_cpu()).is_some());
        assert!(!n.try_reacquire_cpu(&mut a, cpu));
        assert_eq!(a.gpu.len(), 1);
        assert_eq!(n.available()["GPU"], 0.0);
    }
}
