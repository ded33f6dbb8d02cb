//! The page: one HTML file with its CSS and JS inline (`page.html`), the model embedded as JSON
//! in a `<script type="application/json">`. Escaping is the whole of this module's safety: the
//! title is HTML-escaped, and the JSON has `<`, `>`, `&`, U+2028 and U+2029 written as `\u`
//! escapes, so no string from a trace can end the script element or open a tag. The page's JS
//! puts trace text into the DOM only as `textContent`.

use serde_json::Value;

const TEMPLATE: &str = include_str!("page.html");

/// JSON safe inside a `<script>` element: the characters that could end it or start markup,
/// and the two line separators old JS parsers refuse in strings, as `\u` escapes. Outside
/// strings serde_json writes none of them, so the result is the same JSON value.
pub fn escape_script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Text safe in HTML content and in a double-quoted attribute.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page: the template with the title and the model filled in, each place once (so a
/// title holding `{{MODEL}}` stays text).
pub fn page(title: &str, model: &Value) -> String {
    let (head, rest) = TEMPLATE.split_once("{{TITLE}}").expect("page.html has {{TITLE}}");
    let (middle, tail) = rest.split_once("{{MODEL}}").expect("page.html has {{MODEL}} after {{TITLE}}");
    let model = escape_script_json(&model.to_string());
    let mut out = String::with_capacity(TEMPLATE.len() + title.len() + model.len());
    out.push_str(head);
    out.push_str(&escape_html(title));
    out.push_str(middle);
    out.push_str(&model);
    out.push_str(tail);
    out
}
