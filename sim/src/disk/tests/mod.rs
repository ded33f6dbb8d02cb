//! `SimDisk`'s tests: the `Disk` contract (the conformance body `FileDisk` passes too), and
//! hostile random call sequences that must never panic; `crash` tests what survives a crash,
//! `faults` what each fault does. Each test checks the model's own invariants as it goes.

mod crash;
mod faults;
mod raft_store;

use super::{CrashMode, DiskFaults, SimDisk};
use broker_core::storage::{conformance, read_exact_at, Disk, DiskFile};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

fn p(path: &str) -> PathBuf {
    PathBuf::from(path)
}

/// A disk with a durable `/d`.
fn disk_with_dir(seed: u64, faults: DiskFaults) -> SimDisk {
    let disk = SimDisk::with_faults(seed, faults);
    disk.create_dir_all(&p("/d")).unwrap();
    disk.sync_dir(&p("/")).unwrap();
    disk
}

/// Creates `path` holding `bytes`, synced and with its name durable.
fn synced_file(disk: &SimDisk, path: &str, bytes: &[u8]) -> Box<dyn DiskFile> {
    let f = disk.open(&p(path), true).unwrap();
    f.write_at(bytes, 0).unwrap();
    f.sync().unwrap();
    disk.sync_dir(&broker_core::storage::parent_of(&p(path))).unwrap();
    f
}

fn read_all(disk: &SimDisk, path: &str) -> Vec<u8> {
    let f = disk.open(&p(path), false).unwrap();
    let mut buf = vec![0u8; f.len().unwrap() as usize];
    read_exact_at(f.as_ref(), &mut buf, 0).unwrap();
    buf
}

#[test]
fn conforms_to_disk_contract() {
    conformance::run(&SimDisk::new(1), Path::new("/root"));
    conformance::run(&SimDisk::new(2), Path::new("relative/root"));
}

/// Random calls with hostile arguments: nothing may panic and the invariants must hold.
#[test]
fn random_calls_never_panic() {
    let paths =
        ["/", "", ".", "/d", "/d/a", "/d/b", "/d/e", "/d/s", "/d/s/x", "/d/../d/a", "/d/a/x", "x"];
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
        let faults = DiskFaults {
            capacity_bytes: Some(64 << 10),
            eio_paths: vec!["/e".into()],
            ..DiskFaults::default()
        };
        let disk = SimDisk::with_faults(seed, faults);
        let mut files: Vec<Box<dyn DiskFile>> = Vec::new();
        for _ in 0..400 {
            let path = p(paths[rng.gen_range(0..paths.len())]);
            let to = p(paths[rng.gen_range(0..paths.len())]);
            let offset = if rng.gen_ratio(1, 20) {
                u64::MAX - rng.gen_range(0..4)
            } else {
                rng.gen_range(0..3000)
            };
            let bytes = vec![rng.gen::<u8>(); rng.gen_range(0..1200)];
            let f = (!files.is_empty()).then(|| rng.gen_range(0..files.len()));
            let _ = match rng.gen_range(0..16) {
                0 => disk.create_dir_all(&path),
                1 | 2 => disk.open(&path, rng.gen()).map(|f| files.push(f)),
                3 => disk.rename(&path, &to),
                4 => disk.remove(&path),
                5 => disk.sync_dir(&path),
                6 => disk.list(&path).map(drop),
                7 => disk.corrupt(&path, offset, &bytes),
                8 if rng.gen_ratio(1, 4) => {
                    disk.crash(if rng.gen() { CrashMode::Clean } else { CrashMode::PowerLoss });
                    Ok(())
                }
                9 => f.map(|i| drop(files.swap_remove(i))).ok_or(ErrorKind::Other.into()),
                10 => f.map_or(Ok(()), |i| files[i].write_at(&bytes, offset)),
                11 => f.map_or(Ok(()), |i| files[i].append(&bytes).map(drop)),
                12 => f.map_or(Ok(()), |i| files[i].truncate(offset)),
                13 => f.map_or(Ok(()), |i| files[i].sync()),
                14 => f.map_or(Ok(()), |i| {
                    files[i].read_at(&mut vec![0; bytes.len()], offset).map(drop)
                }),
                _ => f.map_or(Ok(()), |i| files[i].len().map(drop)),
            };
            disk.check_invariants();
        }
    }
}
