//! The node's time-driven and background work through `Node::input` and `handle`: a periodic
//! checkpoint staged a bounded number of logs a decision and resumed, and the next producer-id
//! block asked for by the request that nears the current block's end.

use super::*;

/// A periodic checkpoint over more changed logs than one decision stages: the tick stages
/// `checkpoint_logs_per_decision` and says where to resume, and `Input::CheckpointMore` stages
/// the rest (the shell's `finish_checkpoint` loops on it before the file-system sync).
#[test]
fn a_tick_stages_a_bounded_checkpoint_and_the_next_input_resumes_it() {
    use crate::constants::checkpoint_logs_per_decision as per;
    let tmp = tempfile::tempdir().unwrap();
    let node = crate::testing::one_node(crate::testing::config(tmp.path()));
    let n = per + 5;
    crate::testing::create(&node, "t", n as i32, Default::default()).unwrap();
    for p in 0..n as i32 {
        node.broker().produce("t", p, &build(&[b"v"], 1), 1, 0, &mut Vec::new()).unwrap();
    }
    let staged = |actions: Vec<Action>| actions.into_iter().find_map(|a| if let Action::SyncCheckpoint(s) = a { Some(s) } else { None });
    let first = staged(node.input(Input::Tick { checkpoint: true }, 1)).expect("staged");
    assert_eq!(first.len(), per);
    let after = first.resume().expect("stopped at its bound");
    let rest = staged(node.input(Input::CheckpointMore { after }, 1)).expect("the rest staged");
    assert_eq!((rest.len(), rest.resume()), (5, None));
}

/// The InitProducerId that takes the 900th id of a block hands out the job persisting the next
/// block itself (not the tick, which a periodic checkpoint holds up), once; the ids go on.
#[test]
fn the_init_producer_id_that_nears_a_blocks_end_asks_for_the_next_block() {
    use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
    use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
    let tmp = tempfile::tempdir().unwrap();
    let node = broker(tmp.path());
    let req = InitProducerIdRequest::default().with_transactional_id(None).with_transaction_timeout_ms(60_000);
    let mut asked = Vec::new();
    for i in 0..950 {
        let mut out = Vec::new();
        let r: InitProducerIdResponse = reply(handle(&node, &frame(ApiKey::InitProducerId, 4, &req), 0, Attempt::First, &mut out), ApiKey::InitProducerId, 4);
        assert_eq!((r.error_code, r.producer_id.0), (0, i), "id {i}");
        asked.extend(out.into_iter().filter_map(|a| if let Action::PersistProducerIds(job) = a { Some((i, job.limit())) } else { None }));
    }
    let prefetch_at = crate::broker::producer_id_block * 9 / 10;
    assert_eq!(asked, [(prefetch_at - 1, 2 * crate::broker::producer_id_block)], "asked once, by the request that left 100 ids");
}
