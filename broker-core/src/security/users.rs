//! Changing and describing users' SCRAM credentials (AlterUserScramCredentials,
//! DescribeUserScramCredentials, KIP-554), decided on the metadata image with Kafka's rules
//! (`ScramControlManager`): the client sends a salted password, never the password; each user's
//! changes are taken together or not at all; a (user, mechanism) named twice in one request is
//! DUPLICATE_RESOURCE, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, an empty name or
//! iterations out of range UNACCEPTABLE_CREDENTIAL, deleting what is not there
//! RESOURCE_NOT_FOUND. Returns records for the controller to commit; no IO.

use super::scram::{iterations_max, iterations_min, Credential, Mechanism};
use crate::kafka::Code;
use crate::metadata::{Image, MetadataRecord};
use std::collections::BTreeMap;

/// One change asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Store this credential (`salted` is the client's Hi(password, salt, iterations)).
    Upsert { user: String, mechanism: i8, iterations: i32, salt: Vec<u8>, salted: Vec<u8> },
    Delete { user: String, mechanism: i8 },
}

impl Change {
    fn user(&self) -> &str {
        match self {
            Change::Upsert { user, .. } | Change::Delete { user, .. } => user,
        }
    }

    fn mechanism(&self) -> i8 {
        match self {
            Change::Upsert { mechanism, .. } | Change::Delete { mechanism, .. } => *mechanism,
        }
    }
}

/// A user's answer: none, or the error code and message.
pub type UserAnswer = (String, Result<(), (Code, String)>);

/// Each user's answer (in the order first named) and the records of the changes taken.
pub fn alter(image: &Image, changes: &[Change]) -> (Vec<UserAnswer>, Vec<MetadataRecord>) {
    let mut named: BTreeMap<(&str, i8), usize> = BTreeMap::new();
    for c in changes {
        *named.entry((c.user(), c.mechanism())).or_default() += 1;
    }
    let mut answers = Vec::new();
    let mut records = Vec::new();
    for user in users_named(changes) {
        let mine: Vec<&Change> = changes.iter().filter(|c| c.user() == user).collect();
        let decided: Result<Vec<MetadataRecord>, (Code, String)> = mine.iter().map(|c| decide(image, c, named[&(c.user(), c.mechanism())])).collect();
        match decided {
            Ok(mut r) => {
                records.append(&mut r);
                answers.push((user.to_string(), Ok(())));
            }
            Err(e) => answers.push((user.to_string(), Err(e))),
        }
    }
    (answers, records)
}

/// The users `changes` name, each once, in the order first named: the order of the answers.
pub fn users_named(changes: &[Change]) -> Vec<&str> {
    let mut users: Vec<&str> = Vec::new();
    for c in changes {
        if !users.contains(&c.user()) {
            users.push(c.user());
        }
    }
    users
}

fn decide(image: &Image, c: &Change, times_named: usize) -> Result<MetadataRecord, (Code, String)> {
    if times_named > 1 {
        return Err((Code::DuplicateResource, "a user credential cannot be altered twice in the same request".into()));
    }
    if c.user().is_empty() {
        return Err((Code::UnacceptableCredential, "username must not be empty".into()));
    }
    let mechanism = [Mechanism::Sha256, Mechanism::Sha512].into_iter().find(|m| m.kafka_type() == c.mechanism()).ok_or_else(|| (Code::UnsupportedSaslMechanism, format!("unknown SCRAM mechanism type {}", c.mechanism())))?;
    match c {
        Change::Delete { user, .. } if image.scram_credential(user, mechanism).is_none() => Err((Code::ResourceNotFound, format!("attempt to delete a user credential that does not exist ({user}, {})", mechanism.name()))),
        Change::Delete { user, .. } => Ok(MetadataRecord::RemoveScramCredential { user: user.clone(), mechanism }),
        Change::Upsert { iterations, .. } if !(iterations_min..=iterations_max).contains(iterations) => {
            Err((Code::UnacceptableCredential, format!("iterations {iterations} must be {iterations_min}..={iterations_max} for {}", mechanism.name())))
        }
        Change::Upsert { salt, salted, .. } if salt.is_empty() || salted.len() != mechanism.digest_bytes() => Err((Code::UnacceptableCredential, format!("a {} credential needs a salt and a {}-byte salted password", mechanism.name(), mechanism.digest_bytes()))),
        Change::Upsert { user, iterations, salt, salted, .. } => Ok(MetadataRecord::ScramCredential { user: user.clone(), credential: Credential::from_salted(mechanism, salted, salt, *iterations) }),
    }
}

