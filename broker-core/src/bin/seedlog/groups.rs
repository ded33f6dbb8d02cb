//! `seedlog groups`: the operator's view of consumer groups, like kafka-consumer-groups.sh's
//! `--list` and `--describe`, and of a KIP-932 share group's start offsets, which it may set
//! or delete as kafka-share-groups.sh's `--reset-offsets` and `--delete-offsets` do. The
//! requests are `broker_core::client::groups_admin`'s and `client::share_offsets`'; this file
//! only parses arguments and formats answers, with pure functions, so the tables are
//! unit-tested without a broker. Only `alter-share-offsets` and `delete-share-offsets` change a
//! group, and only what they name: no join, no commit.

use broker_core::client::groups_admin::{self, GroupDescription, GroupListing, MemberAssignment, MemberDescription};
use broker_core::client::{share_offsets, ClientError};
use clap::Subcommand;
use std::fmt::Write;
use std::time::Duration;

#[derive(Subcommand)]
pub enum GroupsCmd {
    /// Every group in the cluster (ListGroups to every broker), sorted: id, state, protocol type.
    /// Exits 1 after the table if some broker did not answer (its groups are missing).
    List,
    /// One group: its state and members, and per partition the committed offset, the log end
    /// (high watermark), the lag and the consumer assigned it. A KIP-848 group also shows its
    /// group and assignment epochs, and each member's epoch and target beside what it has; so
    /// does a KIP-932 share group (protocol type `share`, its target being what it has). A group
    /// with no members and no committed offset (and not a share group) prints "group G does not
    /// exist or has no committed offsets" on stderr and exits 1.
    Describe { group: String },
    /// Sets where an EMPTY share group's share-partitions start (AlterShareGroupOffsets): each
    /// `TOPIC:PARTITION=OFFSET`. Prints each partition's outcome; exits 1 if one failed (a group
    /// with members is refused whole: NON_EMPTY_GROUP).
    AlterShareOffsets {
        group: String,
        #[arg(required = true, value_parser = parse_start)]
        offsets: Vec<(String, i32, i64)>,
    },
    /// Deletes an EMPTY share group's share-partition states of each TOPIC
    /// (DeleteShareGroupOffsets): they start afresh, where `share.auto.offset.reset` says.
    DeleteShareOffsets {
        group: String,
        #[arg(required = true)]
        topics: Vec<String>,
    },
}

/// `TOPIC:PARTITION=OFFSET` (the topic may hold colons: the last one splits).
fn parse_start(arg: &str) -> Result<(String, i32, i64), String> {
    let bad = || format!("{arg:?}: expected TOPIC:PARTITION=OFFSET");
    let (tp, offset) = arg.rsplit_once('=').ok_or_else(bad)?;
    let (topic, partition) = tp.rsplit_once(':').ok_or_else(bad)?;
    match (topic.is_empty(), partition.parse::<i32>(), offset.parse::<i64>()) {
        (false, Ok(p), Ok(o)) if p >= 0 && o >= 0 => Ok((topic.to_string(), p, o)),
        _ => Err(bad()),
    }
}

/// One line per item changed, `ok` or why not; the number that failed.
fn render_changes<T: std::fmt::Display>(results: &[(T, Result<(), ClientError>)]) -> (String, usize) {
    let mut out = String::new();
    for (what, r) in results {
        let _ = match r {
            Ok(()) => writeln!(out, "{what}  ok"),
            Err(e) => writeln!(out, "{what}  {}", crate::error_text(e.clone())),
        };
    }
    (out, results.iter().filter(|(_, r)| r.is_err()).count())
}

fn changed<T: std::fmt::Display>(results: Vec<(T, Result<(), ClientError>)>) -> Res {
    let (text, failed) = render_changes(&results);
    print!("{text}");
    match failed {
        0 => Ok(()),
        n => Err(format!("{n} of {} failed", results.len()).into()),
    }
}

type Res = Result<(), Box<dyn std::error::Error>>;

