//! Every limit and default of the broker, in one place, units last, each with the reason for
//! its value. Kafka's name for the setting is given where one exists.
//! Names are lower case, units last (TigerBeetle's `constants.zig` habit): they read as values.

/// Size of a v2 record batch header (baseOffset .. recordsCount). Fixed by the format.
pub const batch_header_bytes: usize = 61;

/// Bytes before a batch's `batchLength` field counts (baseOffset + batchLength).
pub const batch_log_overhead_bytes: usize = 12;

/// Largest batch the log accepts. Kafka `message.max.bytes` default (1 MiB + log overhead):
/// bigger batches are a client misconfiguration, answered with MESSAGE_TOO_LARGE.
pub const message_bytes_max: usize = 1_048_588;

/// Producer-state snapshots a log keeps (`log::snapshots`): the newest, and one older in case
/// the newest is torn by a crash or lies above a truncation. Kafka keeps one per segment.
pub const producer_snapshots_kept: usize = 2;

/// Largest producer-state snapshot read back: 10 bytes plus 46 per remembered batch, five per
/// producer; 64 MiB is some 290,000 producers, far past what one partition sees between
/// expirations. A bigger file is damaged, and the next older snapshot or a replay serves.
pub const producer_snapshot_bytes_max: u64 = 64 << 20;

/// Kafka `log.segment.bytes` default: 1 GiB per segment file.
pub const segment_bytes_default: u64 = 1 << 30;

/// Kafka `log.roll.ms` default: 7 days.
pub const segment_ms_default: u64 = 7 * 24 * 3600 * 1000;

/// Kafka `log.index.interval.bytes` default: one sparse index entry per 4 KiB of log, so a
/// lookup scans at most ~4 KiB of batch headers after the binary search.
pub const index_interval_bytes_default: u64 = 4096;

/// Kafka `log.retention.ms` default: 7 days.
pub const retention_ms_default: i64 = 7 * 24 * 3600 * 1000;

/// Kafka `log.retention.bytes` default: unlimited (-1).
pub const retention_bytes_default: i64 = -1;

/// Segments hold offsets relative to their base as u32 in the indexes (Kafka's rule), so a
/// segment may span at most this many offsets before it must roll.
pub const segment_offsets_max: i64 = u32::MAX as i64;

/// Segment files must stay addressable by the u32 positions of the offset index.
pub const segment_bytes_max: u64 = i32::MAX as u64;

/// Smallest segment size a config may ask for: below this every batch would roll (Kafka's
/// `log.segment.bytes` minimum is 14 bytes; we require room for one header).
pub const segment_bytes_min: u64 = batch_header_bytes as u64;

/// Offset index entry: relative offset (u32) + position (u32), big-endian, as Kafka writes it.
pub const offset_index_entry_bytes: usize = 8;

/// Index entries buffered in memory before they are written to the index file as one append
/// (they are always written before a sync). 128 entries cover ~512 KiB of log at the default
/// interval: one small write per half MiB instead of one per 4 KiB.
pub const index_write_entries: usize = 128;

/// Time index entry: timestamp (i64) + relative offset (u32), big-endian, as Kafka writes it.
pub const time_index_entry_bytes: usize = 12;

/// Sector size of the disk model: the unit a power loss can tear a write at.
pub const sector_bytes: usize = 512;

/// Chunk size when scanning a segment during recovery: big enough to amortise reads, small
/// enough to keep recovery memory bounded whatever the segment size.
pub const recovery_read_bytes: usize = 1 << 20;

const _: () = assert!(message_bytes_max as u64 <= segment_bytes_max);
const _: () = assert!(segment_bytes_default <= segment_bytes_max);
const _: () = assert!(batch_header_bytes > batch_log_overhead_bytes);

/// Most partitions a topic may have here: every partition holds open files and memory, and a
/// single node serving more is a misconfiguration, not a workload.
pub const partitions_per_topic_max: i32 = 10_000;

/// Partitions one broker holds at most, over all topics: each holds open files and memory, so
/// auto-creation or CreateTopics must not be able to exhaust the process.
pub const partitions_per_broker_max: usize = 20_000;

/// Kafka `socket.request.max.bytes`: a frame longer than this closes the connection before
/// anything is allocated for it.
pub const request_bytes_max: usize = 100 * 1024 * 1024;

