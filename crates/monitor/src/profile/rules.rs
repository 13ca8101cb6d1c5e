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
    /// Every other kernel function (system call entry, interrupts, memory management...).
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
    /// For hardware this machine may not have (NIC and disk drivers): tested on synthetic
    /// samples rather than recorded ones.
    pub hardware: bool,
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
        hardware: false,
    }
}

const fn idle(pattern: &'static str) -> Rule {
    Rule {
        pattern,
        how: Match::Prefix,
        category: Category::Idle,
        leaf_only: true,
        hardware: false,
    }
}

const fn hw(pattern: &'static str, category: Category) -> Rule {
    Rule {
        pattern,
        how: Match::Prefix,
        category,
        leaf_only: false,
        hardware: true,
    }
}

use Category::*;
use Match::*;

/// The rules, in the order they are tried on each function.
pub static RULES: &[Rule] = &[
    // Idle: the CPU halted or polling in the idle loop (leaf only).
    idle("pv_native_safe_halt"),
    idle("native_safe_halt"),
    idle("default_idle"),
    idle("acpi_safe_halt"),
    idle("acpi_idle"),
    idle("intel_idle"),
    idle("mwait_idle"),
    idle("poll_idle"),
    idle("cpu_idle_poll"),
    idle("do_idle"),
    // Timers, before TCP: the timer wheel, hrtimers, ticks, TCP's timers, TIME_WAIT.
    rule("timer", Contains, Timers),
    rule("inet_twsk_", Prefix, Timers),
    rule("tick_", Prefix, Timers),
    rule("clockevents_", Prefix, Timers),
    rule("lapic_next_", Prefix, Timers),
    rule("update_process_times", Exact, Timers),
    rule("ktime_get", Prefix, Timers),
    // Low-level networking: devices, loopback, NAPI, qdiscs.
    rule("net_rx_action", Exact, NetLow),
    rule("net_tx_action", Exact, NetLow),
    rule("__napi_poll", Exact, NetLow),
    rule("napi_", Prefix, NetLow),
    rule("process_backlog", Exact, NetLow),
    rule("__netif_receive_skb", Prefix, NetLow),
    rule("netif_receive_skb", Prefix, NetLow),
    rule("netif_rx", Prefix, NetLow),
    rule("__netif_rx", Prefix, NetLow),
    rule("enqueue_to_backlog", Exact, NetLow),
    rule("__dev_queue_xmit", Exact, NetLow),
    rule("dev_hard_start_xmit", Exact, NetLow),
    rule("loopback_xmit", Exact, NetLow),
    rule("sch_direct_xmit", Exact, NetLow),
    rule("__qdisc_run", Exact, NetLow),
    rule("validate_xmit_skb", Prefix, NetLow),
    rule("eth_type_trans", Exact, NetLow),
    hw("virtnet_", NetLow),
    hw("e1000", NetLow),
    hw("igb_", NetLow),
    hw("ixgbe_", NetLow),
    hw("i40e_", NetLow),
    hw("mlx5e_", NetLow),
    hw("ena_", NetLow),
    hw("veth_", NetLow),
    // Low-level file system: block layer and disk drivers.
    rule("blk_", Prefix, FsLow),
    rule("__blk_", Prefix, FsLow),
    rule("bio_", Prefix, FsLow),
    rule("submit_bio", Prefix, FsLow),
    rule("virtio_queue_rq", Exact, FsLow),
    rule("virtblk_", Prefix, FsLow),
    hw("nvme_", FsLow),
    hw("scsi_", FsLow),
    hw("ata_", FsLow),
    hw("ahci_", FsLow),
    hw("dm_", FsLow),
    // High-level file system: VFS, page cache, file systems, lookup, sendfile.
    rule("vfs_", Prefix, FsHigh),
    rule("filemap_", Prefix, FsHigh),
    rule("generic_file_", Prefix, FsHigh),
    rule("generic_perform_write", Exact, FsHigh),
    rule("ext4_", Prefix, FsHigh),
    rule("jbd2_", Prefix, FsHigh),
    rule("xfs_", Prefix, FsHigh),
    rule("btrfs_", Prefix, FsHigh),
    rule("ovl_", Prefix, FsHigh),
    rule("shmem_", Prefix, FsHigh),
    rule("iomap_", Prefix, FsHigh),
    rule("do_sys_open", Prefix, FsHigh),
    rule("do_filp_open", Exact, FsHigh),
    rule("path_", Prefix, FsHigh),
    rule("link_path_walk", Exact, FsHigh),
    rule("walk_component", Exact, FsHigh),
    rule("__d_lookup", Prefix, FsHigh),
    rule("d_alloc", Prefix, FsHigh),
    rule("do_sendfile", Exact, FsHigh),
    rule("splice_", Prefix, FsHigh),
    rule("do_splice", Prefix, FsHigh),
    rule("touch_atime", Exact, FsHigh),
    // High-level networking: TCP, IP, sockets.
    rule("tcp_", Prefix, NetHigh),
    rule("__tcp_", Prefix, NetHigh),
    rule("tcp4_", Prefix, NetHigh),
    rule("inet_", Prefix, NetHigh),
    rule("__inet_", Prefix, NetHigh),
    rule("inet6_", Prefix, NetHigh),
    rule("ip_", Prefix, NetHigh),
    rule("__ip_", Prefix, NetHigh),
    rule("ip6_", Prefix, NetHigh),
    rule("ipv6_", Prefix, NetHigh),
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
    rule("__sys_shutdown", Exact, NetHigh),
    rule("__sys_socket", Exact, NetHigh),
    rule("__sys_setsockopt", Exact, NetHigh),
    rule("do_accept", Exact, NetHigh),
    rule("nf_", Prefix, NetHigh),
    rule("dst_", Prefix, NetHigh),
    rule("fib_", Prefix, NetHigh),
    rule("udp_", Prefix, NetHigh),
    rule("netlink_", Prefix, NetHigh),
    // The scheduler.
    rule("schedule", Exact, Scheduler),
    rule("__schedule", Exact, Scheduler),
    rule("schedule_", Prefix, Scheduler),
    rule("pick_next_", Prefix, Scheduler),
    rule("enqueue_task", Prefix, Scheduler),
    rule("dequeue_task", Prefix, Scheduler),
    rule("enqueue_entity", Exact, Scheduler),
    rule("dequeue_entity", Exact, Scheduler),
    rule("update_curr", Prefix, Scheduler),
    rule("update_load_avg", Exact, Scheduler),
    rule("try_to_wake_up", Exact, Scheduler),
    rule("wake_up_", Prefix, Scheduler),
    rule("__wake_up", Prefix, Scheduler),
    rule("ttwu_", Prefix, Scheduler),
    rule("finish_task_switch", Exact, Scheduler),
    rule("__switch_to", Prefix, Scheduler),
    rule("switch_mm", Prefix, Scheduler),
    rule("select_task_rq", Prefix, Scheduler),
    rule("sched_", Prefix, Scheduler),
    rule("psi_", Prefix, Scheduler),
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
            assert_eq!(
                has,
                !matches!(c, UserServer | UserOther | KernelOther),
                "{c:?}"
            );
        }
    }
}
