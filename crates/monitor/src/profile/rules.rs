//! The rules that put kernel functions into Yates et al.'s categories (their Figure 3), brought
//! up to date: data, not code, so a rule is one line and each is tested on recorded samples.
//!
//! A sample is decided by the kernel frame nearest the leaf that some rule matches: helpers
//! with no rule (`memcpy`, spin locks, slab allocation, `skb_*`) count for whoever called
//! them. For one function the first matching rule wins, which is why the timer rules come
//! before the TCP ones (`tcp_write_timer` is timer management, `tcp_sendmsg` is not). Idle
//! rules match only the leaf: `do_idle` deep in an interrupt's stack is not idleness.

use serde::{Deserialize, Serialize};

/// Where a CPU's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Device and loopback transmit and receive, NAPI, queueing disciplines (the paper's
    /// "Ethernet interrupt and device driver routines").
    NetLow,
    /// TCP, IP, the socket layer and its system calls.
    NetHigh,
    /// The block layer and disk drivers.
    FsLow,
    /// VFS, the page cache, file systems, path lookup, sendfile and splice.
    FsHigh,
    /// Timers: timer wheel and hrtimers, ticks, TCP's timers and TIME_WAIT sockets.
    Timers,
    /// The scheduler: switching, waking, picking, load balancing.
    Scheduler,
    /// Every other kernel function: system call entry, interrupts, memory management, and
    /// the monitor's own reading of /proc and sock_diag.
    KernelOther,
    /// User space of the watched processes (`--pid`).
    UserServer,
    /// User space of every other process.
    UserOther,
    /// Idle CPUs.
    Idle,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 10] = [
        Category::NetLow,
        Category::NetHigh,
        Category::FsLow,
        Category::FsHigh,
        Category::Timers,
        Category::Scheduler,
        Category::KernelOther,
        Category::UserServer,
        Category::UserOther,
        Category::Idle,
    ];

    /// Its name in files (`net_low`, `timers`...).
    pub fn name(self) -> &'static str {
        match self {
            Category::NetLow => "net_low",
            Category::NetHigh => "net_high",
            Category::FsLow => "fs_low",
            Category::FsHigh => "fs_high",
            Category::Timers => "timers",
            Category::Scheduler => "scheduler",
            Category::KernelOther => "kernel_other",
            Category::UserServer => "user_server",
            Category::UserOther => "user_other",
            Category::Idle => "idle",
        }
    }

    /// Whether it is kernel time (the base of the paper's percentages).
    pub fn is_kernel(self) -> bool {
        !matches!(
            self,
            Category::UserServer | Category::UserOther | Category::Idle
        )
    }
}

/// How a rule's pattern matches a function name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The name starts with the pattern.
    Prefix,
    /// The name is the pattern.
    Exact,
    /// The name contains the pattern.
    Contains,
}

/// One rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// What to look for in a function's name.
    pub pattern: &'static str,
    /// How.
    pub how: Match,
    /// Where a match puts the sample.
    pub category: Category,
    /// Only when the function is the sample's leaf (where the CPU was).
    pub leaf_only: bool,
    /// For what the recording machine of the tests does not have (other idle drivers, NICs,
    /// disks, file systems, queueing disciplines): tested on synthetic samples rather than
    /// recorded ones.
    pub synthetic: bool,
}

impl Rule {
    /// Whether the rule matches `symbol`.
    pub fn matches(&self, symbol: &str) -> bool {
        // perf may add ".isra.0", ".constprop.0", ".cold" to compiler-made copies.
        let name = symbol.split('.').next().unwrap_or(symbol);
        match self.how {
            Match::Prefix => name.starts_with(self.pattern),
            Match::Exact => name == self.pattern,
            Match::Contains => name.contains(self.pattern),
        }
    }
}

const fn rule(pattern: &'static str, how: Match, category: Category) -> Rule {
    Rule {
        pattern,
        how,
        category,
        leaf_only: false,
        synthetic: false,
    }
}

const fn idle(pattern: &'static str, synthetic: bool) -> Rule {
    Rule {
        pattern,
        how: Match::Prefix,
        category: Category::Idle,
        leaf_only: true,
        synthetic,
    }
}

const fn synthetic(pattern: &'static str, category: Category) -> Rule {
    Rule {
        pattern,
        how: Match::Prefix,
        category,
        leaf_only: false,
        synthetic: true,
    }
}

use Category::*;
use Match::*;