/// Most bytes the records of one gzip or snappy batch may decompress to. The broker looks
/// inside compressed batches (to validate them on append, and when compacting), and every
/// decompressed byte is memory: a 100-byte snappy batch can declare 4 GiB, a gzip stream
/// inflate a thousandfold. 64 MiB is 64 times `message.max.bytes`, above what clients'
/// batch sizes (librdkafka's `batch.size` is 1 MB of records) ever make; larger ones are
/// refused as CORRUPT_MESSAGE. Kafka has no such bound and relies on its heap limit.
pub const batch_decompressed_bytes_max: usize = 64 * 1024 * 1024;

const _: () = assert!(batch_decompressed_bytes_max >= message_bytes_max);

/// Kafka `num.partitions` default for auto-created topics.
pub const num_partitions_default: i32 = 1;

/// A decision that holds the node's gate this long (ms, wall time, real build only) is logged
/// as a warning with its call site: every request of the node waited for it (issue 32's bound).
pub const slow_decision_ms: u128 = 100;

/// How often the shell runs time-driven log work (flush.ms, retention) when no deadline is
/// nearer (Kafka's `log.retention.check.interval.ms` is 5 minutes; this also drives flush.ms).
pub const tick_interval_ms: u64 = 100;

/// Kafka `log.flush.offset.checkpoint.interval.ms`: how often recovery points are written.
pub const checkpoint_interval_ms: u64 = 60_000;

/// At most this many changed logs are staged, or committed, in one decision of a periodic
/// checkpoint; the rest in the decisions after it, with other requests decided in between.
/// Each writes a few files (a producer snapshot, index entries, the checkpoint's temporary
/// file) or renames one, which under writeback wait on the file system's journal: 8,000 logs
/// staged in one decision held a node's gate 3.8 s, 256 a decision 0.1–0.75 s
/// (docs/benchmarks.md, 0.4–3 ms a log).
pub const checkpoint_logs_per_decision: usize = 32;

/// How long a partition whose log went offline (failed fsync or write) waits between attempts
/// to reopen it: long enough not to hammer a failing disk, short enough to heal quickly.
pub const failed_log_reopen_ms: u64 = 1_000;

/// Kafka `fetch.max.bytes` (55 MiB): the most one fetch response carries, whatever the request
/// asks, so a request cannot make the broker allocate more.
pub const fetch_bytes_max: usize = 55 * 1024 * 1024;

const _: () = assert!(fetch_bytes_max <= i32::MAX as usize);

/// The most one `sendfile` call of a zero-copy fetch asks to send: the call runs on a runtime
/// worker, and on a non-blocking socket it stops when the socket buffer is full anyway; a bound
/// keeps one call from holding the worker for a whole 55 MiB answer read from a cold disk.
pub const sendfile_bytes_max: usize = 4 * 1024 * 1024;

/// Kafka `connections.max.idle.ms`: a connection with no request for this long is closed.
pub const connection_idle_ms_max: u64 = 10 * 60 * 1000;

/// Time a client has to deliver the rest of a request once its size prefix arrived; a client
/// that stops mid-request would otherwise hold its connection and buffer forever.
pub const request_body_ms_max: u64 = 30_000;

/// Open client connections at most (Kafka `max.connections` is unbounded by default; a bound
/// keeps tasks and buffers finite). Connections past it are closed at once, with a log line.
pub const connections_max: usize = 10_000;

/// The read buffer a connection keeps between requests (server::connection). Produce batches
/// of librdkafka's defaults and every other client request fit in it, and one read takes a
/// pipelining client's burst; a larger request grows the buffer as its bytes arrive (never past
/// its frame) and the grown buffer is released once the request is answered.
pub const connection_read_buffer_bytes: usize = 16 * 1024;

/// The write buffer of a connection: answers queue in it until a flush, so a pipelined burst
/// goes out in one write; a larger answer (a fetch's header and framing, not its records, which
/// go by `sendfile`) is written past it.
pub const connection_write_buffer_bytes: usize = 16 * 1024;

/// What one open connection may cost the broker's memory between requests: its task (at most
/// `connection_task_bytes_max`), the runtime's registration of its socket, and the allocator's
/// rounding; no buffer (server::connection takes its two buffers for a burst of requests and
/// gives them back after). 1,000 idle connections cost at most 1,000 times this; the real
/// broker's RSS is held to it by tests/all/many_connections.rs (measured: about 5 KiB).
pub const connection_idle_bytes_max: usize = 16 * 1024;

