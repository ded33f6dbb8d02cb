//! Several listeners: Metadata and FindCoordinator name each broker's endpoint on the listener
//! the client came in on; the registration keeps every listener, and a one-listener
//! registration stays the record it was.

use super::*;
use crate::metadata::{Endpoint, MetadataRecord};
use crate::security::acl::Caller;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;

fn on(listener: Option<&str>) -> Caller {
    Caller { principal: crate::security::acl::anonymous.into(), host: [127, 0, 0, 1].into(), internal: false, listener: listener.map(Into::into), connection: None }
}

fn ask<R: Encodable + HeaderVersion>(node: &Node, caller: &Caller, key: ApiKey, version: i16, req: &R) -> Outcome {
    let prepared = prepare(decode_request(&frame(key, version, req), true).unwrap());
    handle_from(node, prepared, Some(caller), 0, Attempt::First, &mut Vec::new())
}

fn endpoint(name: &str, host: &str, port: i32) -> Endpoint {
    Endpoint { name: name.into(), host: host.into(), port }
}

#[test]
fn each_listener_is_answered_with_its_own_endpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = crate::testing::config(tmp.path());
    c.security.inter_broker_listener = "INTERNAL".into();
    c.advertised_listeners = vec![endpoint("INTERNAL", "10.0.0.1", 9095), endpoint("EXTERNAL", "broker.example.com", 9094)];
    (c.advertised_host, c.advertised_port) = ("10.0.0.1".into(), 9095);
    let n = crate::testing::one_node(c);
    crate::testing::create(&n, "orders", 1, Default::default()).unwrap();
    let image = n.broker().image().clone();
    assert_eq!(image.brokers[&0].listeners.len(), 2, "every listener registered");
    let metadata = MetadataRequest::default().with_topics(None);
    for (listener, host, port) in [(Some("EXTERNAL"), "broker.example.com", 9094), (Some("INTERNAL"), "10.0.0.1", 9095), (None, "10.0.0.1", 9095)] {
        let m: MetadataResponse = reply(ask(&n, &on(listener), ApiKey::Metadata, 12, &metadata), ApiKey::Metadata, 12);
        let brokers: Vec<(String, i32)> = m.brokers.iter().map(|b| (b.host.to_string(), b.port)).collect();
        assert_eq!(brokers, vec![(host.to_string(), port)], "Metadata on {listener:?}");
        assert_eq!(m.topics[0].partitions[0].error_code, 0);
        let find = FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g")).with_key_type(0);
        let mut f: FindCoordinatorResponse = reply(ask(&n, &on(listener), ApiKey::FindCoordinator, 3, &find), ApiKey::FindCoordinator, 3);
        for _ in 0..3 {
            if f.error_code == 0 {
                break;
            }
            // The offsets topic is created on first use.
            crate::testing::sync(&n, 0);
            f = reply(ask(&n, &on(listener), ApiKey::FindCoordinator, 3, &find), ApiKey::FindCoordinator, 3);
        }
        assert_eq!((f.error_code, f.host.to_string(), f.port), (0, host.to_string(), port), "FindCoordinator on {listener:?}");
    }
    // A listener the broker does not have: left out, and its partitions LISTENER_NOT_FOUND.
    let m: MetadataResponse = reply(ask(&n, &on(Some("OTHER")), ApiKey::Metadata, 12, &metadata), ApiKey::Metadata, 12);
    assert!(m.brokers.is_empty(), "{:?}", m.brokers);
    assert_eq!(m.topics[0].partitions[0].error_code, Code::ListenerNotFound.code());
}

#[test]
fn one_listener_registers_the_record_it_always_did() {
    let mut ctl = crate::controller::Controller::new(Default::default(), Default::default(), 0);
    let records = ctl.register(1, "h", 9092, 1, 0).unwrap();
    let MetadataRecord::RegisterBroker { listeners, .. } = &records[0] else { panic!("{records:?}") };
    assert!(listeners.is_empty());
    assert_eq!(String::from_utf8(records[0].encode()).unwrap(), r#"{"type":"RegisterBroker","id":1,"epoch":1,"host":"h","port":9092}"#);
    let two = [endpoint("INTERNAL", "10.0.0.1", 9095), endpoint("EXTERNAL", "e", 9094)];
    let records = ctl.register_broker(2, &two, crate::controller::no_previous_epoch, 2, 0).unwrap();
    let decoded = MetadataRecord::decode(&records[0].encode()).unwrap();
    assert_eq!(decoded, MetadataRecord::RegisterBroker { id: 2, epoch: 2, host: "10.0.0.1".into(), port: 9095, listeners: two.to_vec() });
    let twice = [endpoint("A", "h", 1), endpoint("A", "h", 2)];
    assert!(ctl.register_broker(3, &twice, -1, 3, 0).unwrap_err().to_string().contains("registered twice"));
    let many: Vec<Endpoint> = (0..=crate::controller::broker_listeners_max).map(|i| endpoint(&format!("L{i}"), "h", 1)).collect();
    assert!(ctl.register_broker(3, &many, -1, 3, 0).is_err());
}
