//! The log inside madsim nodes killed mid-write, then power loss (see `sim::crash::node_rounds`).

use sim::crash::node_rounds;

#[test]
fn log_survives_kill_and_power_loss_inside_madsim_nodes() {
    for seed in 0..20 {
        node_rounds(seed, 15).unwrap();
    }
}

#[test]
fn madsim_rounds_replay_identically() {
    assert_eq!(node_rounds(3, 10).unwrap(), node_rounds(3, 10).unwrap());
}