/// The size of a connection task's future (server::connection; asserted at every spawn in debug
/// builds): the state it holds across every await of reading, answering and writing.
pub const connection_task_bytes_max: usize = 8 * 1024;

const _: () = assert!(connection_task_bytes_max < connection_idle_bytes_max);

/// Requests read from their connections and not yet through their first decision, over all
/// connections (Kafka's `queued.max.requests`, 500 there): a connection reads a request only
/// with a turn, and gives it back once the request is decided, parked or waiting, or while it
/// waits for more of the request's bytes. So memory under load is bounded by this count of
/// requests, not by the number of connections, and a request is checked while its bytes are
/// still in the CPU's caches (64 batches of 10 KiB are 640 KiB), not after a thousand others.
/// A few per runtime worker keep the decision lock busy.
pub const requests_read_max: usize = 64;

/// After a failed accept (EMFILE: out of file descriptors) the listener waits this long before
/// the next: retrying at once spins a core and floods the log while nothing has freed a slot.
pub const accept_error_backoff_ms: u64 = 100;

/// Kafka `replica.lag.time.max.ms` default: a follower not caught up for 30 s leaves the ISR.
pub const replica_lag_ms_default: u64 = 30_000;

/// Kafka `broker.session.timeout.ms` default: the controller fences a broker whose heartbeats
/// stopped 9 s ago, and moves its leaderships.
pub const session_timeout_ms_default: u64 = 9_000;

/// Kafka `broker.heartbeat.interval.ms` default.
pub const heartbeat_interval_ms_default: u64 = 2_000;

const _: () = assert!(heartbeat_interval_ms_default * 3 <= session_timeout_ms_default);

/// Kafka `replica.fetch.wait.max.ms`: how long a follower's fetch waits at the leader for
/// data; it bounds how late a follower notices a leader that stopped answering.
pub const replica_fetch_wait_ms: u64 = 500;

/// Kafka `max.incremental.fetch.session.cache.slots` default: fetch sessions (KIP-227) a
/// leader keeps (broker::fetch_session). Each holds one fetcher's partitions, so the cache is
/// bounded by sessions times the partitions one Fetch can name.
pub const fetch_sessions_max: usize = 1000;

/// Kafka `min.incremental.fetch.session.eviction.ms` default: a session unused this long may
/// give its slot to a new one.
pub const fetch_session_eviction_ms: u64 = 120_000;

/// Kafka `replica.fetch.max.bytes`: bytes a follower asks for per partition per fetch.
pub const replica_fetch_bytes: i32 = 1 << 20;

/// How long the controller link and replica fetchers wait for an answer before dropping the
/// connection and reconnecting (Kafka `replica.socket.timeout.ms` is 30 s; a dead peer must be
/// noticed well within a session timeout).
pub const peer_request_ms_max: u64 = 5_000;

/// Pause before a controller link or replica fetcher reconnects after a failure, so a dead
/// peer is not hammered (Kafka `reconnect.backoff.ms` is 50 ms; `replica.fetch.backoff.ms` 1 s).
pub const peer_backoff_ms: u64 = 100;

/// Bytes of metadata log a broker asks for per fetch from the controller.
pub const metadata_fetch_bytes: i32 = 1 << 20;

/// Longest wait a produce with acks=all may ask for (its `timeout_ms` is capped to this), so a
/// request cannot hold its connection forever.
pub const produce_wait_ms_max: u64 = 300_000;

/// How long AlterConfigs and IncrementalAlterConfigs wait for this node's broker to apply the
/// committed change before answering anyway: they carry no timeout, and clients give up after
/// `request.timeout.ms` (30 s by default) whatever the broker does.
pub const alter_configs_wait_ms: u64 = 30_000;

/// How long client requests wait at startup for the broker to be registered and unfenced
/// before they are answered anyway (with whatever errors apply): a broker whose controller is
/// unreachable must still answer.
pub const startup_wait_ms_max: u64 = 10_000;

/// How long a leader waits before proposing an ISR change again after the controller refused
/// it or could not be reached: the condition (a fenced replica, a controller restarting) rarely
/// changes faster, and each proposal is a metadata request.
pub const isr_change_retry_ms: u64 = 1_000;

