//! `sim view`: a trace as one self-contained HTML page — a space-time diagram with a lane per
//! node and client, events at their simulated time, arrows where the trace shows a cause on one
//! lane and its effect on another, faults as shaded spans, leader changes, acknowledged and lost
//! writes, and the checkers' violations at the time they happened.
//!
//! A trace file is untrusted input: it is read up to [`TRACE_BYTES_MAX`], a malformed line is an
//! error naming its line number, and every string the page embeds is escaped so that nothing in
//! a trace can close the page's `<script>` or inject markup. The page loads nothing from the
//! network (inline CSS and JS). This module is pure — no simulator, no clock — so it compiles and
//! is tested in both builds.

mod causal;
mod html;
mod parse;
#[cfg(test)]
mod tests;

use std::io::Read;
use std::path::Path;

pub use causal::Diagram;
pub use html::escape_script_json;
pub use parse::{parse, ParsedTrace, SummaryViolation, TraceEvent};

/// The largest trace `sim view` reads. A sweep's failing traces are a few MB; a page over this
/// would be too slow for a browser to lay out anyway.
pub const TRACE_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// Violations drawn as markers, each with its causal past: a broken checker can report one per
/// record, and the page must stay usable. The rest are counted, not drawn.
pub const VIOLATIONS_DRAWN_MAX: usize = 500;

/// Why a trace cannot be viewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewError {
    /// The file could not be read (the error, without the path: the caller names it).
    Io(String),
    /// Larger than [`TRACE_BYTES_MAX`].
    TooLarge { bytes: u64 },
    /// A line that is not what a trace holds, by 1-based line number.
    Line { line: usize, why: String },
    /// No line at all.
    Empty,
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewError::Io(e) => write!(f, "{e}"),
            ViewError::TooLarge { bytes } => write!(f, "trace is {bytes} bytes, over the {TRACE_BYTES_MAX}-byte limit of `sim view` (TRACE_BYTES_MAX)"),
            ViewError::Line { line, why } => write!(f, "line {line}: {why}"),
            ViewError::Empty => write!(f, "empty trace: no header line"),
        }
    }
}

/// Reads a trace file, refusing one over [`TRACE_BYTES_MAX`] before reading it whole.
pub fn read_trace(path: &Path) -> Result<String, ViewError> {
    let io = |e: std::io::Error| ViewError::Io(e.to_string());
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > TRACE_BYTES_MAX {
        return Err(ViewError::TooLarge { bytes: len });
    }
    // The file may grow while read: take at most one byte past the limit to notice.
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(TRACE_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > TRACE_BYTES_MAX {
        return Err(ViewError::TooLarge { bytes: bytes.len() as u64 });
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        ViewError::Line { line, why: "not UTF-8".into() }
    })
}

/// The whole page for a trace's text.
pub fn render(text: &str, title: &str) -> Result<String, ViewError> {
    if text.len() as u64 > TRACE_BYTES_MAX {
        return Err(ViewError::TooLarge { bytes: text.len() as u64 });
    }
    let trace = parse::parse(text)?;
    let diagram = causal::Diagram::of(&trace);
    Ok(html::page(title, &diagram.model(&trace)))
}
