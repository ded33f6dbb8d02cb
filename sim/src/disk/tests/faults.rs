//! What each disk fault does: a full disk fails growing calls and writes nothing, EIO hits only
//! the chosen file and heals, a dead process's calls fail from a chosen call on, latency
//! accumulates until taken, and bad settings are refused.

use super::{disk_with_dir, p, read_all};
use crate::disk::{DiskFaults, SimDisk};
use broker_core::storage::Disk;
use std::io::{self, ErrorKind};
use std::time::Duration;

#[test]
fn full_disk_fails_writes_and_writes_nothing() {
    let faults = DiskFaults { capacity_bytes: Some(1000), ..DiskFaults::default() };
    let disk = disk_with_dir(4, faults);
    let f = disk.open(&p("/d/f"), true).unwrap();
    f.append(&[1; 600]).unwrap();
    assert_eq!(disk.used_bytes(), 600);
    let (before, pending) = (disk.current_bytes(&p("/d/f")).unwrap(), disk.pending_ops());
    let full = |r: io::Result<()>| assert_eq!(r.unwrap_err().kind(), ErrorKind::StorageFull);
    full(f.append(&[2; 600]).map(drop));
    full(f.write_at(&[3; 500], 600));
    full(f.truncate(2000));
    assert_eq!(disk.current_bytes(&p("/d/f")).unwrap(), before);
    assert_eq!(disk.pending_ops(), pending);
    f.write_at(&[4; 100], 0).unwrap(); // an overwrite needs no space

    let g = disk.open(&p("/d/g"), true).unwrap();
    full(g.append(&[5; 500]).map(drop));
    // An unlinked file keeps its space while a handle is open (POSIX), until the journal
    // commit after the last close.
    disk.remove(&p("/d/f")).unwrap();
    disk.sync_dir(&p("/d")).unwrap();
    full(g.append(&[5; 500]).map(drop));
    assert_eq!(f.len().unwrap(), 600, "unlinked file still readable");
    drop(f);
    disk.sync_dir(&p("/d")).unwrap();
    assert_eq!(disk.used_bytes(), 0);
    g.append(&[5; 500]).unwrap();
    disk.check_invariants();
}

#[test]
fn a_dead_process_fails_every_call_from_the_chosen_one_and_changes_nothing() {
    let disk = disk_with_dir(6, DiskFaults::default());
    let f = disk.open(&p("/d/f"), true).unwrap();
    f.append(b"before").unwrap();
    let at = disk.ops();
    disk.set_faults(DiskFaults { dead_from_op: Some(at + 2), ..DiskFaults::default() });
    f.append(b"-one").unwrap();
    f.sync().unwrap();
    let (bytes, pending, ops) = (disk.current_bytes(&p("/d/f")).unwrap(), disk.pending_ops(), disk.ops());
    let dead = |r: io::Result<()>| assert_eq!(r.unwrap_err().kind(), ErrorKind::Other);
    dead(f.append(b"-two").map(drop));
    dead(f.sync());
    dead(disk.rename(&p("/d/f"), &p("/d/g")));
    dead(disk.open(&p("/d/h"), true).map(drop));
    dead(disk.sync_dir(&p("/d")));
    assert_eq!((disk.current_bytes(&p("/d/f")).unwrap(), disk.pending_ops(), disk.ops()), (bytes, pending, ops), "nothing changed");
    assert!(disk.exists(&p("/d/f")) && !disk.exists(&p("/d/g")));
    disk.set_faults(DiskFaults::default());
    f.append(b"-three").unwrap();
    assert_eq!(read_all(&disk, "/d/f"), b"before-one-three");
    disk.check_invariants();
}

#[test]
fn eio_hits_only_the_chosen_file() {
    let faults = DiskFaults { eio_paths: vec!["bad".into()], ..DiskFaults::default() };
    let disk = disk_with_dir(5, faults);
    let bad = disk.open(&p("/d/bad.log"), true).unwrap();
    let good = disk.open(&p("/d/good.log"), true).unwrap();
    let eio = |r: io::Result<()>| assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
    eio(bad.write_at(b"x", 0));
    eio(bad.append(b"x").map(drop));
    eio(bad.read_at(&mut [0; 1], 0).map(drop));
    eio(bad.truncate(1));
    eio(bad.sync());
    good.append(b"fine").unwrap();
    good.sync().unwrap();
    assert_eq!(read_all(&disk, "/d/good.log"), b"fine");

    disk.set_faults(DiskFaults::default());
    bad.append(b"healed").unwrap();
    bad.sync().unwrap();
    assert_eq!(read_all(&disk, "/d/bad.log"), b"healed");
}

#[test]
fn latency_accumulates_until_taken() {
    assert_eq!(disk_with_dir(6, DiskFaults::default()).take_stall(), Duration::ZERO);
    let faults =
        DiskFaults { latency_ns_min: 1_000, latency_ns_max: 2_000, ..DiskFaults::default() };
    let disk = SimDisk::with_faults(6, faults);
    disk.create_dir_all(&p("/d")).unwrap(); // 1
    let f = disk.open(&p("/d/a"), true).unwrap(); // 2
    for _ in 0..8 {
        f.append(b"x").unwrap(); // 3..=10
    }
    f.len().unwrap(); // free: cached metadata
    let stall = disk.take_stall();
    assert!(
        stall > Duration::from_nanos(10_000) && stall < Duration::from_nanos(20_000),
        "{stall:?}"
    );
    assert_eq!(disk.take_stall(), Duration::ZERO);
    f.sync().unwrap();
    let one = disk.take_stall();
    assert!(one >= Duration::from_nanos(1_000) && one <= Duration::from_nanos(2_000), "{one:?}");
}

#[test]
#[should_panic(expected = "latency_ns_min 5 > latency_ns_max 4")]
fn inverted_latency_range_is_rejected() {
    SimDisk::with_faults(
        0,
        DiskFaults { latency_ns_min: 5, latency_ns_max: 4, ..DiskFaults::default() },
    );
}
