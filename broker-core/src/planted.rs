//! The bugs the simulator plants (issue 11): each restores a known wrong behaviour of the broker
//! or the controller, so tests can prove a checker catches it and sweeps can measure how many
//! fresh seeds find it. A leaf module (the broker and the controller both read it, neither
//! imports the other). Nothing is planted in the real build: [`Planted::is`] is a constant
//! `false` there and the planting branches compile away.

/// Bugs the simulator must be able to find (see sim's planted-bug tests). The branches that
/// plant them are compiled only in the simulated build ([`BrokerConfig::planted`] is a
/// constant `false` in the real one).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedBug {
    /// Acknowledge a produce before appending it (the append happens at the next tick), so a
    /// crash in between loses an acknowledged write.
    AckBeforeAppend,
    /// Report a fetch's high watermark one below the truth, so consumers read above it.
    FetchAboveHighWatermark,
    /// Answer acks=all once the leader has appended, without waiting for the ISR (acks=1 in
    /// disguise), so a leader failure loses acknowledged writes.
    AcksAllWithoutIsr,
    /// A follower skips KIP-279 truncation, keeping records the new leader never had, so
    /// replicas disagree below the high watermark.
    FollowerSkipsTruncation,
    /// Every seventh produce is appended and then answered with a definite error
    /// (INVALID_REQUIRED_ACKS): the client is told "not appended" about a record in the log.
    FailAfterAppend,
    /// Consumers are served up to the log end and told it is the high watermark: they read
    /// records not yet replicated, which a leader change can take away (dirty reads that
    /// `read_above_hw` cannot see, since the reported mark covers them).
    ConsumersReadToLogEnd,
    /// A consumer fetch answers its first batch twice (once more at the end): a client that
    /// drops what it already has hides it; `nonmonotonic_poll` must see it.
    FetchRepeatsFirstBatch,
    /// The group coordinator takes any OffsetCommit without checking the member and its
    /// generation, so a member the group moved on without (a zombie) can move a committed
    /// offset back under the partition's new owner.
    CommitIgnoresGeneration,
    /// The log cleaner keeps the first record of each key in its dirty range instead of the
    /// last, so a key's latest value can be compacted away under an older one.
    CleanerKeepsFirstValue,
    /// The idempotent-producer check compares a batch only with the producer's last batch, and
    /// refuses only sequences ahead of the next expected one: a retry of an older batch still
    /// in the five-batch window is appended again. Invisible with one batch in flight (the
    /// only retry is of the last batch); with several, a retry after a lost answer duplicates.
    DuplicateCheckLastBatchOnly,
    /// The recovery-point checkpoint is written over the old file in place (no temporary file,
    /// no sync, no rename) — at every open of a replica's log and at every later checkpoint —
    /// so a power loss can leave it empty or torn, and the next open refuses the replica's log.
    CheckpointInPlace,
    // Re-planted: safety bugs the simulator, its reviewers and its tests found and that were
    // fixed (issue 11 item 2: fresh seeds must find each again; docs/simulation.md, "Which bugs fresh seeds find").
    /// A broker takes roles from the metadata it replayed before its own new registration is
    /// in the image: restarted after a power loss, it leads its emptied log on stale metadata
    /// and its followers truncate to it (found by a 3-broker sweep, seed 111).
    RolesBeforeRegistration,
    /// An acks=all produce whose leadership ended while it waited is answered
    /// FENCED_LEADER_EPOCH, a definite error, though it was appended and may survive (seed 54).
    DelayedProduceFenced,
    /// The controller elects a broker it has not heard from since it started, which may have
    /// restarted and lost its log while no controller watched (the `heard` rule).
    ElectsUnheardBroker,
    /// KIP-966 without its unclean-shutdown check: a broker that registers again after a power
    /// loss stays in the ELR, so the last ISR member that lost unflushed records can be elected
    /// from it (with `eligible.leader.replicas.enable`; the matrix's ELR rows catch it).
    ElrKeepsUncleanReplica,
    /// No check-quorum: the single controller voter, cut off, fences every other broker and
    /// elects itself for everything; its power loss then loses committed records (seed 470).
    NoCheckQuorum,
    /// ISR proposals left unsent after an earlier one failed stay in flight forever, so the
    /// ISR never changes again and acks=all writes fail after healing (seed 211).
    UnsentIsrChangeStaysInFlight,
    /// KIP-279 truncation stops after one round even when the leader answered an older epoch
    /// than this replica's latest: the follower keeps a divergent tail.
    TruncationStopsAfterOneRound,
    /// A follower fetch handled again after waiting counts as new progress: a fetch parked
    /// before the follower crashed keeps it "caught up", and an emptied follower re-enters
    /// the ISR (reviewer, scenarios/regression/replication-stale-follower-progress.toml).
    ParkedFetchIsProgress,
    /// A lost AlterPartition answer counts as a refusal: the expansion, perhaps committed, leaves
    /// the maximal ISR and the high watermark passes the new member, which may later be
    /// elected without those records (reviewer, replication-lost-isr-answer.toml).
    LostIsrAnswerIsRefusal,
    /// KAFKA_STORAGE_ERROR from the controller's metadata log counts as a refusal, though the
    /// ISR change may be in its log (the second replication review).
    ControllerStorageErrorIsRefusal,
    /// A Partition record at the partition epoch the leader already holds (its own committed
    /// ISR change, arriving after the answer) clears the next ISR change in flight, so the high
    /// watermark can pass a member the controller may add (session 7's reviewer finding).
    SameEpochRecordClearsInFlight,
    /// A leader whose partition log failed (EIO) keeps its leadership for the whole fault
    /// instead of registering anew, so healthy replicas wait and writes fail (reviewer).
    FailedLeaderKeepsLeadership,
    /// A partition whose log failed (EIO, a failed fsync) stays offline until the process
    /// restarts instead of being reopened once the disk answers (found by `write_liveness`).
    OfflineLogStaysOffline,
    // The metadata quorum's Raft rules (controller::raft's own planted bugs, run in the whole
    // simulated cluster: issue 10 item 6).
    /// A voter grants a vote, and a candidate counts its own, before the vote is synced: a
    /// power loss forgets it, and the voter votes again in the same epoch.
    RaftVoteBeforeSync,
    /// A leader commits an entry of an earlier epoch once a majority holds it (Raft's figure
    /// 8): a later leader may overwrite it.
    RaftCommitOldEpochByCount,
    /// A voter's term and vote are written without a sync yet counted durable ("grant a vote
    /// without syncing it"): a power loss takes its vote back, and it may vote again.
    RaftStateUnsynced,
    // Kinds no fault mix reached before issue 26 (its item 3): each is found by fresh seeds of
    // the scenario made to reach it (docs/scenarios.md, "Fresh seeds, every night").
    /// `flush.messages=1` honoured only every 32 records (set when the node is built, as
    /// `EveryMessages(32)`): a batch is acknowledged before its fsync, so power lost on every
    /// replica holding it at once loses it (`scenarios/fast/fsync-power-bursts.toml`).
    FlushSkipsBatches,
    /// A log fsyncs the data directory above it instead of its own (set when the node is
    /// built, at the simulated disk's edge): a new segment, a renamed checkpoint or a
    /// recreated partition file can lose its name to a power loss although its bytes were
    /// synced. A disk that commits every directory's entries at any directory fsync (ext4's one
    /// journal, SimDisk before issue 26) hides it; per-directory durability shows it.
    LogSyncsParentDir,
    /// KIP-966 without its leader-side rule: with `eligible.leader.replicas.enable` the high
    /// watermark still moves while the ISR is below `min.insync.replicas` (chosen where the
    /// broker configures each partition, `BrokerConfig::strict_min_isr`), so an ELR member
    /// elected later lacks records below the mark that consumers read
    /// (`scenarios/fast/elr-last-replica-standing.toml`).
    ElrWithoutStrictMinIsr,
    /// The group coordinator takes an OffsetCommit from a current member carrying a generation
    /// the group has left (its commit raced a rebalance) as if it were current, instead of
    /// ILLEGAL_GENERATION: offsets read in an old generation land under the partition's new
    /// owner (`scenarios/groups/commit-lag.toml`).
    CommitAcceptsOlderGeneration,
    /// The group coordinator answers such a stale commit ILLEGAL_GENERATION but writes its
    /// offsets all the same: the member is told "not committed" about an offset the group now
    /// holds, and the partition's next owner starts there (`scenarios/groups/commit-lag.toml`).
    StaleCommitWrittenAnyway,
    /// acks=all answered once the high watermark reaches the batch's last offset rather than
    /// passes it (`hw >= last` for `hw > last`). The mark sits on batch boundaries, so only a
    /// one-record batch is hit: it is acknowledged while no follower has it, and a leader
    /// failure then loses it (`scenarios/fast/one-record-batches.toml`).
    AcksAllAtLastOffset,
    /// The producer state recognises a retry only of each producer's last batch (a window of
    /// one for Kafka's five) and refuses any other sequence but the next, as Kafka refuses a
    /// sequence older than its window: a retry of an older batch in flight, appended before
    /// its answer was lost, is answered OUT_OF_ORDER_SEQUENCE_NUMBER, so the producer is told
    /// "refused" about a batch in the log (set when the node is built:
    /// `BrokerConfig::producer_window`; `refused_retry` on `idempotent-in-flight`).
    ProducerWindowOfOne,
    /// A partition leader writes a COMMIT marker when a coordinator asks for an ABORT, so an
    /// aborted transaction's records become visible to read_committed consumers
    /// (`txn_aborted_read` on `transactions`).
    AbortMarkerCommits,
    /// A partition leader takes a transaction version 2 marker at the producer's current epoch
    /// while a transaction of it is open there, as Kafka 4.0 and 4.1 did before KIP-1228: with
    /// KIP-890 on, a late marker of an earlier transaction ends the open one
    /// (`txn_lost_write`, `txn_torn` or `txn_aborted_read` on `anomalies/late_marker` at
    /// `--transaction-version 2`).
    MarkerEqualEpochAccepted,
    /// A partition leader writes an ABORT marker when a coordinator asks for a COMMIT, so a
    /// transaction whose commit was acknowledged is gone on every partition alike (caught by
    /// `txn_lost_write` alone on `transactions`: nothing is torn, nothing aborted shows).
    CommitMarkerAborts,
    /// Fetch with read_committed reads to the high watermark, past the last stable offset: a
    /// consumer sees open transactions' records before their markers. Where no transaction
    /// aborts, only `txn_wr_cycle` sees it, when two consume-transform-produce transactions
    /// read each other's records (`scenarios/transactions/ring.toml`).
    ReadCommittedPastLso,
    /// The group coordinator makes an aborted transaction's offsets (TxnOffsetCommit) the
    /// group's, as a committed one's: a processor that starts over resumes past input whose
    /// output was aborted (`exactly_once` on `scenarios/transactions/processors.toml`).
    TxnOffsetsKeptOnAbort,
    /// A partition's last stable offset is held back by the latest transaction open there
    /// instead of the earliest (set when the node is built: `BrokerConfig::lso_held_by`): when
    /// the later of two open transactions ends, the offset steps back to the earlier one's
    /// start, and read_committed consumers were shown the earlier one's open records
    /// (`lso_monotonic` alone on `transactions`).
    LsoFromLatestOpenTxn,
    /// The transaction coordinator fences a transaction whose commit markers are still on
    /// their way when its producer inits again (set when the node is built:
    /// `BrokerConfig::prepared_commits`), as it fences an open one: aborted at the next epoch,
    /// instead of CONCURRENT_TRANSACTIONS until the commit is written everywhere. The
    /// partitions the COMMIT reached keep it and the rest get ABORT. A producer inits again
    /// with its commit's markers still out only when it gave up waiting for the EndTxn answer,
    /// so the transaction's outcome is unknown to it and only `txn_torn` can tell
    /// (`transactions/impatient-commit`).
    InitFencesPreparedCommit,
    /// The authorizer skips DENY ACLs (`security::acl::Denies::Ignored`): a principal denied
    /// an operation is let through by an allow that also covers it (issue 28 item 5).
    AclDenyIgnored,
    /// The controller completes a reassignment without waiting for the new replicas to catch
    /// up: it drops the old replicas and puts the adding ones into the ISR at once
    /// (`controller::rules`), so a partition moved onto empty replicas loses its records
    /// (`scenarios/fast/reassign.toml`).
    ReassignmentSkipsCatchUp,
    /// The quota manager hands out a throttle's seconds where `throttle_time_ms` counts ms
    /// (set when the node is built: `BrokerConfig::throttle_unit`), so a client over its quota
    /// is told, and muted for, a thousandth of its wait: it writes at the rate it offers
    /// (`quota_respected` on `scenarios/fast/quotas.toml`).
    ThrottleInSeconds,
    /// The group coordinator gives a KIP-848 member a partition as soon as the group's target
    /// moves it, without waiting for its owner's heartbeat to say it let the partition go
    /// (`group::rules`): for a while two members consume it (`group_owners` on
    /// `scenarios/groups/kip848-churn.toml`).
    ReconcileSkipsRevocation,
    /// The brokers' `group.share.delivery.count.limit` is off (chosen when the node is built):
    /// a record released every time it is delivered is delivered again and again instead of
    /// being archived at the limit (`share_delivery` on `scenarios/groups/share-churn.toml`).
    ShareDeliveryLimitOff,
    /// A share-partition leader tells members what they acquired, and that their
    /// acknowledgements were taken, without waiting for the state's write (`share::leader`'s
    /// invariant broken): a leader that fails before writing leaves its successor a state that
    /// never saw them (`share_delivery`: counts that do not go up, accepted records handed out
    /// again).
    ShareTellsBeforeWrite,
}

