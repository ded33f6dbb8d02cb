//! The coordinator driven directly: each test is a script of requests and clock steps. The
//! `timeline` test renders one long script as text and snapshots it (insta), so a change in
//! any transition, generation or error shows up as a readable diff.

use super::*;
use bytes::Bytes;
use std::fmt::Write as _;

/// Where a write was appended, in a test without logs (no log serial to check).
fn appended_at(last_offset: i64, leader_epoch: i32) -> super::Appended {
    super::Appended { last_offset, leader_epoch, log: None }
}

const p0_epoch: i32 = 4;

/// A coordinator that leads every offsets partition, with a log of what happened.
struct Driver {
    c: Coordinator,
    now: u64,
    log: String,
    /// Appended writes not yet replicated.
    appended: Vec<u64>,
    /// What is "in the log", for reload tests: every appended record and marker, in order.
    written: Vec<Loaded>,
    /// Tickets waiting, by name.
    waits: Vec<(String, Ticket)>,
    /// Answers that came out of the coordinator's work, until the ticket's request is logged
    /// (the shell hands them over at once; the log lists them in the order requests waited).
    answered: std::collections::BTreeMap<Ticket, Answer>,
}

fn req(member: &str, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        member_id: member.into(),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: protocols.iter().map(|p| (p.to_string(), Bytes::from(format!("meta-{member}")))).collect(),
        require_known_member_id: true,
        ..Default::default()
    }
}

fn code(c: Option<Code>) -> String {
    c.map_or("NONE".into(), |c| format!("{c:?}"))
}

impl Driver {
    fn new(config: GroupConfig) -> Driver {
        let mut c = Coordinator::new(config);
        let mut work = Work::default();
        c.set_partitions(1, 0, &mut work);
        c.take_over(0, p0_epoch, 0);
        c.load(0, Vec::new(), 0, true, 0, &mut work);
        Driver { c, now: 0, log: String::new(), appended: Vec::new(), written: Vec::new(), waits: Vec::new(), answered: Default::default() }
    }

    fn quick() -> Driver {
        Driver::new(GroupConfig { initial_rebalance_delay_ms: 0, ..GroupConfig::default() })
    }

    fn line(&mut self, s: String) {
        writeln!(self.log, "{:>6} {s}", self.now).expect("string");
    }

    /// Appends every write at once (the shell's part) and logs them.
    fn perform(&mut self, work: Work) {
        self.answered.extend(work.answers);
        for a in work.appends {
            let h = crate::log::batch::read_header(&a.batch).expect("our batches have headers");
            let producer = h.is_transactional().then_some(h.producer_id);
            let records = crate::client::consumer::decode_records(Bytes::from(a.batch)).expect("our batches decode");
            let last = self.written.len() as i64 + records.len() as i64 - 1;
            for (_, k, v) in records {
                self.written.push(Loaded::Record { key: k.expect("keyed"), value: v, producer });
            }
            self.c.appended(a.write, Ok(appended_at(last, p0_epoch)), self.now, &mut Work::default());
            self.appended.push(a.write);
        }
        self.answers();
    }

    /// Logs every waiting ticket that has an answer.
    fn answers(&mut self) {
        let waits = std::mem::take(&mut self.waits);
        for (who, t) in waits {
            match self.answered.remove(&t) {
                Some(a) => {
                    let text = describe(&a);
                    self.line(format!("  -> {who}: {text}"));
                }
                None => self.waits.push((who, t)),
            }
        }
    }

    fn join(&mut self, who: &str, r: JoinRequest) -> Option<JoinAnswer> {
        let mut work = Work::default();
        let member = if r.member_id.is_empty() { "(new)".to_string() } else { r.member_id.clone() };
        let out = self.c.join("g", r, self.now, &mut work);
        let answer = match out {
            Pending::Now(a) => {
                self.line(format!("join {who} {member}: {}", describe(&Answer::Join(a.clone()))));
                Some(a)
            }
            Pending::Wait(t) => {
                self.line(format!("join {who} {member}: waits"));
                self.waits.push((format!("join {who}"), t));
                None
            }
        };
        self.perform(work);
        answer
    }

