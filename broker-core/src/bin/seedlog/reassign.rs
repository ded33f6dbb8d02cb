//! `seedlog reassign` and `seedlog brokers`: moving replicas between brokers of a running
//! cluster, like kafka-reassign-partitions.sh (`generate`, `execute`, `verify`, `cancel`, with
//! Kafka's plan JSON) and kafka-cluster.sh's `unregister`. The plan is
//! `broker_core::client::plan`'s, the requests `client::placement`'s; this file parses the
//! operator's arguments and formats the answers with pure functions, unit-tested below.

use broker_core::client::placement::{self, Answer, Ongoing};
use broker_core::client::plan::{self, Assignment, PlanFile};
use clap::Subcommand;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum ReassignCmd {
    /// Propose a plan for `--topics`: over `--brokers` (default: every live broker, which
    /// balances them), or off `--remove-broker`. Prints the current assignment (keep it to roll
    /// back) and the proposed one; `--output` also writes the proposal to a file for `execute`.
    Generate {
        /// Topics to move, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        topics: Vec<String>,
        /// Brokers the replicas may be on, comma-separated ids.
        #[arg(long, value_delimiter = ',', conflicts_with = "remove_broker")]
        brokers: Vec<i32>,
        /// Move every replica off these brokers (onto the other live ones).
        #[arg(long, value_delimiter = ',')]
        remove_broker: Vec<i32>,
        /// Racks, as `ID:RACK` pairs, comma-separated: a partition's replicas go to distinct
        /// racks where there are as many racks as replicas.
        #[arg(long, value_delimiter = ',')]
        broker_rack: Vec<String>,
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Start the moves a plan file asks for (AlterPartitionReassignments). Exits 1 if any
    /// partition was refused. With `--throttle`, catching up is held to that many bytes per
    /// second (KIP-73, as kafka-reassign-partitions.sh sets it: the brokers' replication rates
    /// and the moving partitions' throttled replicas); run it again to change the rate.
    Execute {
        #[arg(long)]
        plan: PathBuf,
        #[arg(long)]
        throttle: Option<u64>,
    },
    /// Whether each move of a plan is complete: exits 0 only when every one is, and then removes
    /// the throttle `execute --throttle` set.
    Verify {
        #[arg(long)]
        plan: PathBuf,
    },
    /// Stop the moves of a plan that are still in progress: each partition goes back to its
    /// replicas before the move.
    Cancel {
        #[arg(long)]
        plan: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum BrokersCmd {
    /// Remove a decommissioned broker's registration (stop it first: a running broker
    /// registers again). Its replicas stay assigned, offline, until reassigned.
    Unregister { id: i32 },
}

type Res = Result<(), Box<dyn std::error::Error>>;

pub fn reassign(bootstrap: &str, timeout: Duration, cmd: ReassignCmd) -> Res {
    let addr = resolve(bootstrap)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        match cmd {
            ReassignCmd::Generate { topics, brokers, remove_broker, broker_rack, output } => {
                let racks = parse_racks(&broker_rack)?;
                let (current, live) = placement::assignment(addr, Some(&topics), timeout).await.map_err(crate::error_text)?;
                let over: Vec<i32> = match brokers.is_empty() {
                    false => brokers,
                    true => live.into_iter().filter(|b| !remove_broker.contains(b)).collect(),
                };
                let proposed = plan::plan(&current, &over, &racks)?;
                print!("{}", render_generate(&current, &proposed)?);
                if let Some(path) = output {
                    std::fs::write(&path, serde_json::to_string(&PlanFile::from_assignment(&proposed))?)?;
                    eprintln!("wrote the proposal to {}", path.display());
                }
                Ok(())
            }
            ReassignCmd::Execute { plan, throttle } => {
                let plan = read_plan(&plan)?;
                if let Some(rate) = throttle {
                    let topics: Vec<String> = plan.partitions.iter().map(|p| p.topic.clone()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
                    let (current, _) = placement::assignment(addr, Some(&topics), timeout).await.map_err(crate::error_text)?;
                    placement::alter_configs(addr, &throttle_changes(&current, &plan.assignment(), Some(rate)), timeout).await.map_err(crate::error_text)?;
                    println!("Throttle set to {rate} B/s for the moving partitions' replication.");
                }
                let targets: Vec<((String, i32), Option<Vec<i32>>)> = plan.assignment().into_iter().map(|(k, r)| (k, Some(r))).collect();
                let answers = placement::alter_reassignments(addr, &targets, timeout).await.map_err(crate::error_text)?;
                answered(&answers, "started")
            }
            ReassignCmd::Cancel { plan } => {
                let targets: Vec<((String, i32), Option<Vec<i32>>)> = read_plan(&plan)?.assignment().into_keys().map(|k| (k, None)).collect();
                let answers = placement::alter_reassignments(addr, &targets, timeout).await.map_err(crate::error_text)?;
                answered(&answers, "cancelled")
            }
            ReassignCmd::Verify { plan } => {
                let plan = read_plan(&plan)?.assignment();
                let topics: Vec<String> = plan.keys().map(|(t, _)| t.clone()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
                let ongoing = placement::list_reassignments(addr, timeout).await.map_err(crate::error_text)?;
                let (current, _) = placement::assignment(addr, Some(&topics), timeout).await.map_err(crate::error_text)?;
                let (text, done) = render_verify(&plan, &ongoing, &current);
                print!("{text}");
                if !done {
                    return Err("not every reassignment of the plan is complete".into());
                }
                placement::alter_configs(addr, &throttle_changes(&current, &plan, None), timeout).await.map_err(crate::error_text)?;
                println!("Throttle was removed.");
                Ok(())
            }
        }
    })
}

pub fn brokers(bootstrap: &str, timeout: Duration, cmd: BrokersCmd) -> Res {
    let addr = resolve(bootstrap)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        match cmd {
            BrokersCmd::Unregister { id } => {
                placement::unregister_broker(addr, id, timeout).await.map_err(crate::error_text)?;
                println!("broker {id} unregistered");
                Ok(())
            }
        }
    })
}

fn resolve(bootstrap: &str) -> Result<SocketAddr, Box<dyn std::error::Error>> {
    bootstrap.to_socket_addrs()?.next().ok_or_else(|| format!("{bootstrap}: no address").into())
}

fn read_plan(path: &PathBuf) -> Result<PlanFile, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("{}: not a reassignment plan ({e})", path.display()))?)
}

