//! The network of a `sim chaos` run. Loopback: every broker on 127.0.0.1, no network faults.
//! Namespaces (root only, with `ip` and `tc`): each broker in a network namespace of its own,
//! joined by a veth pair to one bridge in the harness's namespace, so a broker's traffic can be
//! cut — all of it, or one direction — while its process runs on:
//!
//! * `isolate`: nothing in or out; `isolate_in`: nothing reaches it; `isolate_out`: nothing
//!   leaves it. Each direction is a token-bucket qdisc whose burst is smaller than any packet
//!   on that direction's veth end (the bridge side for what the broker receives, its own side
//!   for what it sends), so the kernel drops every packet; removing the qdisc heals it. This
//!   kernel has neither netem nor tc actions, so delays, loss rates and per-link cuts
//!   (`slow_link`, `clog_link`) are not available and are skipped.
//!
//! Names carry the harness's pid, and every namespace and the bridge are deleted when the run
//! ends or is interrupted ([`cleanup_all`]); those of a harness that died without cleaning up
//! (SIGKILL'd) are deleted by the next run that makes namespaces ([`cleanup_stale`]). Each run
//! takes a subnet no other bridge on the machine has.

use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;
use std::sync::Mutex;

/// Port every broker listens on inside its namespace.
pub const namespaced_port: u16 = 9092;

/// The runs' namespace sets not yet deleted, by tag: what an interrupted run deletes.
static live: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());

/// Which way a cut goes, from the broker's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    In,
    Out,
}

/// The run's network.
pub enum Net {
    Loopback,
    Namespaces(Namespaces),
}

/// One namespace per broker and the bridge joining them.
pub struct Namespaces {
    tag: String,
    subnet: u8,
    brokers: usize,
}

impl Net {
    /// Namespaces when `namespaces` is asked for (failing with the reason when they cannot be
    /// made), else loopback.
    pub fn new(namespaces: bool, brokers: usize) -> Result<Net, String> {
        match namespaces {
            true => Namespaces::create(brokers).map(Net::Namespaces),
            false => Ok(Net::Loopback),
        }
    }

    /// Broker `i`'s address, when fixed by the network (loopback ports are picked free).
    pub fn addr(&self, i: usize) -> Option<IpAddr> {
        match self {
            Net::Loopback => None,
            Net::Namespaces(n) => Some(n.addr(i)),
        }
    }

    /// The command that runs `bin` as broker `i`: as is, or inside its namespace.
    pub fn command(&self, i: usize, bin: &std::path::Path) -> Command {
        match self {
            Net::Loopback => Command::new(bin),
            Net::Namespaces(n) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &n.ns(i)]).arg(bin);
                c
            }
        }
    }

    /// Cuts broker `i`'s traffic one way (`heal`: lets it through again).
    pub fn cut(&self, i: usize, way: Way, heal: bool) -> Result<(), String> {
        let Net::Namespaces(n) = self else { return Err("loopback processes have no network of their own to cut (run as root with --net namespaces)".into()) };
        let (host, peer, ns) = (n.host(i), n.peer(i), n.ns(i));
        // What the broker receives leaves the bridge side's end; what it sends, its own.
        let mut args: Vec<&str> = match way {
            Way::In => vec![],
            Way::Out => vec!["-n", &ns],
        };
        let dev = if way == Way::In { &host } else { &peer };
        match heal {
            false => args.extend(["qdisc", "replace", "dev", dev, "root", "tbf", "rate", "8bit", "burst", "1", "latency", "1ms"]),
            true => args.extend(["qdisc", "del", "dev", dev, "root"]),
        }
        run("tc", &args)
    }
}