impl PlantedBug {
    /// Every planted bug, so a name read back from a trace finds its bug.
    pub const ALL: &'static [PlantedBug] = &[
        PlantedBug::AckBeforeAppend,
        PlantedBug::FetchAboveHighWatermark,
        PlantedBug::AcksAllWithoutIsr,
        PlantedBug::FollowerSkipsTruncation,
        PlantedBug::FailAfterAppend,
        PlantedBug::ConsumersReadToLogEnd,
        PlantedBug::FetchRepeatsFirstBatch,
        PlantedBug::CommitIgnoresGeneration,
        PlantedBug::CleanerKeepsFirstValue,
        PlantedBug::DuplicateCheckLastBatchOnly,
        PlantedBug::CheckpointInPlace,
        // Re-planted (see the enum).
        PlantedBug::RolesBeforeRegistration,
        PlantedBug::DelayedProduceFenced,
        PlantedBug::ElectsUnheardBroker,
        PlantedBug::NoCheckQuorum,
        PlantedBug::UnsentIsrChangeStaysInFlight,
        PlantedBug::TruncationStopsAfterOneRound,
        PlantedBug::ParkedFetchIsProgress,
        PlantedBug::LostIsrAnswerIsRefusal,
        PlantedBug::ControllerStorageErrorIsRefusal,
        PlantedBug::SameEpochRecordClearsInFlight,
        PlantedBug::FailedLeaderKeepsLeadership,
        PlantedBug::OfflineLogStaysOffline,
        PlantedBug::RaftVoteBeforeSync,
        PlantedBug::RaftCommitOldEpochByCount,
        PlantedBug::RaftStateUnsynced,
        PlantedBug::ElrKeepsUncleanReplica,
        PlantedBug::FlushSkipsBatches,
        PlantedBug::LogSyncsParentDir,
        PlantedBug::ElrWithoutStrictMinIsr,
        PlantedBug::CommitAcceptsOlderGeneration,
        PlantedBug::StaleCommitWrittenAnyway,
        PlantedBug::AcksAllAtLastOffset,
        PlantedBug::ProducerWindowOfOne,
        PlantedBug::AbortMarkerCommits,
        PlantedBug::MarkerEqualEpochAccepted,
        PlantedBug::CommitMarkerAborts,
        PlantedBug::ReadCommittedPastLso,
        PlantedBug::TxnOffsetsKeptOnAbort,
        PlantedBug::LsoFromLatestOpenTxn,
        PlantedBug::InitFencesPreparedCommit,
        PlantedBug::AclDenyIgnored,
        PlantedBug::ReassignmentSkipsCatchUp,
        PlantedBug::ThrottleInSeconds,
        PlantedBug::ReconcileSkipsRevocation,
        PlantedBug::ShareDeliveryLimitOff,
        PlantedBug::ShareTellsBeforeWrite,
    ];

    /// The bug named `name` (its variant name, as traces record it).
    pub fn named(name: &str) -> Option<PlantedBug> {
        PlantedBug::ALL.iter().copied().find(|b| format!("{b:?}") == name)
    }
}

/// The bug planted in a simulated run, for decision structs other than the broker's config.
/// Zero-sized in the real build, where [`Planted::is`] is a constant `false`.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Planted(#[cfg(madsim)] pub Option<PlantedBug>);

impl Planted {
    /// Whether `bug` is the planted one.
    #[inline]
    pub fn is(self, bug: PlantedBug) -> bool {
        #[cfg(madsim)]
        return self.0 == Some(bug);
        #[cfg(not(madsim))]
        {
            let _ = bug;
            false
        }
    }
}
