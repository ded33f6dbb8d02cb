//! DeleteRecords across replicas: followers take the leader's log start from each fetch
//! answer, and the leader's low watermark (what DeleteRecords waits on) moves only once each
//! live follower has said, in a later fetch, that its own start moved.

use super::*;

#[test]
fn followers_take_the_leaders_start_and_the_low_watermark_waits_for_them() {
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    for _ in 0..4 {
        c.produce(1, &[b"x"]);
    }
    c.catch_up(2);
    assert_eq!((c.hw(1), c.hw(2)), (4, 4));
    c.woke();
    let (offset, epoch) = c.broker(1).delete_records(topic_name, 0, 3, 0).unwrap();
    assert_eq!((offset, c.part(1).log_start_offset()), (3, 3));
    assert_eq!(c.broker(1).low_watermark(topic_name, 0, epoch).unwrap(), 0, "the follower last said its log starts at 0");
    c.round(2);
    assert_eq!(c.part(2).log_start_offset(), 3, "the follower took the leader's start from the answer");
    assert_eq!(c.broker(1).low_watermark(topic_name, 0, epoch).unwrap(), 0, "that fetch still carried the old start");
    assert!(!c.woke(), "nothing moved at the leader");
    c.round(2);
    assert_eq!(c.broker(1).low_watermark(topic_name, 0, epoch).unwrap(), 3);
    assert!(c.woke(), "the waiting DeleteRecords is looked at again");
    assert!(c.broker(1).low_watermark(topic_name, 0, epoch + 1).is_err(), "another leadership's wait ends");
}