    fn sync(&mut self, who: &str, member: &str, generation: i32, assign: &[(&str, &str)]) {
        let mut work = Work::default();
        let assignments = assign.iter().map(|(m, a)| (m.to_string(), Bytes::from(a.to_string()))).collect();
        match self.c.sync("g", member, None, generation, None, assignments, self.now, &mut work) {
            Pending::Now(r) => self.line(format!("sync {who} gen {generation}: {}", describe(&Answer::Sync(r)))),
            Pending::Wait(t) => {
                self.line(format!("sync {who} gen {generation}: waits"));
                self.waits.push((format!("sync {who}"), t));
            }
        }
        self.perform(work);
    }

    fn heartbeat(&mut self, who: &str, member: &str, generation: i32) -> Result<(), Code> {
        let r = self.c.heartbeat("g", member, None, generation, self.now);
        self.line(format!("heartbeat {who} gen {generation}: {}", code(r.err())));
        r
    }

    fn commit(&mut self, who: &str, member: &str, generation: i32, offset: i64) {
        let mut work = Work::default();
        let v = OffsetValue { offset, leader_epoch: -1, metadata: String::new(), commit_timestamp: self.now as i64 };
        match self.c.commit("g", member, None, generation, vec![(("t".into(), 0), v)], self.now, &mut work) {
            Ok(Pending::Wait(t)) => {
                self.line(format!("commit {who} t-0@{offset} gen {generation}: waits"));
                self.waits.push((format!("commit {who}"), t));
            }
            Ok(Pending::Now(())) => self.line(format!("commit {who}: NONE")),
            Err(e) => self.line(format!("commit {who} t-0@{offset} gen {generation}: {e:?}")),
        }
        self.perform(work);
    }

    /// The offsets topic's high watermark passes every append.
    fn replicate(&mut self) {
        let mut work = Work::default();
        self.c.settle(|_, _| Ok(true), self.now, &mut work);
        self.appended.clear();
        self.line("offsets topic replicated".into());
        self.perform(work);
    }

    fn advance(&mut self, ms: u64) {
        self.now += ms;
        let mut work = Work::default();
        self.c.tick(self.now, &mut work);
        self.perform(work);
        self.state();
    }

    fn state(&mut self) {
        let text = match self.c.describe("g") {
            Ok(Some(g)) => format!("state {} gen {} leader {} members [{}]", g.state.name(), g.generation, g.leader.as_deref().unwrap_or("-"), g.members.keys().cloned().collect::<Vec<_>>().join(",")),
            Ok(None) => "no group".into(),
            Err(e) => format!("{e:?}"),
        };
        self.line(text);
    }

    fn committed(&self) -> Option<i64> {
        self.c.fetch_offsets("g", Some(&[("t".into(), 0)])).expect("coordinator")[0].1.as_ref().map(|v| v.offset)
    }
}

fn describe(a: &Answer) -> String {
    match a {
        Answer::Join(j) => match j.error {
            Some(e) => format!("{e:?} member {}", j.member_id),
            None => format!("NONE gen {} leader {} member {} members [{}]{}", j.generation, j.leader, j.member_id, j.members.iter().map(|m| m.0.clone()).collect::<Vec<_>>().join(","), if j.skip_assignment { " skip_assignment" } else { "" }),
        },
        Answer::Sync(Ok(b)) => format!("NONE assignment {:?}", String::from_utf8_lossy(b)),
        Answer::Sync(Err(e)) => format!("{e:?}"),
        Answer::Written(r) => code(r.err()),
        Answer::Consumer(r) => format!("{r:?}"),
        Answer::ShareState(r) => format!("{r:?}"),
    }
}