/// `ID:RACK` pairs.
fn parse_racks(pairs: &[String]) -> Result<BTreeMap<i32, String>, String> {
    pairs
        .iter()
        .map(|pair| match pair.split_once(':') {
            Some((id, rack)) if !rack.is_empty() => id.trim().parse().map(|id| (id, rack.to_string())).map_err(|_| format!("--broker-rack {pair}: {id} is not a broker id")),
            _ => Err(format!("--broker-rack {pair}: expected ID:RACK")),
        })
        .collect()
}

/// Prints each partition's answer; an error if any was refused.
fn answered(answers: &[Answer], what: &str) -> Res {
    print!("{}", render_answers(answers, what));
    match answers.iter().filter(|a| a.1.is_some()).count() {
        0 => Ok(()),
        n => Err(format!("{n} of {} partitions refused", answers.len()).into()),
    }
}

/// The config changes that throttle a plan's moves at `rate` (None: remove the throttle): per
/// topic, the current replicas of each moving partition serve throttled (leader side) and the
/// replicas it adds fetch throttled (follower side); the cluster's default broker rates.
fn throttle_changes(current: &Assignment, plan: &Assignment, rate: Option<u64>) -> Vec<placement::ConfigChange> {
    use broker_core::kafka::config_resource;
    use broker_core::metadata::throttles;
    let mut leader: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut follower: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ((topic, p), target) in plan {
        let now = current.get(&(topic.clone(), *p)).cloned().unwrap_or_default();
        leader.entry(topic).or_default().extend(now.iter().map(|b| format!("{p}:{b}")));
        follower.entry(topic).or_default().extend(target.iter().filter(|b| !now.contains(b)).map(|b| format!("{p}:{b}")));
    }
    let mut out = Vec::new();
    for (topic, pairs) in &leader {
        let value = |list: &[String]| rate.map(|_| list.join(","));
        out.push((config_resource::topic, topic.to_string(), throttles::leader_replicas.to_string(), value(pairs)));
        out.push((config_resource::topic, topic.to_string(), throttles::follower_replicas.to_string(), value(follower.get(topic).map_or(&[][..], |v| v))));
    }
    for key in throttles::dynamic_broker_configs {
        out.push((config_resource::broker, String::new(), key.to_string(), rate.map(|r| r.to_string())));
    }
    out
}

fn render_generate(current: &Assignment, proposed: &Assignment) -> Result<String, serde_json::Error> {
    Ok(format!(
        "Current partition replica assignment\n{}\n\nProposed partition reassignment configuration\n{}\n",
        serde_json::to_string(&PlanFile::from_assignment(current))?,
        serde_json::to_string(&PlanFile::from_assignment(proposed))?
    ))
}

fn render_answers(answers: &[Answer], what: &str) -> String {
    let mut out = String::new();
    for ((topic, p), error) in answers {
        match error {
            None => writeln!(out, "{topic}-{p}: {what}"),
            Some((code, message)) => writeln!(out, "{topic}-{p}: refused, {code:?} (error code {}): {message}", code.code()),
        }
        .expect("writing to a String");
    }
    out
}