/// Largest metadata batch (one controller decision) the metadata log accepts. A decision over
/// every partition of the largest topic, or a fence of a broker leading `partitions_per_broker_max`
/// partitions, is ~200 bytes of JSON per partition: 20,000 × 200 B = 4 MB, with room to spare.
/// Brokers fetch it whole (the first batch of a fetch may exceed the fetch size, KIP-74).
pub const metadata_batch_bytes_max: usize = 32 * 1024 * 1024;

const _: () = assert!(metadata_batch_bytes_max as u64 <= segment_bytes_default);

/// Kafka `group.min.session.timeout.ms` default: a consumer asking for a shorter session is
/// refused (INVALID_SESSION_TIMEOUT), so a flapping client cannot make its group rebalance
/// more often than this.
pub const group_min_session_timeout_ms_default: u64 = 6_000;

/// Kafka `group.max.session.timeout.ms` default: 30 minutes, the longest a dead member may
/// hold partitions.
pub const group_max_session_timeout_ms_default: u64 = 1_800_000;

/// Kafka `group.initial.rebalance.delay.ms` default (KIP-134): an empty group's first
/// rebalance waits this long for more members, so a group starting together rebalances once.
pub const group_initial_rebalance_delay_ms_default: u64 = 3_000;

/// `group.max.size` default. Kafka's is unlimited; every member adds its subscription and
/// assignment to the group's stored record, which must fit one batch of the offsets topic.
pub const group_members_max: usize = 1_000;

/// Shortest `share.record.lock.duration.ms` a group config may set: Kafka's lower bound for
/// the broker-level `group.share.*record.lock.duration.ms` settings; a shorter lock would
/// expire before a member could process what it acquired.
pub const share_record_lock_duration_ms_min: u64 = 1_000;

/// Longest `share.record.lock.duration.ms` a group config may set: Kafka's upper bound (1 h)
/// for the same settings; a crashed member's records wait at most this long.
pub const share_record_lock_duration_ms_max: u64 = 3_600_000;

/// Kafka `group.consumer.session.timeout.ms` default: a KIP-848 member not heard from this
/// long leaves its group.
pub const group_consumer_session_timeout_ms_default: u64 = 45_000;

/// Kafka `group.consumer.heartbeat.interval.ms` default: the interval KIP-848 members are told.
pub const group_consumer_heartbeat_interval_ms_default: u64 = 5_000;

/// Kafka `group.share.session.timeout.ms` default: a share-group member not heard from this
/// long leaves its group.
pub const group_share_session_timeout_ms_default: u64 = 45_000;

/// Kafka `group.share.heartbeat.interval.ms` default: the interval share-group members are told.
pub const group_share_heartbeat_interval_ms_default: u64 = 5_000;

/// Kafka `group.share.max.size` default: members one share group admits.
pub const group_share_max_size_default: usize = 200;

/// Kafka `group.share.record.lock.duration.ms` default: how long a member holds records it
/// acquired before they become available again.
pub const group_share_record_lock_duration_ms_default: u64 = 30_000;

/// Kafka `group.share.delivery.count.limit` default: a record delivered this often and then
/// released (or timed out) is archived, not delivered again.
pub const group_share_delivery_count_limit_default: i16 = 5;

/// Kafka `group.share.partition.max.record.locks` default: records of one share-partition in
/// flight at once (from its start offset to its end), which bounds its memory.
pub const group_share_partition_max_record_locks_default: i64 = 2_000;

/// Kafka `group.share.max.share.sessions` default: share sessions one broker keeps.
pub const group_share_max_share_sessions_default: usize = 2_000;

/// Largest span of offsets a share-partition's stored state may cover (WriteShareGroupState
/// beyond it is INVALID_REQUEST): a leader holds at most `group.share.partition.max.record.locks`
/// (10,000 at most) in flight, plus the rest of one batch; a million leaves room and bounds
/// what a restore builds.
pub const share_state_span_max: i64 = 1_000_000;

/// Most bytes of one partition's log a ShareFetch reads (at least one whole batch): what it
/// hands out is bounded by `max_records` (librdkafka asks 500) and the rest of the read is
/// thrown away, so reading up to the client's `max_bytes` (50 MiB by default) would cost in
/// proportion to what is left of the partition (scripts/bench-share.sh found 0.2x a consumer
/// group's rate at 1M records for that).
pub const share_read_bytes_max: usize = 1 << 20;

/// How long a share-partition leader waits before writing its state again after a write the
/// coordinator did not take (it moved, it was loading, the link failed).
pub const share_state_retry_ms: u64 = 200;