impl Namespaces {
    fn create(brokers: usize) -> Result<Namespaces, String> {
        // SAFETY: geteuid(2) takes nothing and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("--net namespaces needs root (ip netns, veth, a bridge)".into());
        }
        cleanup_stale();
        let pid = std::process::id();
        let subnet = free_subnet(pid)?;
        let n = Namespaces { tag: format!("sl{pid}"), subnet, brokers };
        live.lock().unwrap_or_else(|p| p.into_inner()).push((n.tag.clone(), brokers));
        n.build().inspect_err(|_| cleanup(&n.tag, brokers))?;
        Ok(n)
    }

    fn build(&self) -> Result<(), String> {
        let bridge = self.bridge();
        run("ip", &["link", "add", &bridge, "type", "bridge"])?;
        run("ip", &["addr", "add", &format!("10.77.{}.254/24", self.subnet), "dev", &bridge])?;
        run("ip", &["link", "set", &bridge, "up"])?;
        for i in 0..self.brokers {
            let (ns, host, peer) = (self.ns(i), self.host(i), self.peer(i));
            run("ip", &["netns", "add", &ns])?;
            run("ip", &["link", "add", &host, "type", "veth", "peer", "name", &peer])?;
            run("ip", &["link", "set", &peer, "netns", &ns])?;
            run("ip", &["link", "set", &host, "master", &bridge])?;
            run("ip", &["link", "set", &host, "up"])?;
            run("ip", &["-n", &ns, "addr", "add", &format!("{}/24", self.addr(i)), "dev", &peer])?;
            run("ip", &["-n", &ns, "link", "set", &peer, "up"])?;
            run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn addr(&self, i: usize) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 77, self.subnet, u8::try_from(i + 1).unwrap_or(250)))
    }
    fn ns(&self, i: usize) -> String {
        format!("{}n{i}", self.tag)
    }
    fn host(&self, i: usize) -> String {
        format!("{}h{i}", self.tag)
    }
    fn peer(&self, i: usize) -> String {
        format!("{}p{i}", self.tag)
    }
    fn bridge(&self) -> String {
        format!("{}b", self.tag)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        cleanup(&self.tag, self.brokers);
        live.lock().unwrap_or_else(|p| p.into_inner()).retain(|(t, _)| *t != self.tag);
    }
}

/// Deletes every namespace set not yet deleted: for an interrupted run.
pub fn cleanup_all() {
    for (tag, brokers) in std::mem::take(&mut *live.lock().unwrap_or_else(|p| p.into_inner())) {
        cleanup(&tag, brokers);
    }
}

/// Deletes a set's namespaces (their veth pairs go with them) and its bridge, whatever exists.
fn cleanup(tag: &str, brokers: usize) {
    for i in 0..brokers {
        let _ = run("ip", &["netns", "del", &format!("{tag}n{i}")]);
        let _ = run("ip", &["link", "del", &format!("{tag}h{i}")]);
    }
    let _ = run("ip", &["link", "del", &format!("{tag}b")]);
}

/// Deletes the namespaces and bridges of runs whose harness process is gone.
fn cleanup_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    let mut stale: std::collections::BTreeMap<u32, usize> = Default::default();
    for name in String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().next()) {
        // sl<pid>n<i>
        let Some((pid, i)) = name.strip_prefix("sl").and_then(|r| r.split_once('n')) else { continue };
        let (Ok(pid), Ok(i)) = (pid.parse::<u32>(), i.parse::<usize>()) else { continue };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let most = stale.entry(pid).or_default();
            *most = (*most).max(i + 1);
        }
    }
    for (pid, brokers) in stale {
        cleanup(&format!("sl{pid}"), brokers);
    }
}

/// A 10.77.X.0/24 no interface here has an address in, starting from one the pid picks.
fn free_subnet(pid: u32) -> Result<u8, String> {
    let out = Command::new("ip").args(["-o", "-4", "addr", "show"]).output().map_err(|e| format!("ip: {e}"))?;
    let taken = String::from_utf8_lossy(&out.stdout).into_owned();
    (0..250u32).map(|k| ((pid + k) % 250 + 1) as u8).find(|x| !taken.contains(&format!(" 10.77.{x}."))).ok_or_else(|| "no free 10.77.X.0/24 subnet for the brokers' bridge".to_string())
}

fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd).args(args).output().map_err(|e| format!("{cmd}: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!("{cmd} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())),
    }
}
