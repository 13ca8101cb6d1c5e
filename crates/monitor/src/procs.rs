//! A server's processes, found rather than guessed: a process and all its descendants (nginx's
//! master and workers, Apache's parent and children, a server started under a shell), or every
//! process holding the listening socket of a port (SO_REUSEPORT workers with a socket each,
//! pre-forked children sharing one), the CPU time of such a set over a run, and the CPUs
//! it may run on beside the generator's ([`cpus_beside_server`]).
//!
//! The listener is found through sock_diag (its inode, from the kernel's small listen table)
//! and `/proc/*/fd` (which processes hold `socket:[INODE]`), as `ss -p` does. Parents come
//! from `/proc/PID/stat`, read once per process per call: these functions run once per
//! measured run, not per sample.

use std::collections::{BTreeMap, BTreeSet};

use procfs::process::{Process, Stat};

use webscope_sys::cpus::{self, CpuList};

use crate::tcp::SockDiag;

/// A process seen in `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its PID.
    pub pid: u32,
    /// Its parent's PID.
    pub ppid: u32,
    /// Its command name (`comm`).
    pub comm: String,
}

fn info(stat: &Stat) -> ProcessInfo {
    ProcessInfo {
        pid: stat.pid as u32,
        ppid: stat.ppid as u32,
        comm: stat.comm.clone(),
    }
}

/// Every process now, by PID (processes that end while the table is read are left out).
fn table() -> BTreeMap<u32, ProcessInfo> {
    let Ok(all) = procfs::process::all_processes() else {
        return BTreeMap::new();
    };
    all.flatten()
        .filter_map(|p| p.stat().ok())
        .map(|s| (s.pid as u32, info(&s)))
        .collect()
}

/// The PIDs in `roots` and all their descendants, from `table`.
fn closure(table: &BTreeMap<u32, ProcessInfo>, roots: &[u32]) -> BTreeSet<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for p in table.values() {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut found = BTreeSet::new();
    let mut stack: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|p| table.contains_key(p))
        .collect();
    while let Some(pid) = stack.pop() {
        if found.insert(pid) {
            stack.extend(children.get(&pid).into_iter().flatten());
        }
    }
    found
}

/// `root` and every descendant (any depth), root first. Err if `root` does not exist.
pub fn descendants(root: u32) -> std::io::Result<Vec<ProcessInfo>> {
    let stat = Process::new(root as i32)
        .and_then(|p| p.stat())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string()))?;
    let table = table();
    let mut out = vec![info(&stat)];
    out.extend(
        closure(&table, &[root])
            .into_iter()
            .filter(|p| *p != root)
            .filter_map(|p| table.get(&p).cloned()),
    );
    Ok(out)
}

/// The set to measure: the given PIDs and all their descendants, without repeats, by PID.
pub fn tree(pids: &[u32]) -> Vec<ProcessInfo> {
    let table = table();
    closure(&table, pids)
        .into_iter()
        .filter_map(|p| table.get(&p).cloned())
        .collect()
}

/// The roots of `pids`: those whose parent is not among them (a worker of a listening master
/// is measured as the master's descendant, not twice).
pub fn roots(processes: &[ProcessInfo]) -> Vec<u32> {
    let pids: BTreeSet<u32> = processes.iter().map(|p| p.pid).collect();
    processes
        .iter()
        .filter(|p| !pids.contains(&p.ppid))
        .map(|p| p.pid)
        .collect()
}

/// Every process holding a listening socket of `port` (IPv4 or IPv6, any address). Err with
/// a one-line reason and its fix.
pub fn listeners(port: u16) -> Result<Vec<ProcessInfo>, String> {
    let inodes = SockDiag::open()
        .and_then(|mut d| d.listener_inodes(port))
        .map_err(|e| {
            format!("cannot list the sockets listening on port {port} (sock_diag: {e})")
        })?;
    if inodes.is_empty() {
        return Err(format!("no process listens on port {port} here"));
    }
    let links: BTreeSet<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut found = Vec::new();
    let mut unreadable = 0;
    let Ok(all) = procfs::process::all_processes() else {
        return Err("cannot read /proc".into());
    };
    for process in all.flatten() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", process.pid())) else {
            unreadable += 1;
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| links.contains(target.to_string_lossy().as_ref()))
        });
        if holds {
            if let Ok(stat) = process.stat() {
                found.push(info(&stat));
            }
        }
    }
    if found.is_empty() {
        return Err(format!(
            "port {port} listens, but its process is not visible ({unreadable} processes' descriptors unreadable): run as the server's user or root, or give --server-pid"
        ));
    }
    found.sort_by_key(|p| p.pid);
    Ok(found)
}

