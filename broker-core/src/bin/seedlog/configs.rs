//! `seedlog configs`: client quotas of a running cluster, as kafka-configs.sh takes them:
//! `--entity-type clients|users` with `--entity-name N` or `--entity-default` (both types
//! together for a user's client id), then `--describe`, or `--alter` with
//! `--add-config k=v,...` and `--delete-config k,...`. The requests are
//! `broker_core::client::quotas`'s; parsing and formatting are pure functions, tested below.

use broker_core::client::quotas;
use broker_core::metadata::quotas::{client_id_type, user_type, Entity};
use clap::Args;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::ToSocketAddrs;
use std::time::Duration;

#[derive(Args)]
pub struct ConfigsArgs {
    /// `clients` or `users`; give both (users first) for a user's client id.
    #[arg(long, required = true)]
    entity_type: Vec<String>,
    /// The entity's name, one per `--entity-type` in order.
    #[arg(long)]
    entity_name: Vec<String>,
    /// The default entity of the type(s) given without a name.
    #[arg(long)]
    entity_default: bool,
    #[arg(long, conflicts_with = "alter")]
    describe: bool,
    #[arg(long)]
    alter: bool,
    /// `key=value` pairs, comma-separated (producer_byte_rate, consumer_byte_rate,
    /// request_percentage, controller_mutation_rate).
    #[arg(long, value_delimiter = ',')]
    add_config: Vec<String>,
    /// Keys to remove, comma-separated.
    #[arg(long, value_delimiter = ',')]
    delete_config: Vec<String>,
}

type Res = Result<(), Box<dyn std::error::Error>>;

pub fn run(bootstrap: &str, timeout: Duration, args: ConfigsArgs) -> Res {
    let entity = entity(&args.entity_type, &args.entity_name, args.entity_default)?;
    let ops = ops(&args.add_config, &args.delete_config)?;
    if args.alter == args.describe {
        return Err("give one of --describe and --alter".into());
    }
    if args.alter && ops.is_empty() {
        return Err("--alter needs --add-config or --delete-config".into());
    }
    let addr = bootstrap.to_socket_addrs()?.next().ok_or_else(|| format!("{bootstrap}: no address"))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        if args.alter {
            quotas::alter(addr, &entity, &ops, timeout).await.map_err(crate::error_text)?;
            println!("Completed updating config for {}.", describe_entity(&entity));
            return Ok(());
        }
        let found = quotas::describe(addr, &entity, true, timeout).await.map_err(crate::error_text)?;
        print!("{}", render(&found));
        Ok(())
    })
}

/// The entity kafka-configs' arguments name: types in order, each with the next name, the
/// rest the default (with `--entity-default`).
fn entity(types: &[String], names: &[String], default: bool) -> Result<Entity, String> {
    if names.len() > types.len() || (names.len() < types.len() && !default) {
        return Err(format!("{} entity types and {} names: give a name for each, or --entity-default", types.len(), names.len()));
    }
    let parts: Vec<(&str, Option<&str>)> = types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let kind = match t.as_str() {
                "clients" => client_id_type,
                "users" => user_type,
                other => other,
            };
            (kind, names.get(i).map(String::as_str))
        })
        .collect();
    Entity::from_parts(parts)
}

/// `--add-config` pairs and `--delete-config` keys as ops (None: remove).
fn ops(add: &[String], delete: &[String]) -> Result<Vec<(String, Option<f64>)>, String> {
    let mut out = Vec::new();
    for pair in add {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("--add-config {pair}: expected key=value"))?;
        let v: f64 = v.trim().parse().map_err(|_| format!("--add-config {pair}: {v} is not a number"))?;
        out.push((k.trim().to_string(), Some(v)));
    }
    out.extend(delete.iter().map(|k| (k.trim().to_string(), None)));
    Ok(out)
}

fn describe_entity(e: &Entity) -> String {
    let parts: Vec<String> = e
        .parts()
        .into_iter()
        .map(|(kind, name)| format!("{}-entity '{}'", if kind == user_type { "user" } else { "client-id" }, name.unwrap_or("<default>")))
        .collect();
    parts.join(", ")
}

/// kafka-configs' describe lines: `Quota configs for client-id 'app' are producer_byte_rate=1024.0`.
fn render(found: &[(Vec<(String, Option<String>)>, BTreeMap<String, f64>)]) -> String {
    let mut out = String::new();
    for (parts, values) in found {
        let who: Vec<String> = parts.iter().map(|(kind, name)| format!("{kind} '{}'", name.as_deref().unwrap_or("<default>"))).collect();
        let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        writeln!(out, "Quota configs for {} are {}", who.join(", "), values.join(", ")).expect("writing to a String");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::metadata::quotas::Name;

    #[test]
    fn arguments_read_as_kafka_configs_takes_them() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(entity(&s(&["clients"]), &s(&["app"]), false).unwrap(), Entity { user: None, client_id: Some(Name::Named("app".into())) });
        assert_eq!(entity(&s(&["users", "clients"]), &s(&["alice"]), true).unwrap(), Entity { user: Some(Name::Named("alice".into())), client_id: Some(Name::Default) });
        assert!(entity(&s(&["clients"]), &[], false).unwrap_err().contains("--entity-default"));
        assert!(entity(&s(&["topics"]), &s(&["t"]), false).is_err());
        assert_eq!(ops(&s(&["producer_byte_rate=1024"]), &s(&["consumer_byte_rate"])).unwrap(), vec![("producer_byte_rate".into(), Some(1024.0)), ("consumer_byte_rate".into(), None)]);
        assert!(ops(&s(&["producer_byte_rate"]), &[]).is_err());
        let found = vec![(vec![("client-id".to_string(), Some("app".to_string()))], [("producer_byte_rate".to_string(), 1024.0)].into_iter().collect())];
        assert_eq!(render(&found), "Quota configs for client-id 'app' are producer_byte_rate=1024.0\n");
    }
}
