//! Seeded crash rounds of the partition log on `SimDisk` (see `sim::crash`), and of a
//! compacted log dying inside cleaning (`sim::crash_clean`).

use broker_core::log::batch::build;
use broker_core::log::clean::Keep;
use broker_core::log::{Log, LogConfig};
use broker_core::storage::Disk;
use sim::crash::{crash_rounds, deferred_crash_rounds};
use sim::crash_clean::{clean_rounds, deferred_clean_rounds, CleanRounds};
use sim::disk::{CrashMode, SimDisk};
use std::path::Path;
use std::sync::Arc;

#[test]
fn thousands_of_power_loss_rounds_keep_the_log_a_synced_prefix() {
    // 250 seeds x 12 rounds = 3,000 crash/recover rounds, each with up to 40 operations.
    let failures: Vec<String> = (0..250u64).filter_map(|seed| crash_rounds(seed, 12, false).err()).collect();
    assert!(failures.is_empty(), "{} failing seeds, first: {}", failures.len(), failures[0]);
}

#[test]
fn power_loss_rounds_with_syncs_as_late_jobs_keep_the_log_a_synced_prefix() {
    // As the broker runs its logs: every sync a job, run late, out of order or never.
    let failures: Vec<String> = (0..250u64).filter_map(|seed| deferred_crash_rounds(seed, 12, false).err()).collect();
    assert!(failures.is_empty(), "{} failing seeds, first: {}", failures.len(), failures[0]);
}

#[test]
fn crash_rounds_are_deterministic_per_seed() {
    let a = crash_rounds(7, 6, false).unwrap();
    assert_eq!(a, crash_rounds(7, 6, false).unwrap(), "same seed, same surviving log");
    let differ = (8..12u64).any(|s| crash_rounds(s, 6, false).unwrap() != a);
    assert!(differ, "other seeds give other histories");
}

#[test]
fn power_loss_really_loses_unsynced_data_sometimes() {
    // Guards the rounds above: if no power loss ever cut anything, the crash model or the
    // harness is not doing what those rounds assume.
    let mut cut = 0;
    for seed in 0..40u64 {
        let disk = SimDisk::new(seed);
        let dir = Path::new("/d");
        let (mut log, _) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, dir, LogConfig::default(), 0).unwrap();
        for i in 0..20 {
            log.append(&mut build(&[&[i as u8; 700]], 0), 0, 0).unwrap();
        }
        drop(log);
        disk.crash(CrashMode::PowerLoss);
        let (log, report) = Log::open(Arc::new(disk.clone()) as Arc<dyn Disk>, dir, LogConfig::default(), 0).unwrap();
        if report.cut.is_some() || log.log_end_offset() < 20 {
            cut += 1;
        }
    }
    assert!(cut >= 10, "only {cut} of 40 power losses lost unsynced data");
}

// Regression seeds, each named after the bug it found (all fixed in broker-core::log).

#[test]
fn regression_rebuilt_index_unsynced_when_an_old_checkpoint_later_trusts_it() {
    crash_rounds(54, 12, false).unwrap();
}

#[test]
fn regression_cut_not_synced_so_garbage_returned_under_a_trusted_segment() {
    for seed in [517, 1026, 2783, 5409] {
        crash_rounds(seed, 12, false).unwrap();
    }
}

#[test]
fn regression_retention_advanced_recovery_point_before_deletes_were_durable() {
    for seed in [845, 6670, 10748] {
        crash_rounds(seed, 12, false).unwrap();
    }
}

#[test]
fn regression_a_reopen_trusted_unlinks_a_truncation_never_made_durable() {
    // A follower's truncation whose job never ran before the log was reopened: the open saw
    // the segments gone, and a power loss brought them (and their dropped records) back.
    for seed in [1686, 6298, 6745, 7530, 7743, 8146, 8921, 10450, 185100] {
        deferred_crash_rounds(seed, 12, false).unwrap();
    }
}

#[test]
fn regression_a_log_reopened_in_place_makes_its_old_unlinks_durable_before_new_batches() {
    // A tail truncation (0..26 to 0..11) unlinked segment 16 and the log was reopened before
    // its job synced the directory; the start did not move, the reopened log appended at 16,
    // and a power loss before its first flush brought the old segment 16 back (`Log::reopen`).
    for seed in [5711, 9338] {
        deferred_crash_rounds(seed, 12, false).unwrap();
    }
}

