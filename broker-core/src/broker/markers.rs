//! Transactions at a partition leader: the markers (WriteTxnMarkers) that end a producer's
//! transaction here, refused from an older producer epoch or an older coordinator, appended and
//! replicated like any batch, an abort also entering the log's aborted-transaction index
//! (docs/transactions.md, 2.1); and the producers a leader knows (DescribeProducers, KIP-664,
//! how an operator finds a hanging transaction). What a coordinator sends and when is not
//! decided here.

use super::partition::Produced;
use super::producer::ProducerView;
use super::{Action, Broker, Error};
use crate::kafka::TxnVersion;
use crate::log::batch::{self, control::{self, MarkerKind}};

impl Broker {
    /// Appends the marker ending `producer_id`'s transaction (at `epoch`, under transaction
    /// version `tv`, from the coordinator in `coordinator_epoch`) as the leader, and answers where it landed; the caller then
    /// waits for [`Broker::replicated`] as for an acks=all produce (Kafka writes markers with
    /// acks=all, so NOT_ENOUGH_REPLICAS below min.insync.replicas). A marker for a producer with
    /// nothing open here is appended all the same.
    #[allow(clippy::too_many_arguments)]
    pub fn write_marker(&mut self, name: &str, p: i32, (producer_id, epoch, tv): (i64, i16, TxnVersion), kind: MarkerKind, coordinator_epoch: i32, now: u64, out: &mut Vec<Action>) -> Result<Produced, Error> {
        let me = self.config.node_id;
        let Some((topic, part)) = self.partitions.get_mut_named(name, p) else { return Err(self.missing(name, p)) };
        part.check_lead(-1)?;
        let (isr, min) = (part.replication.isr.len() as i32, part.min_insync);
        if isr < min {
            return Err(Error::NotEnoughReplicas { isr, min });
        }
        part.producers.check_marker(producer_id, epoch, self.config.rules().marker_checked_as(tv), coordinator_epoch)?;
        let kind = self.config.rules().marker_written(kind);
        let leader_epoch = part.replication.leader_epoch;
        let mut bytes = control::build_marker(producer_id, epoch, kind, coordinator_epoch, now as i64);
        let appended = part.log.append(&mut bytes, leader_epoch, now);
        if appended.is_err() {
            self.due.logs.note(topic, p, &part.log, part.high_watermark());
        }
        let info = appended?;
        let stamped = batch::read_header(&bytes)?;
        part.record_appended(&stamped, &bytes)?;
        part.after_leader_append(&self.config.observer, me, name, p, now, out);
        self.due.logs.note(topic, p, &part.log, part.high_watermark());
        Ok(Produced { base_offset: info.base_offset, last_offset: info.last_offset, log_start_offset: part.log_start_offset(), leader_epoch, log_append_time: -1, duplicate: false, log: Some(part.log.serial()) })
    }

    /// The producers this leader knows for the partition (DescribeProducers).
    pub fn describe_producers(&self, name: &str, p: i32) -> Result<Vec<ProducerView>, Error> {
        let part = self.led(name, p, -1)?;
        Ok(part.producers.describe())
    }
}