/// Two members join (KIP-394 ids first), the leader assigns, one commits, one leaves, the other
/// goes silent: every state, generation and error along the way.
#[test]
fn timeline() {
    let mut d = Driver::new(GroupConfig::default());
    let a = d.join("A", req("", &["range"])).expect("member id required").member_id;
    let b = d.join("B", req("", &["range", "roundrobin"])).expect("member id required").member_id;
    d.join("A", req(&a, &["range"]));
    d.advance(1_000);
    d.join("B", req(&b, &["range", "roundrobin"]));
    d.advance(2_000); // the initial delay restarts when B joins
    d.advance(3_000);
    d.sync("B", &b, 1, &[]);
    d.sync("A", &a, 1, &[(&a, "p0"), (&b, "p1")]);
    d.heartbeat("B", &b, 1).expect("alive during CompletingRebalance");
    d.replicate();
    d.state();
    d.commit("B", &b, 0, 10);
    d.commit("B", &b, 1, 10);
    d.replicate();
    d.line(format!("committed {:?}", d.committed()));
    let mut leave = Work::default();
    let r = d.c.leave("g", &[(a.clone(), None)], d.now, &mut leave);
    d.line(format!("leave A: {r:?}"));
    d.perform(leave);
    d.heartbeat("B", &b, 1).expect_err("rebalance");
    d.join("B", req(&b, &["range", "roundrobin"]));
    d.state();
    d.sync("B", &b, 2, &[(&b, "p0,p1")]);
    d.replicate();
    d.advance(9_000);
    d.advance(2_000); // B's session (10 s) ran out
    d.commit("B", &b, 2, 11);
    d.line(format!("committed {:?}", d.committed()));
    insta::assert_snapshot!(d.log);
}

#[test]
fn a_commit_is_visible_only_once_replicated() {
    let mut d = Driver::quick();
    d.commit("standalone", "", -1, 5);
    assert_eq!(d.committed(), None, "not replicated yet");
    d.replicate();
    assert_eq!(d.committed(), Some(5));
    assert!(d.log.contains("-> commit standalone: NONE"), "{}", d.log);
}

#[test]
fn a_lost_coordinator_answers_waiting_requests_not_coordinator() {
    let mut d = Driver::quick();
    d.commit("standalone", "", -1, 5);
    let a = d.join("A", req("", &["range"])).expect("id").member_id;
    d.join("A", req(&a, &["range"]));
    d.sync("A", &a, 1, &[(&a, "p0")]);
    let mut work = Work::default();
    d.c.resign(0, d.now, &mut work);
    d.perform(work);
    assert!(d.log.contains("-> commit standalone: NotCoordinator"), "{}", d.log);
    assert!(d.log.contains("-> sync A: NotCoordinator"), "{}", d.log);
    assert_eq!(d.c.heartbeat("g", &a, None, 1, d.now), Err(Code::NotCoordinator));
    assert_eq!(d.committed_err(), Some(Code::NotCoordinator));
}

impl Driver {
    fn committed_err(&self) -> Option<Code> {
        self.c.fetch_offsets("g", None).err()
    }
}

#[test]
fn a_new_leader_loads_groups_and_offsets_from_the_log() {
    let mut d = Driver::quick();
    let a = d.join("A", req("", &["range"])).expect("id").member_id;
    d.join("A", req(&a, &["range"]));
    d.sync("A", &a, 1, &[(&a, "p0")]);
    d.replicate();
    d.commit("A", &a, 1, 42);
    d.replicate();
    // Another coordinator reads the same records.
    let mut c = Coordinator::new(GroupConfig::default());
    let mut work = Work::default();
    c.set_partitions(1, 0, &mut work);
    c.take_over(0, p0_epoch + 1, 0);
    assert_eq!(c.heartbeat("g", &a, None, 1, d.now), Err(Code::CoordinatorLoadInProgress));
    c.load(0, d.written.clone(), d.written.len() as i64, true, d.now, &mut work);
    assert_eq!(c.heartbeat("g", &a, None, 1, d.now), Ok(()), "the member carries on with no rebalance");
    let g = c.describe("g").expect("owned").expect("loaded");
    assert_eq!((g.state, g.generation, g.members[&a].assignment.as_ref()), (State::Stable, 1, &b"p0"[..]));
    assert_eq!(c.fetch_offsets("g", None).expect("owned")[0].1.as_ref().map(|v| v.offset), Some(42));
}

#[test]
fn protocols_must_overlap_and_sessions_be_in_range() {
    let mut d = Driver::quick();
    let a = d.join("A", req("", &["range"])).expect("id").member_id;
    d.join("A", req(&a, &["range"]));
    assert_eq!(d.join("B", req("", &["roundrobin"])).expect("refused").error, Some(Code::InconsistentGroupProtocol));
    let mut short = req("", &["range"]);
    short.session_timeout_ms = 1_000;
    assert_eq!(d.join("C", short).expect("refused").error, Some(Code::InvalidSessionTimeout));
    assert_eq!(d.join("D", req("nobody", &["range"])).expect("refused").error, Some(Code::UnknownMemberId));
    let mut w = Work::default();
    assert!(matches!(d.c.join("", req("", &["range"]), 0, &mut w), Pending::Now(JoinAnswer { error: Some(Code::InvalidGroupId), .. })));
}