/// Most distinct share-partitions one AlterShareGroupOffsets may name (beyond: INVALID_REQUEST
/// before anything is allocated): all of them are one batch in `__consumer_offsets`, and at
/// about 60 bytes a state record (short group ids) 10,000 is what one `message_bytes_max`
/// batch can hold; Kafka's own admin tools alter one topic's partitions at a time.
pub const share_offsets_alter_partitions_max: usize = 10_000;

/// Most groups one DescribeShareGroupOffsets may name (those beyond are answered
/// INVALID_REQUEST without a lookup): each is a walk of the group's states under the
/// coordinator's lock, and Kafka's admin client asks a handful at a time.
pub const share_offsets_describe_groups_max: usize = 1_000;

/// Kafka `offsets.retention.minutes` default: 7 days.
pub const offsets_retention_ms_default: u64 = 7 * 24 * 3600 * 1000;

/// Kafka `offsets.retention.check.interval.ms` default: how often expired offsets are looked for.
pub const offsets_retention_check_ms: u64 = 600_000;

/// Kafka `offset.metadata.max.bytes` default: the metadata string of one committed offset.
pub const offset_metadata_bytes_max: usize = 4096;

/// Kafka `offsets.topic.num.partitions` default.
pub const offsets_partitions_default: i32 = 50;

/// Kafka `offsets.topic.replication.factor` default (capped by the brokers present).
pub const offsets_replication_factor_default: i16 = 3;

/// Longest group id accepted: ids are stored as i16-length strings in the offsets topic, and
/// no real deployment needs more.
pub const group_id_bytes_max: usize = 1024;

/// Protocols one member may offer in a JoinGroup (clients offer one to three assignors).
pub const group_protocols_max: usize = 32;

/// Largest protocol name plus metadata of one member (a consumer's subscription: topic names
/// and owned partitions). 128 KiB covers thousands of topics.
pub const group_member_metadata_bytes_max: usize = 128 * 1024;

/// Largest assignment the leader may give one member.
pub const group_assignment_bytes_max: usize = 128 * 1024;

/// Bytes of the offsets topic read per load step when a node takes over a partition: a load
/// never holds the broker for more than one such read.
pub const offsets_load_bytes_per_step: usize = 1 << 20;

/// Pause before a transaction marker is sent again after its leader could not write it (no
/// leader, a leader that moved, too few in sync, no answer): Kafka's `retry.backoff.ms`.
pub const txn_marker_retry_ms: u64 = 100;

/// How much longer than its rebalance timeout a JoinGroup may wait: the rebalance completes at
/// its deadline (on the next tick), and the answer must get out before the client, which waits
/// the rebalance timeout plus 5 s, gives up.
pub const group_join_wait_margin_ms: u64 = 2_000;

/// Longest any group request waits for its answer (Kafka's default max.poll.interval.ms, the
/// rebalance timeout clients send).
pub const group_request_wait_ms_max: u64 = 300_000;

/// Longest a transaction coordinator's request waits for its state write to replicate (Kafka's
/// `request.timeout.ms` default, which bounds its coordinator's appends); then it is answered
/// COORDINATOR_NOT_AVAILABLE and the client asks again.
pub const txn_request_wait_ms_max: u64 = 30_000;

/// How long the operator tools (`seedlog groups`) wait for one broker's answer by default: long
/// enough for a loaded broker, short enough that a dead one is reported while the operator waits.
pub const admin_request_ms_default: u64 = 10_000;

/// Attempts a group query gets while the coordinator answers COORDINATOR_NOT_AVAILABLE (the
/// offsets topic is being created, or the group's partition has no leader),
/// COORDINATOR_LOAD_IN_PROGRESS (a new coordinator is reading the group back) or
/// NOT_COORDINATOR (it moved): these pass within seconds, anything longer is an outage to report.
pub const admin_coordinator_attempts_max: u32 = 8;

/// Pause before the second attempt; it doubles on each retry up to [`admin_backoff_ms_max`]
/// (Kafka's admin client: `retry.backoff.ms` 100, `retry.backoff.max.ms` 1000).
pub const admin_backoff_ms_first: u64 = 100;

/// Longest pause between two attempts.
pub const admin_backoff_ms_max: u64 = 1_000;

