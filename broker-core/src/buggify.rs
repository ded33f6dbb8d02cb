//! BUGGIFY (FoundationDB's name): perturbation points in the broker that a simulated run turns
//! on from its seed, to push the code into rare paths a fault schedule alone seldom reaches — an
//! ISR change answered but the answer lost, a replica-lag window cut short, an fsync that
//! completes late. Each [`Site`] is enabled for a whole run with probability 1/2; an enabled
//! site fires on a share of its evaluations (5–30%, also drawn per run). Every draw is a hash of
//! the handle's seed, the site and how many times the site was evaluated before, so the same
//! seed fires the same sites at the same evaluations (madsim runs a simulation on one thread,
//! in a seeded order).
//!
//! It must never read OS randomness or the clock, and it is inert where it is not asked for: in
//! the real build [`Buggify`] is zero-sized and [`Buggify::fires`] a constant `false`; in the
//! simulated build a handle that was not seeded (every scenario without `buggify = true`) never
//! fires, so those runs' traces are unchanged.

/// A perturbation point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A leader's ISR proposals take a replica-lag window a fifth as long for one tick, so
    /// followers that are merely a little behind leave the ISR and come back (ISR churn). It
    /// can leave the leader alone in the ISR, so it belongs only where every acknowledgement
    /// is fsynced: without that, the lone leader's power loss loses committed records, Kafka's
    /// behaviour before KIP-966, which no fault budget then excludes.
    ShortLag,
    /// An AlterPartition answer the controller sent is dropped on the way back: the change
    /// may be committed while the leader hears nothing (and the proposals after it in the
    /// round go unsent).
    IsrAnswerDropped,
    /// A decision that touched the disk completes 20–400 ms late (a slow fsync), holding the
    /// node's disk gate meanwhile.
    SlowSync,
    /// The controller answers an AlterPartition it committed with KAFKA_STORAGE_ERROR, as when
    /// its metadata log's sync fails after the write landed (a reopen replays it): the leader
    /// hears an error about a change that is in the log.
    IsrAnswerStorageError,
    /// Metadata records the broker fetched are applied 50–1,000 ms late (a slow metadata
    /// fetch), so the answers of its own ISR changes arrive long before their records.
    MetadataLate,
    /// A cleaning swap's job (`log::swap`) completes 20–400 ms late, so truncations, retention
    /// and leader changes land while it is in flight.
    SlowSwap,
    /// A cleaning swap's or a truncation's job starts 20–400 ms late (queued behind others on
    /// the blocking pool), so the log can be reopened or its topic deleted before it runs: it
    /// must then do nothing (`log::fence`).
    LateJob,
}

impl Site {
    /// Every site, in the order of their draws: a site added at the end leaves the draws of the
    /// earlier ones (and so which of them a seed enables) unchanged.
    pub const ALL: [Site; 7] = [Site::ShortLag, Site::IsrAnswerDropped, Site::SlowSync, Site::IsrAnswerStorageError, Site::MetadataLate, Site::SlowSwap, Site::LateJob];

    #[cfg(madsim)]
    fn index(self) -> usize {
        self as usize
    }
}

/// A broker's BUGGIFY handle (shared by the clones of its config).
#[derive(Debug, Clone, Default)]
pub struct Buggify(#[cfg(madsim)] Option<std::sync::Arc<std::sync::Mutex<State>>>);

#[cfg(madsim)]
#[derive(Debug)]
struct State {
    seed: u64,
    /// Per site: its share of evaluations that fire, in thousandths (0: disabled this run).
    per_mille: [u64; Site::ALL.len()],
    /// Per site: evaluations so far.
    evaluations: [u64; Site::ALL.len()],
}

/// SplitMix64's finalizer: a bijection that spreads every input bit over the output.
#[cfg(madsim)]
fn finalize(h: u64) -> u64 {
    let h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A well-mixed hash of `seed` and two words: each is mixed in through the finalizer, so
/// nearby seeds, sites and evaluation numbers draw unrelated values.
#[cfg(madsim)]
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    const golden: u64 = 0x9e37_79b9_7f4a_7c15;
    finalize(finalize(finalize(seed).wrapping_add(a.wrapping_mul(golden))).wrapping_add(b.wrapping_mul(golden)))
}

impl Buggify {
    /// A handle whose sites among `allowed` are enabled, and fire, as `seed` says (a site's
    /// draws do not depend on which others are allowed).
    #[cfg(madsim)]
    pub fn seeded(seed: u64, allowed: &[Site]) -> Buggify {
        let mut per_mille = [0; Site::ALL.len()];
        for site in Site::ALL {
            if allowed.contains(&site) && mix(seed, site.index() as u64, u64::MAX) % 2 == 0 {
                per_mille[site.index()] = 50 + mix(seed, site.index() as u64, u64::MAX - 1) % 251;
            }
        }
        Buggify(Some(std::sync::Arc::new(std::sync::Mutex::new(State { seed, per_mille, evaluations: [0; Site::ALL.len()] }))))
    }

    /// Every site goes quiet for the rest of the run (the simulator's healing phase).
    pub fn quiet(&self) {
        #[cfg(madsim)]
        if let Some(state) = &self.0 {
            state.lock().unwrap_or_else(|p| p.into_inner()).per_mille = [0; Site::ALL.len()];
        }
    }

    /// The sites this run enabled, with their share in thousandths (for the trace header).
    pub fn enabled(&self) -> Vec<(Site, u64)> {
        #[cfg(madsim)]
        if let Some(state) = &self.0 {
            let s = state.lock().unwrap_or_else(|p| p.into_inner());
            return Site::ALL.into_iter().filter(|site| s.per_mille[site.index()] > 0).map(|site| (site, s.per_mille[site.index()])).collect();
        }
        Vec::new()
    }

    /// Whether `site` fires at this evaluation (never in the real build).
    #[inline]
    pub fn fires(&self, site: Site) -> bool {
        self.draw(site).is_some()
    }

    /// When `site` fires, a number drawn with it (to pick how much), else None.
    #[inline]
    pub fn draw(&self, site: Site) -> Option<u64> {
        #[cfg(madsim)]
        if let Some(state) = &self.0 {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            let i = site.index();
            if s.per_mille[i] == 0 {
                return None;
            }
            let n = s.evaluations[i];
            s.evaluations[i] += 1;
            let h = mix(s.seed, i as u64, n);
            return (h % 1000 < s.per_mille[i]).then_some(h / 1000);
        }
        let _ = site;
        None
    }
}
