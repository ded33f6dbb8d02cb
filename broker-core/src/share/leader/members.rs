//! Records held by members their share group no longer has. The coordinator ends a member
//! whose group session timed out (or that left); its share sessions at partition leaders may
//! live on (its connection open, its fetches going on), and what it holds would stay locked
//! until the locks run out. So every `members_check_ms` a leader whose share-partitions of a
//! group have records acquired asks the group's coordinator which members the group has
//! (ShareGroupDescribe) and gives back, at once and written, what the holders it named in the
//! question and the answer left out hold, delivery counts kept (as a closed session's).
//!
//! One invariant: only holders as of the question are released: a member that joined after
//! the coordinator answered, and acquired before the answer arrived, keeps what it holds.
//! Never releases on a failed question (the coordinator moved, the link failed): the next
//! check asks again. Nor on an answer from a node that is no longer the group's coordinator
//! when it arrives: a coordinator cut off from the cluster, not yet aware it was replaced,
//! answers from what it has in memory, which may hold changes it could never replicate (its
//! members' sessions running out while no heartbeat reached it).

use super::{Locate, Out, Phase, Send, Shares, What};
use crate::constants::share_state_retry_ms;
use crate::kafka::Code;
use std::collections::BTreeSet;

/// A group's next check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MemberCheck {
    next_at: u64,
    /// The question in flight: its request, the node asked, and who held records when it was
    /// asked.
    sent: Option<(u64, i32, BTreeSet<String>)>,
}

impl Shares {
    /// The members holding records of `group`'s share-partitions here.
    fn holders_of(&self, group: &str) -> BTreeSet<String> {
        let ready = self.parts.iter().filter(|(k, _)| k.0 == group).filter_map(|(_, e)| match &e.phase {
            Phase::Ready(p) => Some(p),
            Phase::Reading(_) => None,
        });
        ready.flat_map(|p| p.holders().into_iter().map(str::to_string)).collect()
    }

    /// Records of `group` were acquired: its members are checked `members_check_ms` from now,
    /// unless a check is due already.
    pub(super) fn members_held(&mut self, group: &str, now: u64) {
        let next_at = now + self.members_check_ms;
        if !self.member_checks.contains_key(group) {
            self.member_checks.insert(group.to_string(), MemberCheck { next_at, sent: None });
        }
    }

    /// Asks the coordinator of each group with records held here, once `members_check_ms`
    /// passed since its last check (the first one `members_check_ms` after records were first
    /// held: a member fetching is rarely already gone).
    pub(super) fn check_members(&mut self, locate: Locate, now: u64, out: &mut Out) {
        let groups: BTreeSet<String> = self.parts.keys().map(|k| k.0.clone()).collect();
        let held: Vec<(String, BTreeSet<String>)> = groups.into_iter().map(|g| (g.clone(), self.holders_of(&g))).filter(|(_, h)| !h.is_empty()).collect();
        let names: BTreeSet<&String> = held.iter().map(|(g, _)| g).collect();
        self.member_checks.retain(|g, c| names.contains(g) || c.sent.is_some());
        for (group, holders) in held {
            let interval = self.members_check_ms;
            let check = self.member_checks.entry(group.clone()).or_insert(MemberCheck { next_at: now + interval, sent: None });
            if check.sent.is_some() || check.next_at > now {
                continue;
            }
            let Some(coordinator) = locate(&group) else {
                check.next_at = now + share_state_retry_ms;
                continue;
            };
            let request = self.next_request;
            self.next_request += 1;
            check.sent = Some((request, coordinator, holders));
            self.member_requests.insert(request, group.clone());
            out.sends.push(Send { request, coordinator, group, topic_id: [0; 16], partition: -1, what: What::Members });
        }
    }

    /// When [`Shares::tick`] next asks a coordinator about its group's members.
    pub(super) fn members_deadline(&self) -> Option<u64> {
        self.member_checks.values().filter(|c| c.sent.is_none()).map(|c| c.next_at).min()
    }

    /// The coordinator answered `request` with the members its group has (GROUP_ID_NOT_FOUND:
    /// none, the group is gone), or failed. What the holders asked about and not among them
    /// hold goes back, written, if the node that answered is still the group's coordinator.
    pub fn members_answered(&mut self, request: u64, result: Result<BTreeSet<String>, Code>, locate: Locate, now: u64, out: &mut Out) {
        let Some(group) = self.member_requests.remove(&request) else { return };
        let interval = self.members_check_ms;
        let Some(check) = self.member_checks.get_mut(&group) else { return };
        let (asked_node, asked) = match check.sent.take() {
            Some((r, node, asked)) if r == request => (node, asked),
            other => {
                check.sent = other;
                return;
            }
        };
        check.next_at = now + interval;
        if locate(&group) != Some(asked_node) {
            return;
        }
        let members = match result {
            Ok(members) => members,
            Err(Code::GroupIdNotFound) => BTreeSet::new(),
            Err(_) => return,
        };
        for member in asked.difference(&members) {
            out.lines.push(format!("share group {group}: member {member} is no longer in the group; what it held here goes back"));
            self.release_member(&group, member, out);
        }
        self.flush(locate, now, out);
        self.take_answers(out);
    }
}