// All retries together stay a few seconds: 100 + 200 + 400 + 800 + 1000 × 3 = 4.5 s.
const _: () = assert!(admin_backoff_ms_first <= admin_backoff_ms_max);
const _: () = assert!(admin_coordinator_attempts_max as u64 * admin_backoff_ms_max <= 10_000);

/// Kafka `delete.retention.ms` default: a tombstone is kept a day after the cleaning that
/// reached it, so a consumer that was behind still sees the delete.
pub const delete_retention_ms_default: u64 = 86_400_000;

/// Kafka `min.cleanable.dirty.ratio` default (0.5), in parts per million.
pub const min_cleanable_dirty_ratio_ppm_default: u32 = 500_000;

/// Bytes the log cleaner reads at a time while mapping keys and rewriting segments.
pub const cleaner_read_bytes: usize = 1 << 20;

/// Kafka `log.cleaner.dedupe.buffer.size` default is 128 MiB for all cleaner threads; one pass
/// of this broker's single cleaner maps at most this many bytes of keys (a bigger dirty range
/// takes several passes).
pub const cleaner_key_map_bytes: usize = 32 << 20;

/// Bytes one step of the log cleaner reads and writes before the broker takes requests again
/// (about a millisecond of work): the longest a cleaning pass holds the broker at a time.
pub const cleaner_step_bytes: usize = 256 << 10;

/// Batch size from which a walk that needs only headers reads each one alone (one small read)
/// instead of reading every batch in large chunks: on the benchmark machine a header read cost
/// about 1.5 µs, as much as copying 7–8 KiB out of the page cache (docs/journal/benchmarks.md, session
/// 13), so below this the large chunks are cheaper. Used by the cleaner's rewrite (against the
/// mean batch of its dirty range, for batches that lose every record) and by header scans
/// (against the batch just passed: producer state at open and after a truncation).
pub const header_read_batch_bytes_min: u64 = 8 << 10;

/// Bytes of a replaced segment's file freed by one step of the log cleaner (`log::retired`):
/// about 1.5 ms of the kernel freeing pages and blocks on the benchmark machine (45 ms per
/// 64 MiB with ext4's `discard`), where closing a whole group at once held the broker for
/// a quarter of a second.
pub const retired_slice_bytes: u64 = 2 << 20;

/// Bytes of a cleaned group written between syncs of its `.cleaned` file: the swap's final
/// sync, inside one step, then flushes no more than this.
pub const cleaner_sync_bytes: usize = 8 << 20;

/// A job that only writes staged appends (the write-behind, `log::deferred`) of at most this
/// many bytes runs on the shell's own task instead of the blocking pool: handing a small
/// page-cache write to another thread costs more than the write (every job on the pool
/// measured 64–88 µs of broker CPU per small batch against 10–11). Either way it runs off the
/// node's lock; a small write the kernel throttles blocks the runtime worker running it, and
/// larger writes, which it throttles for longer, get a thread. (Running them in place under
/// `block_in_place` moved the flush-every-batch producer a quarter faster but grew each open
/// connection's RSS past `connection_idle_bytes_max`: more runtime threads and their malloc
/// arenas, docs/benchmarks.md.)
pub const write_inline_bytes_max: u64 = 64 << 10;

/// Kafka `log.cleaner.backoff.ms` default: how long the cleaner waits when no log is due.
pub const log_cleaner_backoff_ms: u64 = 15_000;

/// KRaft `quorum.election.timeout.ms` default: a voter with no leader waits this long plus a
/// random part of it (from the seeded RNG) before asking for pre-votes, so voters rarely time
/// out together and split the vote.
pub const quorum_election_timeout_ms_default: u64 = 1_000;

/// KRaft `quorum.fetch.timeout.ms` default: a follower that has had no answer from its leader
/// for this long starts an election; a leader that has not been fetched from by a majority for
/// 1.5 times this long resigns (check-quorum). Longer than the election timeout so that one
/// lost fetch does not unseat a live leader.
pub const quorum_fetch_timeout_ms_default: u64 = 2_000;

const _: () = assert!(quorum_election_timeout_ms_default < quorum_fetch_timeout_ms_default);

/// KRaft `quorum.election.backoff.max.ms` default: after a lost election a voter waits a random
/// time up to this before trying again, so two candidates stop colliding.
pub const quorum_election_backoff_ms_max_default: u64 = 1_000;