/// Runs `cmd` against the cluster at `bootstrap` on a runtime of its own (this binary is the IO edge).
pub fn run(bootstrap: &str, timeout: Duration, cmd: GroupsCmd) -> Res {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        match cmd {
            GroupsCmd::List => {
                let listing = groups_admin::list_groups(bootstrap, timeout).await.map_err(crate::error_text)?;
                print!("{}", render_list(&listing));
                match listing.failures.is_empty() {
                    true => Ok(()),
                    false => Err(format!("{} broker(s) did not answer; the groups they coordinate are missing above", listing.failures.len()).into()),
                }
            }
            GroupsCmd::Describe { group } => {
                let d = groups_admin::describe_group(bootstrap, &group, timeout).await.map_err(crate::error_text)?;
                if d.is_unknown() {
                    return Err(format!("group {group} does not exist or has no committed offsets").into());
                }
                print!("{}", render_describe(&d));
                Ok(())
            }
            GroupsCmd::AlterShareOffsets { group, offsets } => {
                let results = share_offsets::alter_share_offsets(bootstrap, &group, &offsets, timeout).await.map_err(crate::error_text)?;
                changed(results.into_iter().map(|((t, p), r)| (format!("{t}:{p}"), r)).collect())
            }
            GroupsCmd::DeleteShareOffsets { group, topics } => changed(share_offsets::delete_share_offsets(bootstrap, &group, &topics, timeout).await.map_err(crate::error_text)?),
        }
    })
}

/// Columns padded to their widest cell, two spaces apart, no trailing blanks.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let _ = write!(line, "{cell:<w$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// An empty or absent value as kafka-consumer-groups.sh shows it.
fn or_dash(s: &str) -> String {
    if s.is_empty() { "-".into() } else { s.into() }
}