/// DescribeUserScramCredentials: for each user asked (None: every user with a credential), its
/// mechanisms and iterations, or RESOURCE_NOT_FOUND; a user asked twice is DUPLICATE_RESOURCE.
#[allow(clippy::type_complexity)]
pub fn describe(image: &Image, users: Option<&[String]>) -> Vec<(String, Result<Vec<(Mechanism, i32)>, (Code, String)>)> {
    let all: Vec<String> = {
        let mut v: Vec<String> = image.scram.keys().map(|(u, _)| u.clone()).collect();
        v.dedup();
        v
    };
    let asked: Vec<String> = users.map_or(all, <[String]>::to_vec);
    asked
        .iter()
        .map(|user| {
            let result = if asked.iter().filter(|u| *u == user).count() > 1 {
                Err((Code::DuplicateResource, format!("cannot describe the same user twice in one request: {user}")))
            } else {
                let infos: Vec<(Mechanism, i32)> = image.scram.iter().filter(|((u, _), _)| u == user).map(|((_, m), c)| (*m, c.iterations)).collect();
                match infos.is_empty() {
                    true => Err((Code::ResourceNotFound, format!("attempt to describe a user credential that does not exist: {user}"))),
                    false => Ok(infos),
                }
            };
            (user.clone(), result)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn salted(m: Mechanism) -> Vec<u8> {
        vec![7; m.digest_bytes()]
    }

    fn upsert(user: &str, mechanism: i8, iterations: i32) -> Change {
        let m = [Mechanism::Sha256, Mechanism::Sha512].into_iter().find(|m| m.kafka_type() == mechanism).unwrap_or(Mechanism::Sha256);
        Change::Upsert { user: user.into(), mechanism, iterations, salt: b"salt".to_vec(), salted: salted(m) }
    }

    #[test]
    fn each_users_changes_are_taken_together_with_kafkas_errors() {
        let mut image = Image::default();
        let (answers, records) = alter(&image, &[upsert("alice", 1, 4096), upsert("alice", 2, 8192), upsert("bob", 1, 10), Change::Delete { user: "carol".into(), mechanism: 1 }]);
        let codes: Vec<(String, Option<Code>)> = answers.into_iter().map(|(u, r)| (u, r.err().map(|e| e.0))).collect();
        assert_eq!(codes, vec![("alice".into(), None), ("bob".into(), Some(Code::UnacceptableCredential)), ("carol".into(), Some(Code::ResourceNotFound))]);
        assert_eq!(records.len(), 2, "alice's two credentials");
        for (i, r) in records.iter().enumerate() {
            image.apply(i as i64, r);
        }
        assert_eq!(describe(&image, None), vec![("alice".to_string(), Ok(vec![(Mechanism::Sha256, 4096), (Mechanism::Sha512, 8192)]))]);
        let (answers, records) = alter(&image, &[Change::Delete { user: "alice".into(), mechanism: 1 }, upsert("alice", 3, 4096)]);
        assert_eq!(answers[0].1.as_ref().unwrap_err().0, Code::UnsupportedSaslMechanism, "one bad change fails the user's whole request");
        assert!(records.is_empty());
        let (answers, _) = alter(&image, &[Change::Delete { user: "alice".into(), mechanism: 1 }, upsert("alice", 1, 4096)]);
        assert_eq!(answers[0].1.as_ref().unwrap_err().0, Code::DuplicateResource);
        let short = Change::Upsert { user: "dan".into(), mechanism: 2, iterations: 4096, salt: b"s".to_vec(), salted: vec![1; 32] };
        assert_eq!(alter(&image, &[short]).0[0].1.as_ref().unwrap_err().0, Code::UnacceptableCredential, "a SHA-512 salted password is 64 bytes");
        let asked = ["alice".to_string(), "zed".to_string()];
        let described = describe(&image, Some(&asked));
        assert!(described[0].1.is_ok() && described[1].1.as_ref().unwrap_err().0 == Code::ResourceNotFound);
    }
}
