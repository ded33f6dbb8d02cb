//! ACLs over the wire: DescribeAcls, answered by any broker from its metadata image, and
//! CreateAcls and DeleteAcls, decided and committed by the active controller (forwarded there
//! from any other node, like the other controller APIs) and answered once committed and
//! applied. Without an authorizer every one answers SECURITY_DISABLED, as Kafka does. Who may
//! call them (ALTER or DESCRIBE on the cluster) is `authz`'s check, before these run.

use super::controller_handlers::{active, after_commit};
use super::{Node, Outcome};
use crate::broker::Broker;
use crate::kafka::Code;
use crate::metadata::records::MetadataRecord;
use crate::protocol::{s, Response};
use crate::security::acl::{Acl, AclFilter, Operation, PatternType, Permission, ResourceType};
use kafka_protocol::messages::create_acls_request::CreateAclsRequest;
use kafka_protocol::messages::create_acls_response::{AclCreationResult, CreateAclsResponse};
use kafka_protocol::messages::delete_acls_request::{DeleteAclsFilter, DeleteAclsRequest};
use kafka_protocol::messages::delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsResponse};
use kafka_protocol::messages::describe_acls_request::DescribeAclsRequest;
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource, DescribeAclsResponse};
use kafka_protocol::messages::ApiKey;

/// How long a change waits for its records to be committed and applied here.
const alter_acls_wait_ms: u64 = 30_000;

const disabled: &str = "no authorizer is configured (--authorizer-class-name)";

/// A filter off the wire (DescribeAcls, DeleteAcls); v0 has no pattern type: LITERAL.
#[allow(clippy::too_many_arguments)]
fn filter(version: i16, resource_type: i8, name: Option<&str>, pattern: i8, principal: Option<&str>, host: Option<&str>, operation: i8, permission: i8) -> Result<AclFilter, String> {
    let pattern = if version == 0 { PatternType::Literal } else { PatternType::from_code(pattern).ok_or(format!("unknown pattern type {pattern}"))? };
    Ok(AclFilter {
        resource_type: ResourceType::from_code(resource_type).ok_or(format!("unknown resource type {resource_type}"))?,
        resource_name: name.map(str::to_string),
        pattern,
        principal: principal.map(str::to_string),
        host: host.map(str::to_string),
        operation: Operation::from_code(operation).ok_or(format!("unknown operation {operation}"))?,
        permission: Permission::from_code(permission).ok_or(format!("unknown permission type {permission}"))?,
    })
}

pub fn describe(b: &Broker, version: i16, req: DescribeAclsRequest) -> DescribeAclsResponse {
    let r = DescribeAclsResponse::default();
    if !b.config().security.authorizer.enabled {
        return r.with_error_code(Code::SecurityDisabled.code()).with_error_message(Some(s(disabled)));
    }
    let f = match filter(version, req.resource_type_filter, req.resource_name_filter.as_deref(), req.pattern_type_filter, req.principal_filter.as_deref(), req.host_filter.as_deref(), req.operation, req.permission_type) {
        Ok(f) => f,
        Err(why) => return r.with_error_code(Code::InvalidRequest.code()).with_error_message(Some(s(&why))),
    };
    // One entry per resource pattern, in the image's (sorted) order.
    let mut resources: Vec<DescribeAclsResource> = Vec::new();
    for acl in b.image().acls.iter().filter(|a| f.matches(a)) {
        let same = resources.last().is_some_and(|last| last.resource_type == acl.resource_type.code() && last.resource_name.as_str() == acl.resource_name && last.pattern_type == acl.pattern.code());
        if !same {
            resources.push(DescribeAclsResource::default().with_resource_type(acl.resource_type.code()).with_resource_name(s(&acl.resource_name)).with_pattern_type(acl.pattern.code()));
        }
        let d = AclDescription::default().with_principal(s(&acl.principal)).with_host(s(&acl.host)).with_operation(acl.operation.code()).with_permission_type(acl.permission.code());
        resources.last_mut().expect("pushed above").acls.push(d);
    }
    r.with_resources(resources)
}

