//! The consumer protocol codec against hand-built bytes (the layout Java writes), round trips at
//! every version, and garbage: every bad input is a typed error, never a panic or a huge
//! allocation.

use bytes::Bytes;

use super::tests::XorShift;
use super::wire::*;
use super::TopicPartitions;

fn tp(list: &[(&str, &[i32])]) -> TopicPartitions {
    list.iter().map(|(t, p)| (t.to_string(), p.to_vec())).collect()
}

fn full_subscription() -> Subscription {
    Subscription {
        topics: ["orders".to_string(), "payments".to_string()].into(),
        user_data: Some(Bytes::from_static(b"\x00\x00\x00\x05")),
        owned: tp(&[("orders", &[0, 3]), ("payments", &[1])]),
        generation: 5,
        rack: Some("rack-a".to_string()),
    }
}

/// What decoding a `version` encoding of `sub` must give: the fields that version lacks at
/// their defaults.
fn as_of_version(sub: &Subscription, version: i16) -> Subscription {
    Subscription {
        topics: sub.topics.clone(),
        user_data: sub.user_data.clone(),
        owned: if version >= 1 { sub.owned.clone() } else { TopicPartitions::new() },
        generation: if version >= 2 { sub.generation } else { -1 },
        rack: if version >= 3 { sub.rack.clone() } else { None },
    }
}

#[test]
fn subscription_round_trips_at_every_version() {
    let sub = full_subscription();
    for version in 0..=subscription_version_max {
        let bytes = encode_subscription(&sub, version).expect("encodes");
        assert_eq!(bytes[..2], version.to_be_bytes(), "version prefix");
        assert_eq!(decode_subscription(&bytes), Ok(as_of_version(&sub, version)), "v{version}");
    }
    let empty = Subscription::default();
    let bytes = encode_subscription(&empty, subscription_version_max).expect("encodes");
    assert_eq!(decode_subscription(&bytes), Ok(empty));
}

#[test]
fn assignment_round_trips_at_every_version() {
    let a = Assignment { partitions: tp(&[("orders", &[1, 2]), ("payments", &[0])]), user_data: None };
    for version in 0..=assignment_version_max {
        let bytes = encode_assignment(&a, version).expect("encodes");
        assert_eq!(decode_assignment(&bytes), Ok(a.clone()), "v{version}");
    }
    let with_data = Assignment { partitions: TopicPartitions::new(), user_data: Some(Bytes::from_static(b"x")) };
    assert_eq!(decode_assignment(&encode_assignment(&with_data, 1).expect("encodes")), Ok(with_data));
}

/// A v0 subscription as Kafka's `ConsumerProtocol` lays it out, byte by byte.
const v0_subscription: &[u8] = &[
    0, 0, // version 0
    0, 0, 0, 2, // two topics
    0, 2, b't', b'1', //
    0, 2, b't', b'2', //
    0xff, 0xff, 0xff, 0xff, // user_data: null
];

#[test]
fn decodes_a_hand_built_v0_subscription() {
    let sub = decode_subscription(v0_subscription).expect("decodes");
    let expected = Subscription { topics: ["t1".to_string(), "t2".to_string()].into(), ..Subscription::default() };
    assert_eq!(sub, expected);
    // And the encoder writes exactly those bytes.
    assert_eq!(encode_subscription(&expected, 0).expect("encodes"), v0_subscription);
}

#[test]
fn decodes_a_hand_built_v1_assignment() {
    let bytes: &[u8] = &[
        0, 1, // version 1
        0, 0, 0, 1, // one topic
        0, 1, b't', // "t"
        0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, // partitions [2, 0], in the order a member may send
        0, 0, 0, 0, // user_data: empty, not null
    ];
    let a = decode_assignment(bytes).expect("decodes");
    assert_eq!(a, Assignment { partitions: tp(&[("t", &[0, 2])]), user_data: Some(Bytes::new()) });
}

#[test]
fn newer_versions_decode_as_the_newest_known() {
    // Kafka reads a version above its newest as its newest: later versions only append.
    let mut bytes = encode_subscription(&full_subscription(), subscription_version_max).expect("encodes").to_vec();
    bytes[..2].copy_from_slice(&(subscription_version_max + 1).to_be_bytes());
    bytes.extend_from_slice(&[0, 0, 0, 42]); // a field from the future
    assert_eq!(decode_subscription(&bytes), Ok(full_subscription()));
}

#[test]
fn garbage_is_a_typed_error() {
    let malformed: &[(&str, &[u8])] = &[
        ("empty", &[]),
        ("half a version", &[0]),
        ("no body", &[0, 0]),
        ("topic count of two billion", &[0, 0, 0x7f, 0xff, 0xff, 0xff]),
        ("negative topic count", &[0, 0, 0x80, 0, 0, 0]),
        ("null topic name", &[0, 0, 0, 0, 0, 1, 0xff, 0xff]),
        ("negative name length", &[0, 0, 0, 0, 0, 1, 0x80, 0]),
        ("name not UTF-8", &[0, 0, 0, 0, 0, 1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff]),
        ("user data past the end", &[0, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
        ("v1 without owned partitions", &[0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
        ("owned partitions count of two billion", &[0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0x7f, 0xff, 0xff, 0xff]),
    ];
    for (name, bytes) in malformed {
        assert!(matches!(decode_subscription(bytes), Err(WireError::Malformed { .. })), "{name}: {:?}", decode_subscription(bytes));
    }
    assert!(matches!(decode_subscription(&[0xff, 0xff, 0, 0, 0, 0]), Err(WireError::UnsupportedVersion { version: -1, .. })));
    assert!(matches!(decode_assignment(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), Err(WireError::Malformed { .. })));
    let huge = vec![0u8; consumer_protocol_bytes_max + 1];
    assert!(matches!(decode_subscription(&huge), Err(WireError::TooLarge { .. })));
    assert!(matches!(encode_subscription(&full_subscription(), 4), Err(WireError::UnsupportedVersion { version: 4, .. })));
    let long_name = Subscription { topics: ["x".repeat(40_000)].into(), ..Subscription::default() };
    assert!(matches!(encode_subscription(&long_name, 0), Err(WireError::Encode { .. })));
}

#[test]
fn every_truncation_of_a_v3_subscription_is_an_error() {
    let bytes = encode_subscription(&full_subscription(), 3).expect("encodes");
    for len in 0..bytes.len() {
        assert!(decode_subscription(&bytes[..len]).is_err(), "prefix of {len} bytes decoded");
    }
}

#[test]
fn random_and_mutated_bytes_never_panic() {
    let mut rng = XorShift::new(0x05ee_d106);
    let valid = [
        encode_subscription(&full_subscription(), 3).expect("encodes").to_vec(),
        encode_assignment(&Assignment { partitions: tp(&[("t", &[0, 1, 2])]), user_data: None }, 0).expect("encodes").to_vec(),
    ];
    for round in 0..20_000 {
        let bytes: Vec<u8> = if round % 2 == 0 {
            (0..rng.below(40)).map(|_| rng.next_u64() as u8).collect()
        } else {
            let mut b = valid[rng.below(2)].clone();
            for _ in 0..=rng.below(3) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            b
        };
        // Either answer is fine; a panic, or an abort on a giant allocation, is not.
        let _ = decode_subscription(&bytes);
        let _ = decode_assignment(&bytes);
        let _ = super::user_data::decode_sticky(&bytes);
    }
}
