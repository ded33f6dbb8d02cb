//! One conformance body for every [`Disk`]: `FileDisk` runs it in `broker-core`'s tests and
//! `SimDisk` (fault-free) in `sim`'s. It checks the visible contract only — what a reader sees
//! after each call — never durability, which only a crash can show and `sim` tests separately.
//! It panics on the first mismatch: it is a test body, not runtime code.

use super::{read_exact_at, write_atomically, Disk};
use std::io::ErrorKind;
use std::path::Path;

/// Runs every check inside `root`, which must be an empty (or absent) directory.
pub fn run(disk: &dyn Disk, root: &Path) {
    let dir = root.join("conf");
    disk.create_dir_all(&dir).expect("create_dir_all");
    disk.create_dir_all(&dir).expect("create_dir_all is idempotent");
    assert!(disk.exists(&dir));
    assert_eq!(disk.list(&dir).unwrap(), Vec::<String>::new(), "new directory is empty");

    let a = dir.join("a.log");
    assert!(!disk.exists(&a));
    let missing = disk.open(&a, false).err().expect("opening a missing file without create fails");
    assert_eq!(missing.kind(), ErrorKind::NotFound);

    // append and positional reads
    let f = disk.open(&a, true).expect("create");
    assert!(disk.exists(&a));
    assert_eq!(f.len().unwrap(), 0);
    assert_eq!(f.append(b"hello ").unwrap(), 0);
    assert_eq!(f.append(b"world").unwrap(), 6);
    assert_eq!(f.len().unwrap(), 11);
    let mut buf = [0u8; 11];
    read_exact_at(f.as_ref(), &mut buf, 0).unwrap();
    assert_eq!(&buf, b"hello world");
    let mut tail = [0u8; 8];
    assert_eq!(f.read_at(&mut tail, 6).unwrap(), 5, "short read at end of file");
    assert_eq!(&tail[..5], b"world");
    assert_eq!(f.read_at(&mut tail, 11).unwrap(), 0, "read at end of file");
    assert_eq!(f.read_at(&mut tail, 1000).unwrap(), 0, "read past end of file");
    let eof = read_exact_at(f.as_ref(), &mut [0u8; 4], 9).err().expect("read_exact past end fails");
    assert_eq!(eof.kind(), ErrorKind::UnexpectedEof);

    // overwrite in place, then write past the end leaves a zero gap
    f.write_at(b"HELLO", 0).unwrap();
    f.write_at(b"!", 13).unwrap();
    assert_eq!(f.len().unwrap(), 14);
    let mut all = [0xAAu8; 14];
    read_exact_at(f.as_ref(), &mut all, 0).unwrap();
    assert_eq!(&all, b"HELLO world\0\0!");
    assert_eq!(f.append(b"?").unwrap(), 14, "append follows write_at past the end");

    // truncate down and up
    f.truncate(5).unwrap();
    assert_eq!(f.len().unwrap(), 5);
    assert_eq!(f.append(b"!").unwrap(), 5);
    f.truncate(8).unwrap();
    let mut grown = [0xAAu8; 8];
    read_exact_at(f.as_ref(), &mut grown, 0).unwrap();
    assert_eq!(&grown, b"HELLO!\0\0");
    f.sync().unwrap();
    drop(f);

    // reopen sees the same bytes; open with create does not truncate
    let f = disk.open(&a, true).unwrap();
    assert_eq!(f.len().unwrap(), 8);
    let mut again = [0u8; 6];
    read_exact_at(f.as_ref(), &mut again, 0).unwrap();
    assert_eq!(&again, b"HELLO!");
    drop(f);

    // a large write round-trips
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let b = dir.join("b.log");
    let fb = disk.open(&b, true).unwrap();
    fb.append(&big).unwrap();
    let mut back = vec![0u8; big.len()];
    read_exact_at(fb.as_ref(), &mut back, 0).unwrap();
    assert!(back == big, "200 kB round trip");
    drop(fb);

    // listing is sorted names, not paths
    disk.open(&dir.join("0.index"), true).unwrap();
    assert_eq!(disk.list(&dir).unwrap(), vec!["0.index", "a.log", "b.log"]);

    // rename replaces the target; the source name disappears
    disk.rename(&b, &a).unwrap();
    assert!(!disk.exists(&b));
    let fa = disk.open(&a, false).unwrap();
    assert_eq!(fa.len().unwrap(), big.len() as u64);
    drop(fa);
    assert_eq!(disk.list(&dir).unwrap(), vec!["0.index", "a.log"]);
    assert_eq!(disk.rename(&b, &a).unwrap_err().kind(), ErrorKind::NotFound);

    // remove
    disk.remove(&a).unwrap();
    assert!(!disk.exists(&a));
    assert_eq!(disk.remove(&a).unwrap_err().kind(), ErrorKind::NotFound);
    disk.sync_dir(&dir).unwrap();

    // atomic replace helper
    let cp = dir.join("checkpoint");
    write_atomically(disk, &cp, b"first version, long").unwrap();
    write_atomically(disk, &cp, b"second").unwrap();
    let fc = disk.open(&cp, false).unwrap();
    let mut cbuf = vec![0u8; fc.len().unwrap() as usize];
    read_exact_at(fc.as_ref(), &mut cbuf, 0).unwrap();
    assert_eq!(cbuf, b"second");
    disk.sync_all(&dir).unwrap();
    assert_eq!(disk.list(&dir).unwrap(), vec!["0.index", "checkpoint"]);

    // listing a missing directory is NotFound
    assert_eq!(disk.list(&root.join("nope")).unwrap_err().kind(), ErrorKind::NotFound);

    // remove_dir: only empty directories
    let sub = dir.join("sub");
    disk.create_dir_all(&sub).unwrap();
    disk.open(&sub.join("f"), true).unwrap();
    assert_eq!(disk.remove_dir(&sub).unwrap_err().kind(), ErrorKind::DirectoryNotEmpty);
    disk.remove(&sub.join("f")).unwrap();
    disk.remove_dir(&sub).unwrap();
    assert!(!disk.exists(&sub));
    assert_eq!(disk.remove_dir(&sub).unwrap_err().kind(), ErrorKind::NotFound);
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_disk_conforms() {
        let tmp = tempfile::tempdir().unwrap();
        super::run(&super::super::FileDisk::new(), tmp.path());
    }
}