#[test]
fn the_group_size_is_bounded() {
    let mut d = Driver::new(GroupConfig { initial_rebalance_delay_ms: 0, max_size: 2, ..GroupConfig::default() });
    d.join("A", req("", &["range"])).expect("id");
    d.join("B", req("", &["range"])).expect("id");
    assert_eq!(d.join("C", req("", &["range"])).expect("refused").error, Some(Code::GroupMaxSizeReached));
}

#[test]
fn old_generations_are_fenced() {
    let mut d = Driver::quick();
    let a = d.join("A", req("", &["range"])).expect("id").member_id;
    d.join("A", req(&a, &["range"]));
    d.sync("A", &a, 1, &[(&a, "p0")]);
    d.replicate();
    assert_eq!(d.heartbeat("A", &a, 0), Err(Code::IllegalGeneration));
    d.commit("A", &a, 7, 1);
    assert!(d.log.contains("gen 7: IllegalGeneration"), "{}", d.log);
    d.commit("A", "stranger", 1, 1);
    assert!(d.log.contains("gen 1: UnknownMemberId"), "{}", d.log);
    assert_eq!(d.committed(), None);
}

/// KIP-345: a static member restarting within its session gets its assignment back with no
/// rebalance; the id it had before is fenced.
#[test]
fn a_static_member_comes_back_without_a_rebalance() {
    let mut d = Driver::quick();
    let mut r = req("", &["range"]);
    r.instance_id = Some("i-1".into());
    d.join("A", r.clone());
    let a = d.c.describe("g").expect("owned").expect("group").members.keys().next().cloned().expect("member");
    d.advance(0);
    d.sync("A", &a, 1, &[(&a, "p0")]);
    d.replicate();
    let again = d.join("A'", r).expect("answered at once");
    assert_eq!((again.error, again.generation), (None, 1));
    assert!(again.skip_assignment, "the leader keeps its assignment");
    let g = d.c.describe("g").expect("owned").expect("group");
    assert_eq!(g.state, State::Stable);
    assert_eq!(g.members[&again.member_id].assignment.as_ref(), b"p0");
    assert_eq!(d.c.heartbeat("g", &a, Some("i-1"), 1, d.now), Err(Code::FencedInstanceId));
}

#[test]
fn a_silent_member_leaves_and_the_rest_rebalance() {
    let mut d = Driver::quick();
    let a = d.join("A", req("", &["range"])).expect("id").member_id;
    let b = d.join("B", req("", &["range"])).expect("id").member_id;
    d.join("A", req(&a, &["range"]));
    d.join("B", req(&b, &["range"]));
    d.sync("A", &a, 1, &[(&a, "p0"), (&b, "p1")]);
    d.sync("B", &b, 1, &[]);
    d.replicate();
    for _ in 0..3 {
        d.advance(4_000);
        let r = d.heartbeat("A", &a, 1);
        assert!(matches!(r, Ok(()) | Err(Code::RebalanceInProgress)), "A stays: {r:?}");
    }
    let g = d.c.describe("g").expect("owned").expect("group");
    assert_eq!((g.state, g.members.len()), (State::PreparingRebalance, 1), "{}", d.log);
    // A rejoins; the rebalance completes with A alone.
    d.join("A", req(&a, &["range"]));
    assert!(d.log.contains("-> join A: NONE gen 2"), "{}", d.log);
}

#[test]
fn placement_is_kafkas() {
    // Java: "my-group".hashCode() = 1,077,264,236... checked against Kafka's formula by hand:
    // abs(hash) % 50.
    let h = "my-group".encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32));
    assert_eq!(partition_for("my-group", 50), (h & 0x7fff_ffff) % 50);
    assert_eq!(partition_for("", 50), 0);
    // A hash whose top bit is set stays non-negative.
    assert!((0..50).contains(&partition_for("zzzzzzzzzzzzzzzzz", 50)));
}

