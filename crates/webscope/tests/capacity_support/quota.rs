//! A CPU quota for one process (a cgroup of its own, v2 or v1's `cpu` controller): a generator
//! that runs out of CPU by itself. Two spinning neighbours on its CPU do not do that any
//! more: since the search counts a generator that fell behind while others took its CPU as
//! disturbed (not as the generator's end), they only ever ended the search "disturbed",
//! after two 30 s waits for a quiet machine that could not come. Throttled time is nobody's:
//! the generator's CPU stays idle, not others'.

use std::path::{Path, PathBuf};

/// A cgroup that holds its processes to `quota` of one CPU; removed on drop (after the
/// process in it has ended).
pub struct CpuQuota {
    dir: PathBuf,
}

/// The period the quota is counted over: short, so that a throttled generator stalls for a
/// few milliseconds at a time rather than for most of a 100 ms period.
const PERIOD_US: u64 = 20_000;

impl CpuQuota {
    /// A cgroup of `share` of one CPU, or why there is none (not root, no cpu controller).
    pub fn new(share: f64) -> Result<CpuQuota, String> {
        let quota_us = ((share * PERIOD_US as f64) as u64).max(1_000);
        let name = format!(
            "webscope-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let v2 = Path::new("/sys/fs/cgroup");
        if v2.join("cgroup.controllers").exists() {
            // cgroup v2 alone: the cpu controller turned on for the root's children.
            std::fs::write(v2.join("cgroup.subtree_control"), "+cpu")
                .map_err(|e| format!("cannot turn on cgroup v2's cpu controller: {e}"))?;
            let dir = v2.join(name);
            std::fs::create_dir(&dir).map_err(|e| format!("cannot make a cgroup: {e}"))?;
            let group = CpuQuota { dir };
            std::fs::write(group.dir.join("cpu.max"), format!("{quota_us} {PERIOD_US}"))
                .map_err(|e| format!("cannot set cpu.max: {e}"))?;
            return Ok(group);
        }
        // Hybrid or v1 hierarchy: the cpu controller's own mount.
        let v1 = ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"]
            .iter()
            .map(Path::new)
            .find(|p| p.join("cpu.cfs_quota_us").exists())
            .ok_or("no cgroup cpu controller (neither v2 nor v1's cpu.cfs_quota_us)")?;
        let dir = v1.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make a cgroup: {e}"))?;
        let group = CpuQuota { dir };
        for (file, value) in [
            ("cpu.cfs_period_us", PERIOD_US),
            ("cpu.cfs_quota_us", quota_us),
        ] {
            std::fs::write(group.dir.join(file), value.to_string())
                .map_err(|e| format!("cannot set {file}: {e}"))?;
        }
        Ok(group)
    }

    /// Moves process `pid` (every thread of it) into the cgroup.
    pub fn add(&self, pid: u32) -> Result<(), String> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cannot move {pid} into {}: {e}", self.dir.display()))
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        // Empty once its process has ended (the caller waited for it); a cgroup is removed
        // with rmdir, its files with it.
        let _ = std::fs::remove_dir(&self.dir);
    }
}