/// The rules, in the order they are tried on each function.
///
/// Only functions a `cpu-clock` profile can land in are worth a rule: that clock is an
/// hrtimer, so it never samples code running with interrupts off (the scheduler's core,
/// the timer interrupt itself); such code shows up where interrupts come back on
/// (`finish_task_switch`, `_raw_spin_unlock_irqrestore` under `try_to_wake_up`).
pub static RULES: &[Rule] = &[
    // Idle: the CPU halted or polling in the idle loop (leaf only).
    idle("pv_native_safe_halt", false),
    idle("do_idle", false),
    idle("native_safe_halt", true),
    idle("default_idle", false),
    idle("acpi_safe_halt", true),
    idle("acpi_idle", true),
    idle("intel_idle", true),
    idle("mwait_idle", true),
    idle("poll_idle", true),
    idle("cpu_idle_poll", true),
    // Timers, before TCP: the timer wheel, hrtimers, the tick, TCP's timers and TIME_WAIT
    // sockets (whose 60 s wait is a timer: Yates et al.'s main finding).
    rule("timer", Contains, Timers),
    rule("inet_twsk_", Prefix, Timers),
    rule("tick_", Prefix, Timers),
    // The monitor's own socket-table walks and netlink: not the server's networking.
    rule("tcp_diag_", Prefix, KernelOther),
    rule("inet_diag_", Prefix, KernelOther),
    rule("netlink_recvmsg", Exact, KernelOther),
    // Reading /proc (the monitor's other work): not file-system work either.
    rule("seq_read", Prefix, KernelOther),
    // Low-level networking: devices, loopback, NAPI, queueing disciplines.
    rule("net_rx_action", Exact, NetLow),
    rule("__napi_poll", Exact, NetLow),
    rule("process_backlog", Exact, NetLow),
    rule("__netif_receive_skb", Prefix, NetLow),
    rule("netif_rx", Prefix, NetLow),
    rule("__netif_rx", Prefix, NetLow),
    rule("enqueue_to_backlog", Exact, NetLow),
    rule("__dev_queue_xmit", Exact, NetLow),
    rule("dev_hard_start_xmit", Exact, NetLow),
    rule("loopback_xmit", Exact, NetLow),
    rule("validate_xmit_skb", Prefix, NetLow),
    rule("eth_type_trans", Exact, NetLow),
    synthetic("net_tx_action", NetLow),
    synthetic("netif_receive_skb", NetLow),
    synthetic("napi_gro_", NetLow),
    synthetic("sch_direct_xmit", NetLow),
    synthetic("__qdisc_run", NetLow),
    synthetic("virtnet_", NetLow),
    synthetic("e1000", NetLow),
    synthetic("igb_", NetLow),
    synthetic("ixgbe_", NetLow),
    synthetic("i40e_", NetLow),
    synthetic("mlx5e_", NetLow),
    synthetic("ena_", NetLow),
    synthetic("veth_", NetLow),
    // Low-level file system: block layer and disk drivers.
    rule("blk_", Prefix, FsLow),
    rule("__blk_", Prefix, FsLow),
    rule("bio_", Prefix, FsLow),
    rule("submit_bio", Prefix, FsLow),
    rule("virtio_queue_rq", Exact, FsLow),
    synthetic("virtblk_", FsLow),
    synthetic("nvme_", FsLow),
    synthetic("scsi_", FsLow),
    synthetic("ata_", FsLow),
    synthetic("ahci_", FsLow),
    synthetic("dm_", FsLow),
    // High-level file system: VFS, page cache, file systems, lookup, sendfile.
    rule("vfs_", Prefix, FsHigh),
    rule("filemap_", Prefix, FsHigh),
    rule("generic_perform_write", Exact, FsHigh),
    rule("ext4_", Prefix, FsHigh),
    rule("shmem_", Prefix, FsHigh),
    rule("do_sys_open", Prefix, FsHigh),
    rule("do_filp_open", Exact, FsHigh),
    rule("path_", Prefix, FsHigh),
    rule("link_path_walk", Exact, FsHigh),
    rule("walk_component", Exact, FsHigh),
    rule("__d_lookup", Prefix, FsHigh),
    rule("do_sendfile", Exact, FsHigh),
    rule("splice_", Prefix, FsHigh),
    rule("do_splice", Prefix, FsHigh),
    rule("touch_atime", Exact, FsHigh),
    synthetic("jbd2_", FsHigh),
    synthetic("xfs_", FsHigh),
    synthetic("btrfs_", FsHigh),
    synthetic("ovl_", FsHigh),
    // High-level networking: TCP, UDP, IP, sockets.
    rule("tcp_", Prefix, NetHigh),
    rule("__tcp_", Prefix, NetHigh),
    rule("tcp4_", Prefix, NetHigh),
    rule("inet_", Prefix, NetHigh),
    rule("__inet_", Prefix, NetHigh),
    rule("inet6_", Prefix, NetHigh),
    rule("ip_", Prefix, NetHigh),
    rule("__ip_", Prefix, NetHigh),
    rule("ip6_", Prefix, NetHigh),
    rule("sock_", Prefix, NetHigh),
    rule("__sock_", Prefix, NetHigh),
    rule("sk_", Prefix, NetHigh),
    rule("__sk_", Prefix, NetHigh),
    rule("lock_sock", Prefix, NetHigh),
    rule("release_sock", Exact, NetHigh),
    rule("__sys_send", Prefix, NetHigh),
    rule("__sys_recv", Prefix, NetHigh),
    rule("__sys_accept", Prefix, NetHigh),
    rule("__sys_connect", Exact, NetHigh),
    rule("__sys_socket", Exact, NetHigh),
    rule("do_accept", Exact, NetHigh),
    rule("nf_", Prefix, NetHigh),
    rule("dst_", Prefix, NetHigh),
    rule("fib_", Prefix, NetHigh),
    rule("udp_", Prefix, NetHigh),
    // The scheduler.
    rule("schedule", Exact, Scheduler),
    rule("__schedule", Exact, Scheduler),
    rule("schedule_", Prefix, Scheduler),
    rule("finish_task_switch", Exact, Scheduler),
    rule("try_to_wake_up", Exact, Scheduler),
    rule("wake_up_", Prefix, Scheduler),
    rule("__wake_up", Prefix, Scheduler),
    rule("sched_", Prefix, Scheduler),
];

