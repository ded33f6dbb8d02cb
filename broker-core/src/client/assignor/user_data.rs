//! What the sticky assignors carry in a subscription's `user_data`, in the Java client's
//! formats, and the step from a decoded [`Subscription`] to the [`MemberSubscription`] an
//! assignor reads. Java and librdkafka members write these; a Rust leader must read them to
//! stay sticky for them, and a Rust member must write them for a Java leader.
//!
//! ```text
//! sticky:              previous_assignment:[topic:string partitions:[i32]] generation:i32
//!                      (StickyAssignor's STICKY_ASSIGNOR_USER_DATA_V1; V0 lacks the generation)
//! cooperative-sticky:  generation:i32   (COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0, for leaders
//!                      that read subscriptions older than v2)
//! ```
//!
//! An unreadable user data is never an error for the group: like Java, the member is taken to
//! own nothing, at no known generation, and the assignment goes on.

use bytes::{BufMut, Bytes, BytesMut};

use super::wire::{consumer_protocol_bytes_max, Reader, Subscription, WireError};
use super::{Assignor, MemberSubscription, TopicPartitions};

/// Kafka's `DEFAULT_GENERATION`: the claim's generation is not known.
pub const generation_unknown: i32 = -1;

/// The `user_data` a member puts in its subscription for `assignor`, given what it was last
/// assigned and that assignment's generation. Range and roundrobin carry none.
pub fn subscription_user_data(assignor: Assignor, owned: &TopicPartitions, generation: i32) -> Result<Option<Bytes>, WireError> {
    match assignor {
        Assignor::Range | Assignor::RoundRobin => Ok(None),
        Assignor::Sticky => encode_sticky(owned, generation).map(Some),
        Assignor::CooperativeSticky => Ok(Some(Bytes::copy_from_slice(&generation.to_be_bytes()))),
    }
}

/// What an assignor needs of a member, from its decoded subscription. `sticky` reads the
/// previous assignment from the user data, ignoring `owned` (an eager member revokes everything
/// before it rejoins, so it owns nothing by then: Java's `StickyAssignor.memberData`).
/// `cooperative-sticky` takes `owned`, and the generation from the subscription (v2+) or else
/// from the user data (`CooperativeStickyAssignor.memberData`).
pub fn member_subscription(assignor: Assignor, group_instance_id: Option<String>, sub: &Subscription) -> MemberSubscription {
    let (owned, generation) = match assignor {
        Assignor::Range | Assignor::RoundRobin => (sub.owned.clone(), sub.generation),
        Assignor::Sticky => match sub.user_data.as_deref().filter(|b| !b.is_empty()).map(decode_sticky) {
            Some(Ok((owned, generation))) => (owned, generation.unwrap_or(generation_unknown)),
            Some(Err(_)) | None => (TopicPartitions::new(), generation_unknown),
        },
        Assignor::CooperativeSticky => {
            let generation = if sub.generation >= 0 {
                sub.generation
            } else {
                sub.user_data.as_deref().and_then(|b| decode_cooperative(b).ok()).unwrap_or(generation_unknown)
            };
            (sub.owned.clone(), generation)
        }
    };
    MemberSubscription { group_instance_id, topics: sub.topics.clone(), owned, generation }
}

/// Sticky's user data (V1): the previous assignment and its generation.
pub fn encode_sticky(owned: &TopicPartitions, generation: i32) -> Result<Bytes, WireError> {
    let what = "sticky user data";
    let mut out = BytesMut::new();
    out.put_i32(len_i32(what, owned.len())?);
    for (topic, partitions) in owned {
        let name_len = i16::try_from(topic.len()).map_err(|_| WireError::Encode { what, reason: format!("topic name of {} bytes", topic.len()) })?;
        out.put_i16(name_len);
        out.put_slice(topic.as_bytes());
        out.put_i32(len_i32(what, partitions.len())?);
        for p in partitions {
            out.put_i32(*p);
        }
    }
    out.put_i32(generation);
    if out.len() > consumer_protocol_bytes_max {
        return Err(WireError::TooLarge { what, len: out.len() });
    }
    Ok(out.freeze())
}

/// Sticky's user data, V1 or V0: the previous assignment, and its generation when present.
/// Like Java's reader, V1 is tried first and trailing bytes are ignored, so V0 is "no
/// generation after the assignment".
pub fn decode_sticky(bytes: &[u8]) -> Result<(TopicPartitions, Option<i32>), WireError> {
    let what = "sticky user data";
    if bytes.len() > consumer_protocol_bytes_max {
        return Err(WireError::TooLarge { what, len: bytes.len() });
    }
    let mut r = Reader::new(what, bytes);
    let owned = r.topic_partitions()?;
    let generation = if r.remaining() >= 4 { Some(r.i32()?) } else { None };
    Ok((owned, generation))
}

/// Cooperative-sticky's user data: the generation alone.
pub fn decode_cooperative(bytes: &[u8]) -> Result<i32, WireError> {
    Reader::new("cooperative-sticky user data", bytes).i32()
}

fn len_i32(what: &'static str, n: usize) -> Result<i32, WireError> {
    i32::try_from(n).map_err(|_| WireError::Encode { what, reason: format!("{n} entries") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(list: &[(&str, &[i32])]) -> TopicPartitions {
        list.iter().map(|(t, p)| (t.to_string(), p.to_vec())).collect()
    }

    #[test]
    fn sticky_user_data_round_trips_and_reads_v0() {
        let owned = tp(&[("a", &[0, 2]), ("b", &[1])]);
        let bytes = encode_sticky(&owned, 7).expect("encodes");
        assert_eq!(decode_sticky(&bytes), Ok((owned.clone(), Some(7))));
        // V0 is V1 without the trailing generation.
        assert_eq!(decode_sticky(&bytes[..bytes.len() - 4]), Ok((owned, None)));
        assert!(matches!(decode_sticky(&[0x7f, 0xff, 0xff, 0xff]), Err(WireError::Malformed { .. })));
    }

    #[test]
    fn member_subscription_reads_each_assignors_history() {
        let owned = tp(&[("t", &[1])]);
        let mut sub = Subscription { topics: ["t".to_string()].into(), ..Subscription::default() };
        sub.user_data = subscription_user_data(Assignor::Sticky, &owned, 4).expect("encodes");
        let m = member_subscription(Assignor::Sticky, None, &sub);
        assert_eq!((m.owned, m.generation), (owned.clone(), 4));

        // Cooperative: owned from the subscription; generation from user data below v2.
        sub.owned = owned.clone();
        sub.user_data = subscription_user_data(Assignor::CooperativeSticky, &owned, 9).expect("encodes");
        assert_eq!(member_subscription(Assignor::CooperativeSticky, None, &sub).generation, 9);
        sub.generation = 11;
        assert_eq!(member_subscription(Assignor::CooperativeSticky, None, &sub).generation, 11);

        // Garbage user data: the member owns nothing, and the group goes on.
        sub.user_data = Some(Bytes::from_static(&[1, 2, 3]));
        let m = member_subscription(Assignor::Sticky, Some("i".into()), &sub);
        assert_eq!((m.owned.len(), m.generation, m.group_instance_id.as_deref()), (0, generation_unknown, Some("i")));
    }
}
