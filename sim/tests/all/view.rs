//! `sim view` end to end. The committed example trace renders with a lane per node and its
//! violation (both builds). Under `cargo simtest`, a run with a planted bug is recorded,
//! rendered and loaded in headless Chromium: the page's script runs without a JS error, the DOM
//! holds a lane per node of the trace and a violation marker, and a screenshot is taken.
//! Chromium missing is a failure, not a skip: `scripts/test.sh` installs it.

use std::collections::BTreeSet;
#[cfg(madsim)]
use std::path::Path;
use std::path::PathBuf;

/// The example under `traces/` that docs/simulation.md shows.
const EXAMPLE: &str = "../traces/crash-restart-planted-ack-before-append-0.jsonl";

/// The nodes a trace's events name: the lanes the page must draw.
fn nodes(text: &str) -> BTreeSet<String> {
    sim::view::parse(text).unwrap().events.into_iter().map(|e| e.node).collect()
}

/// `data-node` of every `<g class="lane">` in an HTML text (the page sets `class` first).
#[cfg(madsim)]
fn lanes_in_dom(dom: &str) -> BTreeSet<String> {
    dom.split("<g class=\"lane\" data-node=\"").skip(1).filter_map(|rest| rest.split_once('"')).map(|(name, _)| name.to_string()).collect()
}

#[test]
fn the_example_trace_renders_every_node_and_its_violation() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE);
    let text = sim::view::read_trace(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let trace = sim::view::parse(&text).unwrap();
    assert!(trace.violations.iter().any(|v| v.checker == "acknowledged_durable" && v.loss && v.at_ms.is_some_and(|t| t > 0)), "the example loses acknowledged writes");
    let page = sim::view::render(&text, "example").unwrap();
    assert!(page.len() < 4 * text.len() + 100_000, "page {} bytes for a {}-byte trace", page.len(), text.len());
    // Nothing loads from the network: no source attribute, no URL but the SVG namespace.
    assert!(!page.contains(" src=") && !page.contains("https://") && !page.contains("@import"));
    assert_eq!(page.matches("http://").count(), page.matches("http://www.w3.org/2000/svg").count());
    assert!(nodes(&text).len() >= 4, "brokers and clients");
    let diagram = sim::view::Diagram::of(&trace);
    assert!(diagram.spans.iter().any(|s| s.kind == "Kill" && s.healed), "the kills are shaded until their restart");
    assert!(diagram.points.iter().any(|p| p.class == "lost"), "some acknowledged batch is drawn lost");
}

/// Runs `cmd` for at most `limit`, its stdout into `out`; kills it past the limit.
#[cfg(madsim)]
fn run_bounded(mut cmd: std::process::Command, out: &Path, limit: std::time::Duration) -> std::process::ExitStatus {
    let stdout = std::fs::File::create(out).unwrap();
    let mut child = cmd.stdout(stdout).stderr(std::process::Stdio::null()).spawn().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {limit:?}: {cmd:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Debian's chromium, or a failure saying how to get it.
#[cfg(madsim)]
fn chromium() -> PathBuf {
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).map(|d| d.join("chromium"));
    std::iter::once(PathBuf::from("/usr/bin/chromium")).chain(on_path).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!("the `sim view` browser test needs Chromium: `apt-get install chromium` (Debian), or run scripts/test.sh, which installs it")
    })
}

/// Loads `page` headless, with a fresh profile and no network: the DOM after the page's
/// script ran, and a screenshot at `png`.
#[cfg(madsim)]
fn load_in_chromium(page: &Path, png: &Path, dir: &Path) -> String {
    let browser = chromium();
    let base = |profile: &str| {
        let mut cmd = std::process::Command::new(&browser);
        cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1600,900"]);
        cmd.arg(format!("--user-data-dir={}", dir.join(profile).display()));
        cmd
    };
    let url = format!("file://{}", page.display());
    let limit = std::time::Duration::from_secs(60);
    let mut shot = base("profile-shot");
    shot.arg(format!("--screenshot={}", png.display())).arg(&url);
    let status = run_bounded(shot, &dir.join("shot.out"), limit);
    assert!(status.success(), "chromium --screenshot: {status}");
    let mut dump = base("profile-dom");
    dump.arg("--dump-dom").arg(&url);
    let dom_file = dir.join("dom.html");
    let status = run_bounded(dump, &dom_file, limit);
    assert!(status.success(), "chromium --dump-dom: {status}");
    std::fs::read_to_string(&dom_file).unwrap()
}

#[cfg(madsim)]
#[test]
fn a_failing_run_renders_in_a_headless_browser() {
    use broker_core::broker::PlantedBug;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fast/smoke.toml");
    let s = sim::scenario::Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let r = crate::run(&s, "scenarios/fast/smoke.toml", 0, Some(PlantedBug::FetchAboveHighWatermark));
    assert!(r.violations.iter().any(|v| v.checker == "read_above_hw"), "the planted bug must fail the run");

    // `SEEDLOG_VIEW_KEEP=dir` keeps the trace, page and screenshot (how traces/'s example was made).
    let dir = std::env::var_os("SEEDLOG_VIEW_KEEP").map(PathBuf::from).unwrap_or_else(|| std::env::temp_dir().join(format!("seedlog-view-test-{}", std::process::id())));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("smoke-planted-fetch-above-hw-0.jsonl");
    let text = r.trace.to_jsonl();
    std::fs::write(&trace, &text).unwrap();
    let page = dir.join("smoke-planted-fetch-above-hw-0.html");
    std::fs::write(&page, sim::view::render(&text, "smoke, planted FetchAboveHighWatermark, seed 0").unwrap()).unwrap();
    let png = dir.join("smoke-planted-fetch-above-hw-0.png");
    let _ = std::fs::remove_file(&png);

    let dom = load_in_chromium(&page, &png, &dir);
    assert!(dom.contains("<pre id=\"errors\"></pre>"), "the page reported a JS error: {}", dom.split("<pre id=\"errors\">").nth(1).and_then(|r| r.split_once("</pre>")).map_or("<no errors element>", |(e, _)| e));
    assert!(dom.contains("data-rendered=\"1\""), "the page's script did not finish");
    assert_eq!(lanes_in_dom(&dom), nodes(&text), "one lane per node of the trace");
    assert!(dom.contains("<path class=\"violation"), "a violation marker");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert!(bytes.len() > 1000 && bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "screenshot is not a PNG ({} bytes)", bytes.len());
    if std::env::var_os("SEEDLOG_VIEW_KEEP").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Writes the example trace under `traces/` again (after a change that alters it):
/// `cargo simtest view::write_the_example_trace -- --ignored`. A crash-restart run with the
/// planted AckBeforeAppend bug: kills, restarts, leader changes and lost acknowledged writes.
#[cfg(madsim)]
#[test]
#[ignore]
fn write_the_example_trace() {
    use broker_core::broker::PlantedBug;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fast/crash-restart.toml");
    let s = sim::scenario::Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let r = crate::run(&s, "scenarios/fast/crash-restart.toml", 0, Some(PlantedBug::AckBeforeAppend));
    assert!(r.violations.iter().any(|v| v.checker == "acknowledged_durable"), "seed 0 no longer catches the bug: pick another seed and rename the example");
    std::fs::write(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE), r.trace.to_jsonl()).unwrap();
}