/// The category of one function name, by the first rule that matches it (`leaf` says
/// whether it is the sample's leaf, for idle rules).
pub fn categorise(symbol: &str, leaf: bool) -> Option<(usize, Category)> {
    RULES
        .iter()
        .enumerate()
        .find(|(_, r)| (leaf || !r.leaf_only) && r.matches(symbol))
        .map(|(i, r)| (i, r.category))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_win_over_tcp_and_twsk_is_timer_work() {
        assert_eq!(
            categorise("tcp_write_timer_handler", false).unwrap().1,
            Timers
        );
        assert_eq!(categorise("inet_twsk_kill", false).unwrap().1, Timers);
        assert_eq!(categorise("tcp_v4_rcv", false).unwrap().1, NetHigh);
        assert_eq!(categorise("tcp_sendmsg_locked", false).unwrap().1, NetHigh);
    }

    #[test]
    fn idle_is_only_the_leaf_and_compiler_suffixes_are_ignored() {
        assert_eq!(categorise("pv_native_safe_halt", true).unwrap().1, Idle);
        assert_eq!(categorise("do_idle", false), None);
        assert_eq!(
            categorise("do_execveat_common.isra.0", false),
            None,
            "no rule for exec"
        );
        assert_eq!(
            categorise("ip_finish_output2.constprop.0", false)
                .unwrap()
                .1,
            NetHigh
        );
    }

    #[test]
    fn prefixes_do_not_swallow_unrelated_names() {
        for name in [
            "_raw_spin_lock",
            "memcpy_orig",
            "skb_release_data",
            "kmem_cache_alloc",
            "do_syscall_64",
        ] {
            assert_eq!(categorise(name, true), None, "{name}");
        }
    }

    #[test]
    fn every_category_but_the_user_ones_has_a_rule() {
        for c in Category::ALL {
            let has = RULES.iter().any(|r| r.category == c);
            assert_eq!(has, !matches!(c, UserServer | UserOther), "{c:?}");
        }
    }

    #[test]
    fn the_monitors_own_work_is_not_counted_as_the_servers() {
        assert_eq!(categorise("tcp_diag_dump", false).unwrap().1, KernelOther);
        assert_eq!(
            categorise("inet_diag_dump_compat", false).unwrap().1,
            KernelOther
        );
        assert_eq!(categorise("netlink_recvmsg", false).unwrap().1, KernelOther);
        assert_eq!(categorise("seq_read_iter", false).unwrap().1, KernelOther);
        assert_eq!(categorise("netlink_has_listeners", false), None);
    }
}