/// One line per planned partition, and whether every one is complete.
fn render_verify(plan: &Assignment, ongoing: &BTreeMap<(String, i32), Ongoing>, current: &Assignment) -> (String, bool) {
    let mut out = String::new();
    let mut done = true;
    for (key @ (topic, p), target) in plan {
        let line = match (ongoing.get(key), current.get(key)) {
            (Some(o), _) => format!("{topic}-{p}: in progress (replicas {:?}, adding {:?}, removing {:?})", o.replicas, o.adding, o.removing),
            (None, Some(now)) if now == target => format!("{topic}-{p}: complete, replicas {now:?}"),
            (None, Some(now)) => format!("{topic}-{p}: not in progress, and its replicas {now:?} are not the plan's {target:?} (cancelled, or moved since)"),
            (None, None) => format!("{topic}-{p}: no such partition"),
        };
        done &= line.contains(": complete");
        writeln!(out, "{line}").expect("writing to a String");
    }
    (out, done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::kafka::Code;

    fn a(rows: &[(&str, i32, &[i32])]) -> Assignment {
        rows.iter().map(|(t, p, r)| ((t.to_string(), *p), r.to_vec())).collect()
    }

    #[test]
    fn verify_names_each_partition_and_is_done_only_when_all_are() {
        let plan = a(&[("t", 0, &[1, 2]), ("t", 1, &[2, 0]), ("t", 2, &[0, 1])]);
        let ongoing: BTreeMap<(String, i32), Ongoing> = [(("t".to_string(), 1), Ongoing { replicas: vec![2, 0, 1], adding: vec![2], removing: vec![1] })].into_iter().collect();
        let current = a(&[("t", 0, &[1, 2]), ("t", 1, &[2, 0, 1]), ("t", 2, &[1, 2])]);
        let (text, done) = render_verify(&plan, &ongoing, &current);
        assert_eq!(
            text,
            "t-0: complete, replicas [1, 2]\n\
             t-1: in progress (replicas [2, 0, 1], adding [2], removing [1])\n\
             t-2: not in progress, and its replicas [1, 2] are not the plan's [0, 1] (cancelled, or moved since)\n"
        );
        assert!(!done);
        let (_, done) = render_verify(&a(&[("t", 0, &[1, 2])]), &BTreeMap::new(), &current);
        assert!(done);
    }

    #[test]
    fn a_throttle_names_the_serving_and_the_added_replicas() {
        let changes = throttle_changes(&a(&[("t", 0, &[0, 1]), ("t", 1, &[1, 2])]), &a(&[("t", 0, &[1, 2]), ("t", 1, &[1, 2])]), Some(1000));
        let text: Vec<String> = changes.iter().map(|(kind, name, k, v)| format!("{kind}/{name} {k}={v:?}")).collect();
        assert_eq!(
            text,
            vec![
                "2/t leader.replication.throttled.replicas=Some(\"0:0,0:1,1:1,1:2\")",
                "2/t follower.replication.throttled.replicas=Some(\"0:2\")",
                "4/ leader.replication.throttled.rate=Some(\"1000\")",
                "4/ follower.replication.throttled.rate=Some(\"1000\")",
            ]
        );
        assert!(throttle_changes(&a(&[("t", 0, &[0, 1])]), &a(&[("t", 0, &[1, 2])]), None).iter().all(|c| c.3.is_none()), "removing deletes every one");
    }

    #[test]
    fn answers_and_racks_read_as_an_operator_expects() {
        let answers: Vec<Answer> = vec![(("t".into(), 0), None), (("t".into(), 1), Some((Code::InvalidReplicaAssignment, "broker 9 in the target [9] is not registered".into())))];
        assert_eq!(render_answers(&answers, "started"), "t-0: started\nt-1: refused, InvalidReplicaAssignment (error code 39): broker 9 in the target [9] is not registered\n");
        assert_eq!(parse_racks(&["0:a".into(), "1:b".into()]).unwrap(), [(0, "a".to_string()), (1, "b".to_string())].into_iter().collect());
        assert!(parse_racks(&["x:a".into()]).unwrap_err().contains("not a broker id"));
        assert!(parse_racks(&["0".into()]).unwrap_err().contains("ID:RACK"));
        let text = render_generate(&a(&[("t", 0, &[0, 1])]), &a(&[("t", 0, &[1, 2])])).unwrap();
        assert!(text.ends_with("Proposed partition reassignment configuration\n{\"version\":1,\"partitions\":[{\"topic\":\"t\",\"partition\":0,\"replicas\":[1,2]}]}\n"), "{text}");
    }
}