pub fn create(node: &Node, version: i16, correlation_id: i32, req: CreateAclsRequest, now: u64) -> Result<Outcome, String> {
    let n = req.creations.len();
    let answer = |codes: Vec<Option<(Code, String)>>| {
        let results = codes
            .into_iter()
            .map(|e| match e {
                None => AclCreationResult::default(),
                Some((code, why)) => AclCreationResult::default().with_error_code(code.code()).with_error_message(Some(s(&why))),
            })
            .collect();
        Response::new(ApiKey::CreateAcls, version, correlation_id, CreateAclsResponse::default().with_results(results))
    };
    let all = |code: Code, why: &str| answer(vec![Some((code, why.to_string())); n]);
    if !node.broker().config().security.authorizer.enabled {
        return Ok(Outcome::Reply(all(Code::SecurityDisabled, disabled)));
    }
    let Some(mut q) = active(node) else {
        return Ok(Outcome::Reply(all(Code::NotController, "this node is not the active controller")));
    };
    let mut results = Vec::with_capacity(n);
    let mut records = Vec::new();
    for c in &req.creations {
        let pattern = if version == 0 { Some(PatternType::Literal) } else { PatternType::from_code(c.resource_pattern_type) };
        let acl = match (ResourceType::from_code(c.resource_type), pattern, Operation::from_code(c.operation), Permission::from_code(c.permission_type)) {
            (Some(resource_type), Some(pattern), Some(operation), Some(permission)) => Acl { resource_type, resource_name: c.resource_name.to_string(), pattern, principal: c.principal.to_string(), host: c.host.to_string(), operation, permission },
            _ => {
                results.push(Some((Code::InvalidRequest, "an unknown resource type, pattern type, operation or permission type".to_string())));
                continue;
            }
        };
        match acl.invalid() {
            Some(why) => results.push(Some((Code::InvalidRequest, why))),
            None => {
                // Creating an ACL that exists changes nothing (it is its content).
                if !q.controller().image().acls.contains(&acl) && !records.contains(&MetadataRecord::Acl { acl: acl.clone() }) {
                    records.push(MetadataRecord::Acl { acl });
                }
                results.push(None);
            }
        }
    }
    Ok(commit(&mut q, records, now, results, answer, |r, failed| r.or(Some(failed))))
}

fn delete_filter(version: i16, f: &DeleteAclsFilter) -> Result<AclFilter, String> {
    filter(version, f.resource_type_filter, f.resource_name_filter.as_deref(), f.pattern_type_filter, f.principal_filter.as_deref(), f.host_filter.as_deref(), f.operation, f.permission_type)
}

pub fn delete(node: &Node, version: i16, correlation_id: i32, req: DeleteAclsRequest, now: u64) -> Result<Outcome, String> {
    let n = req.filters.len();
    type Result1 = std::result::Result<Vec<Acl>, (Code, String)>;
    let answer = |results: Vec<Result1>| {
        let filter_results = results
            .into_iter()
            .map(|r| match r {
                Err((code, why)) => DeleteAclsFilterResult::default().with_error_code(code.code()).with_error_message(Some(s(&why))),
                Ok(acls) => DeleteAclsFilterResult::default().with_matching_acls(
                    acls.iter()
                        .map(|a| {
                            DeleteAclsMatchingAcl::default()
                                .with_resource_type(a.resource_type.code())
                                .with_resource_name(s(&a.resource_name))
                                .with_pattern_type(a.pattern.code())
                                .with_principal(s(&a.principal))
                                .with_host(s(&a.host))
                                .with_operation(a.operation.code())
                                .with_permission_type(a.permission.code())
                        })
                        .collect(),
                ),
            })
            .collect();
        Response::new(ApiKey::DeleteAcls, version, correlation_id, DeleteAclsResponse::default().with_filter_results(filter_results))
    };
    let all = |code: Code, why: &str| answer((0..n).map(|_| Err((code, why.to_string()))).collect());
    if !node.broker().config().security.authorizer.enabled {
        return Ok(Outcome::Reply(all(Code::SecurityDisabled, disabled)));
    }
    let Some(mut q) = active(node) else {
        return Ok(Outcome::Reply(all(Code::NotController, "this node is not the active controller")));
    };
    let mut results: Vec<Result1> = Vec::with_capacity(n);
    let mut records = Vec::new();
    for f in &req.filters {
        match delete_filter(version, f) {
            Err(why) => results.push(Err((Code::InvalidRequest, why))),
            Ok(f) => {
                let matched: Vec<Acl> = q.controller().image().acls.iter().filter(|a| f.matches(a)).cloned().collect();
                for acl in &matched {
                    let record = MetadataRecord::RemoveAcl { acl: acl.clone() };
                    if !records.contains(&record) {
                        records.push(record);
                    }
                }
                results.push(Ok(matched));
            }
        }
    }
    Ok(commit(&mut q, records, now, results, answer, |r, failed| r.and(Err(failed))))
}

/// Commits `records` and answers `results` once they are applied here; what each result
/// becomes if the commit fails, or the leadership is lost first, is `failed`'s.
fn commit<T: Clone>(q: &mut crate::controller::quorum::Quorum, records: Vec<MetadataRecord>, now: u64, results: Vec<T>, answer: impl Fn(Vec<T>) -> Response, failed: impl Fn(T, (Code, String)) -> T) -> Outcome {
    if records.is_empty() {
        return Outcome::Reply(answer(results));
    }
    let last = match q.commit(records, now) {
        Ok(last) => last,
        Err(e) => return Outcome::Reply(answer(results.into_iter().map(|r| failed(r, (e.kafka_error(), e.to_string()))).collect())),
    };
    let lost = || (Code::NotController, "the controller lost its leadership before the change was committed".to_string());
    let refused = results.iter().map(|r| failed(r.clone(), lost())).collect();
    after_commit(q, last, answer(results), answer(refused), true, alter_acls_wait_ms)
}
