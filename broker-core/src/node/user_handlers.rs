//! Users' SCRAM credentials over the wire: DescribeUserScramCredentials, answered by any broker
//! from its metadata image, and AlterUserScramCredentials, decided and committed by the active
//! controller (forwarded there from any other node, like the other controller APIs) and
//! answered once committed and applied. The rules are `security::users`'.

use super::controller_handlers::{active, after_commit};
use super::{Node, Outcome};
use crate::broker::Broker;
use crate::kafka::Code;
use crate::protocol::{s, Response};
use crate::security::users::{self, Change};
use kafka_protocol::messages::alter_user_scram_credentials_request::AlterUserScramCredentialsRequest;
use kafka_protocol::messages::alter_user_scram_credentials_response::{AlterUserScramCredentialsResponse, AlterUserScramCredentialsResult};
use kafka_protocol::messages::describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest;
use kafka_protocol::messages::describe_user_scram_credentials_response::{CredentialInfo, DescribeUserScramCredentialsResponse, DescribeUserScramCredentialsResult};
use kafka_protocol::messages::ApiKey;

/// How long an alteration waits for its records to be committed and applied here.
const alter_users_wait_ms: u64 = 30_000;

pub fn describe(b: &Broker, req: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse {
    let asked: Option<Vec<String>> = req.users.filter(|u| !u.is_empty()).map(|u| u.iter().map(|n| n.name.to_string()).collect());
    let results = users::describe(b.image(), asked.as_deref())
        .into_iter()
        .map(|(user, result)| {
            let r = DescribeUserScramCredentialsResult::default().with_user(s(&user));
            match result {
                Ok(infos) => r.with_credential_infos(infos.into_iter().map(|(m, iterations)| CredentialInfo::default().with_mechanism(m.kafka_type()).with_iterations(iterations)).collect()),
                Err((code, message)) => r.with_error_code(code.code()).with_error_message(Some(s(&message))),
            }
        })
        .collect();
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

pub fn alter(node: &Node, version: i16, correlation_id: i32, req: AlterUserScramCredentialsRequest, now: u64) -> Result<Outcome, String> {
    let mut changes: Vec<Change> = req.deletions.iter().map(|d| Change::Delete { user: d.name.to_string(), mechanism: d.mechanism }).collect();
    changes.extend(req.upsertions.iter().map(|u| Change::Upsert { user: u.name.to_string(), mechanism: u.mechanism, iterations: u.iterations, salt: u.salt.to_vec(), salted: u.salted_password.to_vec() }));
    let answer = |answers: Vec<users::UserAnswer>| {
        let results = answers
            .into_iter()
            .map(|(user, result)| {
                let r = AlterUserScramCredentialsResult::default().with_user(s(&user));
                match result {
                    Ok(()) => r,
                    Err((code, message)) => r.with_error_code(code.code()).with_error_message(Some(s(&message))),
                }
            })
            .collect();
        Response::new(ApiKey::AlterUserScramCredentials, version, correlation_id, AlterUserScramCredentialsResponse::default().with_results(results))
    };
    let not_controller = |why: &str| users::users_named(&changes).into_iter().map(|u| (u.to_string(), Err((Code::NotController, why.to_string())))).collect::<Vec<_>>();
    let Some(mut q) = active(node) else {
        return Ok(Outcome::Reply(answer(not_controller("this node is not the active controller"))));
    };
    let (answers, records) = users::alter(q.controller().image(), &changes);
    if records.is_empty() {
        return Ok(Outcome::Reply(answer(answers)));
    }
    let last = match q.commit(records, now) {
        Ok(last) => last,
        Err(e) => {
            let failed = answers.into_iter().map(|(u, r)| (u, r.and(Err((e.kafka_error(), e.to_string()))))).collect();
            return Ok(Outcome::Reply(answer(failed)));
        }
    };
    let refused = answers.iter().map(|(u, r)| (u.clone(), r.clone().and(Err((Code::NotController, "the controller lost its leadership before the change was committed".to_string()))))).collect();
    Ok(after_commit(&q, last, answer(answers), answer(refused), true, alter_users_wait_ms))
}