#[test]
fn hundreds_of_crashes_inside_cleaning_never_lose_a_keys_latest_value() {
    // 60 seeds x 10 rounds = 600 rounds, most dying at a random disk call of up to four
    // cleaning passes (a quarter of the recoveries die again, some while completing a swap).
    let mut total = CleanRounds::default();
    let mut failures = Vec::new();
    for seed in 0..60u64 {
        match clean_rounds(seed, 10, Keep::Latest, false) {
            Ok(s) => total.add(&s),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{} failing seeds, first: {}\n  reproduce: cargo sim crash-log --clean --seeds N --verbose", failures.len(), failures[0]);
    // Guards: the rounds must really die mid-pass, complete committed swaps at open, clean
    // to completion too, and see tombstones and aborted transactions' records go.
    assert!(total.died_mid_pass * 3 > total.rounds, "{total:?}");
    assert!(total.swaps_completed > 10 && total.died_in_recovery > 10, "{total:?}");
    assert!(total.passes * 2 > total.rounds && total.tombstones_gone > 0 && total.aborted_gone > 0 && total.markers_removed > 0, "{total:?}");
}

#[test]
fn crash_rounds_inside_cleaning_are_deterministic_and_would_catch_a_cleaner_keeping_first_values() {
    assert_eq!(clean_rounds(5, 6, Keep::Latest, false), clean_rounds(5, 6, Keep::Latest, false));
    let caught = (0..20u64).filter(|&seed| clean_rounds(seed, 10, Keep::First, false).is_err()).count();
    assert!(caught >= 10, "the rounds' key check caught a keep-first cleaner on only {caught} of 20 seeds");
}

#[test]
fn crashes_inside_the_brokers_cleaning_jobs_never_lose_a_keys_latest_value() {
    // 40 seeds x 10 rounds with the log as the broker runs it: syncs (and, on half the seeds,
    // writes) deferred, every cleaning step, swap, discard and sync a job the owner runs, the
    // death landing anywhere, inside those jobs too.
    let mut total = CleanRounds::default();
    let mut failures = Vec::new();
    for seed in 0..40u64 {
        match deferred_clean_rounds(seed, 10, Keep::Latest, false) {
            Ok(s) => total.add(&s),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{} failing seeds, first: {}\n  reproduce: cargo sim crash-log --clean --deferred --seeds N --verbose", failures.len(), failures[0]);
    // Guards: deaths mid-pass and inside each kind of job, a swap's marker part among them;
    // committed swaps completed at open; passes to completion that removed markers.
    assert!(total.died_mid_pass * 3 > total.rounds && total.swaps_completed > 5 && total.died_in_recovery > 10, "{total:?}");
    assert!(total.died_in_sync_job > 0 && total.died_in_clean_job > 10 && total.died_in_swap_job > 10 && total.died_in_markers > 0, "{total:?}");
    assert!(total.passes * 2 > total.rounds && total.markers_removed > 0 && total.tombstones_gone > 0 && total.aborted_gone > 0, "{total:?}");
    assert_eq!(deferred_clean_rounds(5, 6, Keep::Latest, false), deferred_clean_rounds(5, 6, Keep::Latest, false));
}

// Bugs the deferred crash-clean rounds found (`cargo sim crash-log --clean --deferred`, seeds
// 0..3000 and 100000..103000: 65 of 6000 seeds failed, in four ways). Each test replays its seeds; unignore it
// with the fix. Reproduce one: `cargo sim crash-log --clean --deferred --seeds N --rounds 10
// --verbose`.

#[test]
fn regression_a_group_rewritten_over_several_steps_keeps_every_offset() {
    // Seed 600, round 7: the swapped-in `167.log` jumped from 167 to 176 ("batch base offset
    // 176 where 168 was expected" when the next pass read it); seed 624 no longer opened. A
    // step's read of empty batches cut short by its budget inside one source segment went on
    // from the next segment's base, skipping the rest (`log::read::read_across`).
    for seed in [600, 624, 2604] {
        deferred_clean_rounds(seed, 10, Keep::Latest, false).unwrap();
    }
}

#[test]
fn regression_an_index_entry_outlives_its_removed_marker_after_power_loss() {
    // Seed 217, round 7: every pass and swap completes (no death), a power loss follows, and
    // the reopened log's aborted-transaction index holds [315, 390] though the marker at 390
    // went in that round's pass. Root: a cleaning step whose read held only an empty batch,
    // cut by its budget, went on from the next segment's base (`log::read::read_across`), so
    // the ABORT marker at 390 was skipped, never judged: no `B.txnindex.cleaned` replaced the
    // old `386.txnindex`. The same skip lost k17 (below) and kept a snapshot below a marker
    // that was gone (seed 101331).
    for seed in [217, 341, 1353] {
        deferred_clean_rounds(seed, 10, Keep::Latest, false).unwrap();
    }
}

#[test]
fn regression_a_keys_latest_value_survives_the_brokers_cleaning_jobs() {
    // Seed 473, round 3: three swaps, no death, a power loss; the reopened log (which tiles its
    // offsets) has no record of k17, whose latest value was at offset 26.
    for seed in [473, 2969] {
        deferred_clean_rounds(seed, 10, Keep::Latest, false).unwrap();
    }
}

#[test]
fn regression_no_snapshot_holds_open_a_transaction_whose_marker_a_pass_removed() {
    // Seed 101331, round 2: eight swaps, no death, a clean crash; the reopened log restores
    // from snapshots [298, 300] a transaction open that no batch of the log leaves open.
    deferred_clean_rounds(101_331, 10, Keep::Latest, false).unwrap();
}

#[test]
fn regression_no_snapshot_holds_open_a_transaction_after_a_death_in_the_clean_points_job() {
    // Seed 17048, round 5: five swaps complete, the process dies in the pass's clean-point
    // job, then a power loss; round 6's open restores from snapshots [352, 384] a transaction
    // open that no batch of the recovered log leaves open. The rounds' model, not the log: the
    // transaction begun at 348 (snapshot 384 taken inside it) was ended by an ABORT at 401,
    // above the recovery point (384), and the rounds cleaned to 384, bounded only by the
    // transaction still open. The pass took 348 back for that abort; the power loss took the
    // unsynced marker (the death in the clean-point job plays no part). A partition's last
    // stable offset stays below a transaction whose marker its high watermark has not passed
    // (`ProducerStates::last_stable_offset`); the rounds now bound their passes so, the
    // recovery point standing for the high watermark.
    deferred_clean_rounds(17_048, 10, Keep::Latest, false).unwrap();
}
