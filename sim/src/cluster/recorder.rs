//! The run's recorder: one trace and one history shared by every node's tasks, each event and
//! operation stamped with simulated milliseconds since the run began. It also carries the one
//! signal the harness gives the producers: when to stop invoking writes.
//!
//! It records and never decides: nothing here may read a wall clock, or order events any way
//! but the order the simulator ran them in.

use crate::history::History;
use crate::trace::Trace;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Shared recorder for the trace and history, stamped with simulated time.
pub(crate) struct Recorder {
    start: madsim::time::Instant,
    trace: Trace,
    pub(crate) history: History,
    /// When producers stop invoking writes; unknown (`None`) until the last fault is undone.
    pub(crate) produce_until_ms: Option<u64>,
    /// The simulated second events are being counted in, and how many came in it.
    second: (u64, u64),
}

/// More recorded events than this in one simulated second is a livelock, not a run: tasks
/// taking turn after turn while simulated time crawls (madsim moves it 50–100 ns a task), as the
/// log cleaner did on a full disk (scenarios/regression/cleaner-full-disk-spins.toml: the run
/// never ended and grew to 14 GB). A busy second of a normal run records a few thousand.
const events_per_second_max: u64 = 1_000_000;

pub(crate) type Rec = Arc<Mutex<Recorder>>;

impl Recorder {
    /// A recorder whose clock starts now, writing after the trace's header.
    pub(crate) fn start(trace: Trace) -> Rec {
        Arc::new(Mutex::new(Recorder { start: madsim::time::Instant::now(), trace, history: History::default(), produce_until_ms: None, second: (0, 0) }))
    }
}

pub(crate) fn now_ms(rec: &Rec) -> u64 {
    rec.lock().expect("recorder").now_ms()
}

impl Recorder {
    /// Simulated ms since the run began.
    pub(crate) fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
}

/// Simulated ms of `at` since the run began (an instant a client stamped).
#[cfg(madsim)]
pub(crate) fn ms_at(rec: &Rec, at: madsim::time::Instant) -> u64 {
    at.saturating_duration_since(rec.lock().expect("recorder").start).as_millis() as u64
}

/// Whether producers should keep invoking writes.
pub(crate) fn producing(rec: &Rec) -> bool {
    let r = rec.lock().expect("recorder");
    let now = r.start.elapsed().as_millis() as u64;
    r.produce_until_ms.is_none_or(|until| now < until)
}

/// Records one event. Panics on a livelock ([`events_per_second_max`]): the run then fails
/// with that message (`sweep::run_one`) instead of never ending.
pub(crate) fn event(rec: &Rec, node: &str, name: &str, fields: Value) {
    let mut r = rec.lock().expect("recorder");
    let t = r.start.elapsed().as_millis() as u64;
    let second = t / 1000;
    r.second = if r.second.0 == second { (second, r.second.1 + 1) } else { (second, 1) };
    if r.second.1 > events_per_second_max {
        let last = format!("{node} {name} {fields}");
        drop(r); // not poisoned: the unwinding run drops its recorder
        panic!("livelock: over {events_per_second_max} events recorded in the simulated second from {t} ms; the last: {last}");
    }
    r.trace.event(t, node, name, fields);
}

/// What was recorded. Broker nodes' init closures still hold the recorder, so it is taken
/// out rather than unwrapped.
pub(crate) fn take(rec: &Rec) -> (Trace, History) {
    let mut r = rec.lock().expect("recorder");
    (std::mem::take(&mut r.trace), std::mem::take(&mut r.history))
}