fn opt(v: Option<i64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// `seedlog groups list`: GROUP STATE PROTOCOL-TYPE, then one line per broker that did not answer.
pub fn render_list(l: &GroupListing) -> String {
    let rows: Vec<Vec<String>> = l.groups.iter().map(|g| vec![g.group_id.clone(), or_dash(&g.state), or_dash(&g.protocol_type)]).collect();
    let mut out = table(&["GROUP", "STATE", "PROTOCOL-TYPE"], &rows);
    for (b, e) in &l.failures {
        let _ = writeln!(out, "broker {b} did not answer: {}", crate::error_text(e.clone()));
    }
    out
}

/// A member's partitions: `topic(0,1,2)` per topic.
fn partitions(a: &MemberAssignment) -> String {
    match a {
        MemberAssignment::Unknown => "-".into(),
        MemberAssignment::Undecodable(why) => format!("(undecodable: {why})"),
        MemberAssignment::Partitions(tps) if tps.is_empty() => "-".into(),
        MemberAssignment::Partitions(tps) => {
            tps.iter().map(|(t, ps)| format!("{t}({})", ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(","))).collect::<Vec<_>>().join(" ")
        }
    }
}

/// `seedlog groups describe G`: a line on the group, the partitions table (kafka-consumer-groups.sh
/// --describe's columns), and the members with their assignments.
pub fn render_describe(d: &GroupDescription) -> String {
    let epochs = d.epochs.map_or(String::new(), |(group, target)| format!("  GROUP-EPOCH {group}  ASSIGNMENT-EPOCH {target}"));
    let mut out = format!(
        "GROUP {}  COORDINATOR {}  STATE {}  PROTOCOL-TYPE {}  ASSIGNOR {}{epochs}\n\n",
        d.group_id,
        d.coordinator,
        or_dash(&d.state),
        or_dash(&d.protocol_type),
        or_dash(&d.protocol)
    );
    let rows: Vec<Vec<String>> = d
        .partitions
        .iter()
        .map(|p| {
            let (member, client) = p.owner.as_ref().map_or(("-".into(), "-".into()), |(m, c)| (or_dash(m), or_dash(c)));
            vec![p.topic.clone(), p.partition.to_string(), opt(p.committed), opt(p.log_end.as_ref().ok().copied()), opt(p.lag()), member, client]
        })
        .collect();
    // A share group's offset is its share-partition start offset (kafka-share-groups.sh's column).
    let offset = if d.protocol_type == groups_admin::share_protocol_type { "START-OFFSET" } else { "CURRENT-OFFSET" };
    out.push_str(&table(&["TOPIC", "PARTITION", offset, "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "CLIENT-ID"], &rows));
    for p in &d.partitions {
        if let Err(e) = &p.log_end {
            let _ = writeln!(out, "log end of {}-{} unknown: {}", p.topic, p.partition, crate::error_text(e.clone()));
        }
    }
    out.push('\n');
    if d.members.is_empty() {
        let _ = writeln!(out, "Group {} has no active members.", d.group_id);
        return out;
    }
    let row = |m: &MemberDescription| vec![m.member_id.clone(), or_dash(&m.client_id), or_dash(&m.client_host), or_dash(m.instance_id.as_deref().unwrap_or("")), partitions(&m.assignment)];
    match d.epochs {
        None => out.push_str(&table(&["MEMBER-ID", "CLIENT-ID", "HOST", "INSTANCE-ID", "PARTITIONS"], &d.members.iter().map(row).collect::<Vec<_>>())),
        Some(_) => {
            let rows: Vec<Vec<String>> = d
                .members
                .iter()
                .map(|m| {
                    let (epoch, target) = m.kip848.clone().map_or(("-".into(), "-".into()), |(e, t)| (e.to_string(), partitions(&MemberAssignment::Partitions(t))));
                    let mut r = row(m);
                    r.insert(4, epoch);
                    r.push(target);
                    r
                })
                .collect();
            out.push_str(&table(&["MEMBER-ID", "CLIENT-ID", "HOST", "INSTANCE-ID", "EPOCH", "PARTITIONS", "TARGET"], &rows));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::client::ClientError;
    use broker_core::client::groups_admin::{BrokerAddr, ListedGroup, PartitionOffsets};
    use broker_core::kafka::Code;

    fn part(topic: &str, partition: i32, committed: Option<i64>, log_end: Result<i64, ClientError>, owner: Option<(&str, &str)>) -> PartitionOffsets {
        PartitionOffsets { topic: topic.into(), partition, committed, log_end, owner: owner.map(|(m, c)| (m.into(), c.into())) }
    }

    #[test]
    fn describe_table() {
        let d = GroupDescription {
            group_id: "billing".into(),
            coordinator: BrokerAddr { id: 1, host: "10.0.0.2".into(), port: 9092 },
            state: "Stable".into(),
            protocol_type: "consumer".into(),
            protocol: "range".into(),
            members: vec![
                MemberDescription {
                    member_id: "c1-5d3a".into(),
                    instance_id: None,
                    client_id: "c1".into(),
                    client_host: "/10.0.0.7".into(),
                    assignment: MemberAssignment::Partitions([("orders".to_string(), vec![0, 1])].into()),
                    kip848: None,
                },
                MemberDescription {
                    member_id: "c2-77e1".into(),
                    instance_id: Some("pod-2".into()),
                    client_id: "c2".into(),
                    client_host: String::new(),
                    assignment: MemberAssignment::Partitions([("orders".to_string(), vec![2]), ("refunds".to_string(), vec![0])].into()),
                    kip848: None,
                },
            ],
            partitions: vec![
                part("orders", 0, Some(120), Ok(130), Some(("c1-5d3a", "c1"))),
                part("orders", 1, Some(7), Ok(7), Some(("c1-5d3a", "c1"))),
                part("orders", 2, None, Ok(55), Some(("c2-77e1", "c2"))),
                part("refunds", 0, Some(3), Err(ClientError::Kafka { code: Code::LeaderNotAvailable, message: "refunds-0 has no leader (leader id -1)".into() }), Some(("c2-77e1", "c2"))),
            ],
            epochs: None,
        };
        let want = "\
GROUP billing  COORDINATOR 1 (10.0.0.2:9092)  STATE Stable  PROTOCOL-TYPE consumer  ASSIGNOR range

TOPIC    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  CLIENT-ID
orders   0          120             130             10   c1-5d3a      c1
orders   1          7               7               0    c1-5d3a      c1
orders   2          -               55              -    c2-77e1      c2
refunds  0          3               -               -    c2-77e1      c2
log end of refunds-0 unknown: LeaderNotAvailable (error code 5): refunds-0 has no leader (leader id -1)

MEMBER-ID  CLIENT-ID  HOST       INSTANCE-ID  PARTITIONS
c1-5d3a    c1         /10.0.0.7  -            orders(0,1)
c2-77e1    c2         -          pod-2        orders(2) refunds(0)
";
        assert_eq!(render_describe(&d), want, "got:\n{}", render_describe(&d));
    }

    #[test]
    fn describe_without_members() {
        let d = GroupDescription {
            group_id: "g".into(),
            coordinator: BrokerAddr { id: 0, host: "127.0.0.1".into(), port: 9092 },
            state: "Empty".into(),
            protocol_type: "consumer".into(),
            protocol: String::new(),
            members: vec![],
            partitions: vec![part("t", 0, Some(10), Ok(10), None)],
            epochs: None,
        };
        assert!(!d.is_unknown());
        let want = "\
GROUP g  COORDINATOR 0 (127.0.0.1:9092)  STATE Empty  PROTOCOL-TYPE consumer  ASSIGNOR -

TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  CLIENT-ID
t      0          10              10              0    -            -

Group g has no active members.
";
        assert_eq!(render_describe(&d), want, "got:\n{}", render_describe(&d));
    }

    #[test]
    fn describe_a_kip848_group_shows_epochs_and_targets() {
        let member = |id: &str, epoch, has: &[i32], target: &[i32]| MemberDescription {
            member_id: id.into(),
            instance_id: None,
            client_id: id.into(),
            client_host: "/127.0.0.1".into(),
            assignment: MemberAssignment::Partitions([("t".to_string(), has.to_vec())].into_iter().filter(|(_, p)| !p.is_empty()).collect()),
            kip848: Some((epoch, [("t".to_string(), target.to_vec())].into_iter().filter(|(_, p)| !p.is_empty()).collect())),
        };
        let d = GroupDescription {
            group_id: "g".into(),
            coordinator: BrokerAddr { id: 0, host: "127.0.0.1".into(), port: 9092 },
            state: "Reconciling".into(),
            protocol_type: "consumer".into(),
            protocol: "uniform".into(),
            members: vec![member("a", 2, &[0, 1], &[0, 1]), member("b", 1, &[2, 3], &[2]), member("c", 2, &[], &[3])],
            partitions: vec![part("t", 0, Some(5), Ok(9), Some(("a", "a")))],
            epochs: Some((3, 3)),
        };
        let want = "\
GROUP g  COORDINATOR 0 (127.0.0.1:9092)  STATE Reconciling  PROTOCOL-TYPE consumer  ASSIGNOR uniform  GROUP-EPOCH 3  ASSIGNMENT-EPOCH 3

TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  CLIENT-ID
t      0          5               9               4    a            a

MEMBER-ID  CLIENT-ID  HOST        INSTANCE-ID  EPOCH  PARTITIONS  TARGET
a          a          /127.0.0.1  -            2      t(0,1)      t(0,1)
b          b          /127.0.0.1  -            1      t(2,3)      t(2)
c          c          /127.0.0.1  -            2      -           t(3)
";
        assert_eq!(render_describe(&d), want, "got:\n{}", render_describe(&d));
    }

    #[test]
    fn share_offsets_arguments_and_outcomes() {
        assert_eq!(parse_start("orders:2=40"), Ok(("orders".into(), 2, 40)));
        assert_eq!(parse_start("a:b:0=0"), Ok(("a:b".into(), 0, 0)), "the last colon splits");
        for bad in ["orders=4", "orders:x=4", ":0=1", "orders:0=-1", "orders:-1=0", "orders:0"] {
            assert!(parse_start(bad).is_err(), "{bad}");
        }
        let results = vec![("t:0".to_string(), Ok(())), ("t:9".to_string(), Err(ClientError::Kafka { code: Code::UnknownTopicOrPartition, message: "AlterShareGroupOffsets of t-9".into() }))];
        let (text, failed) = render_changes(&results);
        assert_eq!(failed, 1);
        assert!(text.starts_with("t:0  ok\nt:9  UnknownTopicOrPartition"), "{text}");
    }

    #[test]
    fn list_table_names_brokers_that_did_not_answer() {
        let l = GroupListing {
            groups: vec![
                ListedGroup { group_id: "a".into(), state: "Stable".into(), protocol_type: "consumer".into(), coordinator: 0 },
                ListedGroup { group_id: "connect-x".into(), state: "Empty".into(), protocol_type: String::new(), coordinator: 2 },
            ],
            failures: vec![(BrokerAddr { id: 1, host: "h1".into(), port: 9093 }, ClientError::Timeout(10_000))],
        };
        let want = "\
GROUP      STATE   PROTOCOL-TYPE
a          Stable  consumer
connect-x  Empty   -
broker 1 (h1:9093) did not answer: request timed out after 10000 ms
";
        assert_eq!(render_list(&l), want, "got:\n{}", render_list(&l));
    }
}
