//! The cluster metadata's vocabulary, shared by the broker, the controller and (later) the group
//! coordinator so that none of them imports another: the records of the metadata log, the
//! image they replay into, topics (names, ids, config overrides), and the topic and group configs
//! clients describe and change. Plain data and pure functions: no IO, no clock, no decisions about who
//! leads what.

pub mod configs;
pub mod group_configs;
pub mod image;
pub mod quotas;
pub mod throttles;
pub mod records;
pub mod topic;

pub use image::{BrokerInfo, Image, PartitionInfo, TopicInfo};
pub use records::{decode_records, no_leader, Endpoint, MetadataRecord};

/// The metadata log's directory name under the data directory (Kafka's name).
pub const metadata_dir: &str = "__cluster_metadata-0";

/// The topic name brokers fetch the metadata log under.
pub const metadata_topic: &str = "__cluster_metadata";