/// CPU seconds (user + system) used so far by `roots` and all their live descendants, with
/// the children they reaped (`cutime + cstime`), so that a child that exits between two
/// readings is not lost: its time moves into its parent's when the parent reaps it. Roots
/// that descend from other roots are counted once. None when no root exists.
pub fn tree_cpu_s(roots: &[u32]) -> Option<f64> {
    let table = table();
    let members = closure(&table, roots);
    if members.is_empty() {
        return None;
    }
    let ticks = procfs::ticks_per_second() as f64;
    let mut total = 0u64;
    for pid in &members {
        let Ok(stat) = Process::new(*pid as i32).and_then(|p| p.stat()) else {
            continue;
        };
        // A dead process's time sits in exactly one live process's cutime (its reaper's,
        // which holds its own reaped descendants too), and a live one's in nobody's: the sum
        // over the live members counts every process once.
        total += stat.utime + stat.stime + (stat.cutime.max(0) + stat.cstime.max(0)) as u64;
    }
    Some(total as f64 / ticks.max(1.0))
}

/// The summary line of `load --cpu` on the generator's CPUs beside the server's, for a server
/// on this machine (the URL's address is a loopback one): its processes are found by port
/// ([`listeners`]) and the CPUs each of their threads may use read from /proc. None where
/// they cannot be known (not on this machine, or its processes not visible).
pub fn cpus_beside_server(ours: &CpuList, addr: std::net::SocketAddr) -> Option<String> {
    if !addr.ip().is_loopback() {
        return None;
    }
    let servers = listeners(addr.port()).ok()?;
    let name = servers
        .iter()
        .map(|p| p.comm.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
        .join(", ");
    // Every thread of every process holding the socket: a server may pin its workers one by
    // one (nginx's worker_cpu_affinity) while its master floats.
    let mut theirs = BTreeSet::new();
    for p in &servers {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", p.pid)).ok()?;
        for task in tasks.flatten() {
            theirs.extend(cpus::allowed(&task.path().join("status"))?.0);
        }
    }
    let theirs = CpuList(theirs.into_iter().collect());
    let shared: Vec<usize> = ours
        .0
        .iter()
        .copied()
        .filter(|c| theirs.0.contains(c))
        .collect();
    let port = addr.port();
    Some(if shared.is_empty() {
        format!(
            "CPUs: the generator on {ours}, the server ({name}, port {port}) on {theirs}: apart"
        )
    } else {
        format!(
            "CPUs: the generator on {ours} shares {} with the server ({name}, port {port}, which may run on {theirs}): each may take CPU time from the other, so neither figure is clean; give them CPUs apart (--cpu, and taskset -c or nginx's worker_cpu_affinity for the server)",
            CpuList(shared),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, ppid: u32) -> ProcessInfo {
        ProcessInfo {
            pid,
            ppid,
            comm: format!("p{pid}"),
        }
    }

    #[test]
    fn closure_follows_every_generation_once() {
        let table: BTreeMap<u32, ProcessInfo> =
            [p(1, 0), p(10, 1), p(11, 10), p(12, 10), p(13, 12), p(20, 1)]
                .into_iter()
                .map(|p| (p.pid, p))
                .collect();
        assert_eq!(
            closure(&table, &[10]).into_iter().collect::<Vec<_>>(),
            [10, 11, 12, 13]
        );
        assert_eq!(
            closure(&table, &[12, 10]).len(),
            4,
            "a root under another counts once"
        );
        assert!(closure(&table, &[99]).is_empty());
        let procs = [p(10, 1), p(11, 10), p(12, 10), p(30, 2)];
        assert_eq!(roots(&procs), [10, 30]);
    }

    #[test]
    fn this_process_is_found_with_its_children() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let found = descendants(me).unwrap();
        assert_eq!(found[0].pid, me);
        assert!(found
            .iter()
            .any(|p| p.pid == child.id() && p.comm == "sleep"));
        assert!(tree(&[me]).iter().any(|p| p.pid == child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(descendants(u32::MAX - 1).is_err());
    }

    #[test]
    fn the_holders_of_a_listening_socket_are_found_by_its_port() {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let fd = listener.as_raw_fd();
        // A pre-forked child shares the socket, as Apache's do.
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("5");
        // SAFETY: clearing FD_CLOEXEC on an open descriptor in the child before exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        let found = listeners(port);
        let _ = child.kill();
        let _ = child.wait();
        let pids: Vec<u32> = found.unwrap().iter().map(|p| p.pid).collect();
        assert!(
            pids.contains(&std::process::id()) && pids.contains(&child.id()),
            "{pids:?}"
        );
        drop(listener);
        let none = listeners(port).unwrap_err();
        assert!(
            none.contains(&format!("no process listens on port {port}")),
            "{none}"
        );
    }

    #[test]
    fn a_reaped_childs_cpu_stays_in_the_tree() {
        // The shell's child burns CPU and exits; the shell reaps it and sleeps.
        let mut shell = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; exec sleep 5",
            ])
            .spawn()
            .unwrap();
        let root = shell.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        // Wait until the root is the sleep (the busy child is over and reaped).
        while Process::new(root as i32)
            .and_then(|p| p.stat())
            .map(|s| s.comm)
            .unwrap_or_default()
            != "sleep"
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the busy child never ended"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let cpu = tree_cpu_s(&[root]).unwrap();
        let _ = shell.kill();
        let _ = shell.wait();
        assert!(cpu >= 0.05, "the reaped child's CPU is lost: {cpu} s");
        assert_eq!(tree_cpu_s(&[u32::MAX - 1]), None);
    }
}