/// The timers sleep until `next_deadline`; a deadline `tick` will not act on must not be
/// reported, or the shell wakes every millisecond. A leader's assignment still being stored
/// when the sync deadline passes is such a case: the group waits for the write, not the clock.
#[test]
fn no_past_deadline_while_the_assignment_is_being_stored() {
    let mut d = Driver::quick();
    let a = d.join("A", req("", &["range"])).expect("id").member_id;
    d.join("A", req(&a, &["range"]));
    d.sync("A", &a, 1, &[(&a, "p0")]);
    d.advance(30_001); // past the rebalance timeout; the write is not replicated yet
    let g = d.c.describe("g").expect("owned").expect("group");
    assert_eq!(g.state, State::CompletingRebalance, "{}", d.log);
    let next = d.c.next_deadline();
    assert!(next.is_none_or(|t| t > d.now), "next deadline {next:?} at {}: tick has nothing to do then\n{}", d.now, d.log);
    d.replicate();
    assert!(d.log.contains("-> sync A: NONE assignment \"p0\""), "{}", d.log);
}

/// KIP-134 as Kafka has it: only a new group's first rebalance is delayed again for each
/// member joining during the delay; an Empty group coming back later waits one delay.
#[test]
fn an_emptied_group_waits_one_initial_delay() {
    let mut d = Driver::new(GroupConfig::default());
    let a = d.join("A", req("", &["range"])).expect("member id required").member_id;
    d.join("A", req(&a, &["range"]));
    d.advance(3_000);
    let r = d.c.leave("g", &[(a.clone(), None)], d.now, &mut Work::default()).expect("coordinator");
    assert_eq!(r, vec![Ok(())]);
    d.state();
    assert!(d.log.ends_with("state Empty gen 2 leader - members []\n"), "{}", d.log);
    let a = d.join("A", req("", &["range"])).expect("member id required").member_id;
    d.join("A", req(&a, &["range"]));
    let b = d.join("B", req("", &["range"])).expect("member id required").member_id;
    d.advance(1_000);
    d.join("B", req(&b, &["range"]));
    d.advance(2_000);
    assert!(d.log.contains("-> join B: NONE gen 3"), "the join completes one delay after the first member: {}", d.log);
}

/// A current member's commit that raced a rebalance (sent in generation 1, arriving in 2):
/// taken while the group still prepares generation 2 (Kafka allows commits then), refused
/// REBALANCE_IN_PROGRESS while 2 is being completed and ILLEGAL_GENERATION once it is Stable,
/// and never written. A heartbeat of generation 1 is refused the same way.
#[test]
fn a_commit_racing_a_rebalance_is_refused_and_not_written() {
    let mut d = Driver::quick();
    let a = d.join("A", req("", &["range"])).expect("id").member_id;
    d.join("A", req(&a, &["range"]));
    d.sync("A", &a, 1, &[(&a, "p0")]);
    d.replicate();
    let b = d.join("B", req("", &["range"])).expect("id").member_id;
    d.join("B", req(&b, &["range"]));
    d.commit("A", &a, 1, 5);
    d.replicate();
    assert_eq!(d.committed(), Some(5), "generation 1 is still current while 2 is prepared");
    d.join("A", req(&a, &["range"]));
    d.state();
    d.commit("A", &a, 1, 6);
    assert!(d.log.contains("t-0@6 gen 1: RebalanceInProgress"), "{}", d.log);
    d.sync("B", &b, 2, &[]);
    d.sync("A", &a, 2, &[(&a, "p0"), (&b, "p1")]);
    d.replicate();
    d.commit("A", &a, 1, 7);
    assert!(d.log.contains("t-0@7 gen 1: IllegalGeneration"), "{}", d.log);
    assert_eq!(d.heartbeat("A", &a, 1), Err(Code::IllegalGeneration));
    d.replicate();
    assert_eq!(d.committed(), Some(5), "{}", d.log);
}

mod transactional_offsets {
    //! TxnOffsetCommit: offsets written inside a transaction are pending (unstable, not
    //! fetched) until the marker; a commit makes them offsets, an abort drops them, a plain
    //! commit written later wins either way; a new coordinator reading the log agrees.

    use super::*;

    fn offset(d: &Driver, tp: &(String, i32)) -> Option<i64> {
        d.c.fetch_offsets("g", Some(std::slice::from_ref(tp))).expect("owned")[0].1.as_ref().map(|v| v.offset)
    }

    fn value(offset: i64) -> OffsetValue {
        OffsetValue { offset, leader_epoch: -1, metadata: String::new(), commit_timestamp: 0 }
    }

