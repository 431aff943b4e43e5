//! Where a node's GPUs come from: NVML (the NVIDIA driver's management
//! library, loaded at run time by nvml-wrapper), or a fixed list (tests, and
//! `--num-gpus` without a driver).

/// One GPU of the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// Its index (the id tasks see in `get-gpu-ids`, as CUDA numbers it).
    pub index: u32,
    /// Product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Total memory in bytes.
    pub memory: u64,
}

/// A GPU as [`wray_api::NodeInfo`] lists it.
impl From<&GpuInfo> for wray_api::GpuSummary {
    fn from(g: &GpuInfo) -> Self {
        wray_api::GpuSummary {
            index: g.index,
            name: g.name.clone(),
            memory: g.memory,
        }
    }
}

impl GpuInfo {
    /// A made-up GPU `index` (for tests and `--num-gpus` beyond discovery).
    pub fn fake(index: u32) -> Self {
        GpuInfo {
            index,
            name: "unknown GPU".to_string(),
            memory: 0,
        }
    }
}

/// A source of the node's GPUs; injectable so that tests can pretend.
pub trait GpuDiscovery: Send + Sync {
    /// The GPUs found.
    ///
    /// # Errors
    /// Why none could be listed (no driver, no permission): the node then
    /// has zero GPUs and says why in one log line.
    fn discover(&self) -> Result<Vec<GpuInfo>, String>;
}

/// Discovery through NVML.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nvml;

impl GpuDiscovery for Nvml {
    fn discover(&self) -> Result<Vec<GpuInfo>, String> {
        let nvml = nvml_wrapper::Nvml::init().map_err(|e| format!("NVML unavailable: {e}"))?;
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML cannot count devices: {e}"))?;
        (0..count)
            .map(|index| {
                let device = nvml
                    .device_by_index(index)
                    .map_err(|e| format!("NVML cannot open GPU {index}: {e}"))?;
                Ok(GpuInfo {
                    index,
                    name: device.name().unwrap_or_else(|_| "unknown GPU".to_string()),
                    memory: device.memory_info().map_or(0, |m| m.total),
                })
            })
            .collect()
    }
}

/// A fixed list of GPUs.
#[derive(Debug, Clone, Default)]
pub struct StaticGpus(pub Vec<GpuInfo>);

impl StaticGpus {
    /// `n` made-up GPUs numbered from 0.
    pub fn count(n: u32) -> Self {
        StaticGpus((0..n).map(GpuInfo::fake).collect())
    }
}

impl GpuDiscovery for StaticGpus {
    fn discover(&self) -> Result<Vec<GpuInfo>, String> {
        Ok(self.0.clone())
    }
}

/// The node's GPUs: `num_gpus` of them when set (Ray's `--num-gpus`: the
/// first `num_gpus` discovered, padded with made-up ones when discovery
/// found fewer), else all that `source` finds; zero with one log line when
/// discovery fails.
pub fn node_gpus(source: &dyn GpuDiscovery, num_gpus: Option<u32>) -> Vec<GpuInfo> {
    let found = match source.discover() {
        Ok(gpus) => gpus,
        Err(why) => {
            if num_gpus.is_none() {
                tracing::info!("no GPUs: {why}");
            }
            Vec::new()
        }
    };
    match num_gpus {
        None => found,
        Some(n) => {
            let mut gpus: Vec<GpuInfo> = found.into_iter().take(n as usize).collect();
            for index in gpus.len() as u32..n {
                gpus.push(GpuInfo::fake(index));
            }
            gpus
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoDriver;
    impl GpuDiscovery for NoDriver {
        fn discover(&self) -> Result<Vec<GpuInfo>, String> {
            Err("no driver".into())
        }
    }

    #[test]
    fn num_gpus_overrides_what_is_discovered() {
        assert!(node_gpus(&NoDriver, None).is_empty());
        assert_eq!(node_gpus(&NoDriver, Some(2)).len(), 2);
        let two = StaticGpus(vec![
            GpuInfo {
                index: 0,
                name: "A".into(),
                memory: 1,
            },
            GpuInfo::fake(1),
        ]);
        assert_eq!(node_gpus(&two, None), two.0);
        assert_eq!(node_gpus(&two, Some(1))[0].name, "A");
        assert_eq!(node_gpus(&two, Some(0)).len(), 0);
    }

    #[test]
    fn nvml_without_a_driver_is_an_error_not_a_crash() {
        // On machines without the NVIDIA driver this is the no-GPU path; with
        // one, it lists real GPUs. Either way it returns.
        match Nvml.discover() {
            Ok(gpus) => assert!(gpus.iter().enumerate().all(|(i, g)| g.index as usize == i)),
            Err(why) => assert!(why.contains("NVML"), "{why}"),
        }
    }
}