/// KRaft `quorum.request.timeout.ms`: a Fetch or BeginQuorumEpoch not answered within this is
/// sent again. KRaft's default is 2 s, as long as its fetch timeout, so one lost fetch can start
/// an election; half of it lets a follower retry once before it gives its leader up.
pub const quorum_request_timeout_ms_default: u64 = 1_000;

/// How long the Raft leader holds a follower's Fetch that finds nothing new (KRaft's
/// `fetch.max.wait.ms` for the metadata log is 500 ms): new entries or a new high watermark
/// answer it at once, so followers learn commits without polling.
pub const quorum_fetch_wait_ms: u64 = 500;

const _: () = assert!(quorum_fetch_wait_ms < quorum_request_timeout_ms_default);
const _: () = assert!(quorum_request_timeout_ms_default < quorum_fetch_timeout_ms_default);

/// Bytes of entries the Raft leader returns per Fetch (at least one whole entry).
pub const quorum_fetch_bytes: usize = 1 << 20;

/// Largest `quorum-state` file read: a few integer fields; anything bigger is not one.
pub const quorum_state_bytes_max: u64 = 4096;

/// Most voters a Raft quorum may have. KRaft clusters run 1, 3 or 5; more only slows commits.
pub const quorum_voters_max: usize = 7;

/// `metadata.log.max.record.bytes.between.snapshots` default: committed metadata bytes after
/// which a voter writes a snapshot of its image and drops the log before it. Kafka's is 20 MiB
/// of binary records; ours are JSON, about three times larger, and the snapshot of a
/// 4,000-partition cluster is ~1 MB. At 4 MiB a restart replays at most ~20,000 records after
/// the snapshot (a few seconds at the measured rate), while a snapshot is written at most once
/// per ~4 MiB of decisions, so its cost stays a small fraction of the log writes it replaces.
pub const metadata_snapshot_bytes_between_default: u64 = 4 * 1024 * 1024;

/// Largest snapshot file read back or installed: far above any image this broker can hold
/// (`partitions_per_broker_max` partitions × ~200 B), and a bound on what one allocation takes
/// for a corrupt length.
pub const metadata_snapshot_bytes_max: u64 = 512 * 1024 * 1024;

/// Bytes of snapshot per FetchSnapshot answer between voters (KRaft chunks snapshots the same
/// way): a large image crosses in several messages instead of one frame the size of the image.
pub const quorum_snapshot_chunk_bytes: usize = 1 << 20;

/// Snapshots kept in the metadata log directory: the newest and the one before it. The log is
/// kept from the older one's end, so a newest snapshot found damaged at restart falls back to
/// the older one plus the log, and no committed record is lost.
pub const metadata_snapshots_kept: usize = 2;

/// Raft messages waiting in a voter's outbox for the shell to send: beyond this the oldest is
/// dropped (Raft tolerates lost messages; a peer that is down must not make the outbox grow).
/// A voter sends a handful per round to each of at most six others.
pub const quorum_outbox_messages_max: usize = 1_024;

/// Raft messages queued for one peer connection: a peer that is slow or unreachable loses the
/// rest, as a lossy network would, and Raft retries on its timers.
pub const quorum_peer_queue_max: usize = 256;

/// How long a controller request waits for its decision to be committed by the quorum before
/// it is answered NOT_CONTROLLER (the asker retries, perhaps elsewhere): below the peers'
/// `peer_request_ms_max`, so a broker hears the refusal instead of timing out.
pub const controller_commit_wait_ms: u64 = 4_000;

const _: () = assert!(controller_commit_wait_ms < peer_request_ms_max);

/// How long a broker that is not the active controller keeps trying to forward a CreateTopics,
/// DeleteTopics or config change to it (KIP-590), answer included, before it answers the client
/// NOT_CONTROLLER: the request timeout Kafka's clients use by default (30 s), so a forward
/// outlasts an election and the client never waits for nothing.
pub const forward_wait_ms_max: u64 = 30_000;

/// Kafka's `leader.imbalance.check.interval.seconds` default (300 s): how often the active
/// controller moves leadership back to preferred replicas. Long, so a broker that just
/// rejoined an ISR has caught up well before it leads again.
pub const leader_imbalance_check_interval_ms_default: u64 = 300_000;

/// Kafka's `leader.imbalance.per.broker.percentage` default: a broker's leaderships move back
/// once more than 10% of the partitions it is preferred for are led elsewhere.
pub const leader_imbalance_per_broker_percentage_default: u32 = 10;