    fn txn_commit(d: &mut Driver, producer_id: i64, tp: &(String, i32), at: i64) {
        let mut work = Work::default();
        let r = d.c.txn_commit("g", (producer_id, 0), "", None, -1, vec![(tp.clone(), value(at))], d.now, &mut work);
        assert!(matches!(r, Ok(Pending::Wait(_))), "{r:?}");
        d.perform(work);
        d.replicate();
    }

    /// The marker of `producer_id`, appended (as the broker would) and replicated.
    fn marker(d: &mut Driver, producer_id: i64, commit: bool) {
        let at = d.written.len() as i64;
        d.written.push(Loaded::Marker { producer_id, commit });
        d.c.txn_marker(0, producer_id, commit, appended_at(at, p0_epoch));
        d.replicate();
    }

    #[test]
    fn pending_until_the_marker_then_committed_or_dropped_and_reloaded_alike() {
        let mut d = Driver::quick();
        let (t0, t1, t2) = (("t".to_string(), 0), ("t".to_string(), 1), ("t".to_string(), 2));
        txn_commit(&mut d, 7, &t0, 10);
        assert!(d.written.iter().any(|l| matches!(l, Loaded::Record { producer: Some(7), .. })), "written as producer 7's transactional batch");
        assert_eq!(offset(&d, &t0), None, "not an offset before the marker");
        assert!(d.c.unstable("g", &t0) && !d.c.unstable("g", &t1));
        marker(&mut d, 7, true);
        assert_eq!(offset(&d, &t0), Some(10), "committed");
        assert!(!d.c.unstable("g", &t0));

        txn_commit(&mut d, 7, &t1, 20);
        marker(&mut d, 7, false);
        assert_eq!(offset(&d, &t1), None, "aborted: dropped");

        // A plain commit written after the transaction's offsets is the later one: it wins.
        txn_commit(&mut d, 8, &t2, 30);
        let mut work = Work::default();
        let r = d.c.commit("g", "", None, -1, vec![(t2.clone(), value(31))], d.now, &mut work);
        assert!(matches!(r, Ok(Pending::Wait(_))));
        d.perform(work);
        d.replicate();
        assert!(!d.c.unstable("g", &t2), "no longer waiting on the transaction");
        marker(&mut d, 8, true);
        assert_eq!(offset(&d, &t2), Some(31));

        // A transaction still open when the partition moves: another coordinator loads the
        // same log and sees the same offsets, the open one still pending.
        txn_commit(&mut d, 9, &t1, 40);
        let mut c = Coordinator::new(GroupConfig::default());
        let mut work = Work::default();
        c.set_partitions(1, 0, &mut work);
        c.take_over(0, p0_epoch + 1, 0);
        c.load(0, d.written.clone(), d.written.len() as i64, true, d.now, &mut work);
        let loaded: Vec<(String, i32, Option<i64>)> = c.fetch_offsets("g", None).expect("owned").into_iter().map(|((t, p), v)| (t, p, v.map(|v| v.offset))).collect();
        assert_eq!(loaded, vec![("t".to_string(), 0, Some(10)), ("t".to_string(), 2, Some(31))]);
        assert!(c.unstable("g", &t1), "producer 9's offsets wait on its marker");
        let mut work = Work::default();
        c.txn_marker(0, 9, true, appended_at(d.written.len() as i64, p0_epoch + 1));
        c.settle(|_, _| Ok(true), d.now, &mut work);
        assert_eq!(c.fetch_offsets("g", Some(std::slice::from_ref(&t1))).expect("owned")[0].1.as_ref().map(|v| v.offset), Some(40));
    }

    #[test]
    fn a_marker_whose_write_fails_gives_the_offsets_back() {
        let mut d = Driver::quick();
        let t0 = ("t".to_string(), 0);
        txn_commit(&mut d, 7, &t0, 10);
        d.c.txn_marker(0, 7, true, appended_at(99, p0_epoch));
        let mut work = Work::default();
        d.c.settle(|_, _| Err(Code::NotEnoughReplicasAfterAppend), d.now, &mut work);
        assert_eq!(offset(&d, &t0), None);
        assert!(d.c.unstable("g", &t0), "pending again: the coordinator sends the marker again");
        marker(&mut d, 7, true);
        assert_eq!(offset(&d, &t0), Some(10));
    }
}
