//! Bounded fuzzing (proptest, a fixed number of cases) of what a hostile result file can
//! reach: the reader and every renderer, and the chart axes. A real saved result
//! (`expected/sample.json`) is mutated (figures replaced by any number, including ones no
//! run writes; strings by text with terminal controls and markup; fields removed; lists
//! emptied or repeated) and fed to `parse_result`; what it accepts is rendered as HTML and in
//! every text format. The axes get any range (NaN, infinities, subnormals, huge, equal or
//! reversed ends). Nothing may panic or loop; ticks are bounded in number, finite and within
//! the range; text formats carry no terminal control characters.

use candor_model::parse_result;
use candor_report::svg::{self, AxisKind, LineChart, Series, MAX_TICKS};
use proptest::prelude::*;
use serde_json::Value;

fn sample() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/expected/sample.json"
    ))
    .unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    // Four results keep a case fast in a debug build; they have timelines, repetitions and
    // histograms.
    let r: Vec<Value> = v["results"].as_array().unwrap()[..4].to_vec();
    v["results"] = Value::Array(r);
    v
}

/// Every leaf's path, to pick one to change.
fn leaves(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                at.push(k.clone());
                leaves(x, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate().take(3) {
                at.push(i.to_string());
                leaves(x, at, out);
                at.pop();
            }
            out.push(at.clone());
        }
        _ => out.push(at.clone()),
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = v;
    for k in path {
        cur = match cur {
            Value::Object(m) => m.get_mut(k)?,
            Value::Array(a) => a.get_mut(k.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn any_figure() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(1.7e308),
        Just(-1.7e308),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(0.0),
        Just(-0.0),
        Just(1e29),
        Just(-1e29),
        Just(u64::MAX as f64),
        (-1e12f64..1e12),
    ]
}

const HOSTILE: &[&str] = &[
    "\u{1b}[2J\u{1b}]0;owned\u{7}",
    "a\rb\u{8}c\u{9b}31m",
    "| pipe | `tick` <script>alert(1)</script> [x](javascript:alert(1))",
    "# heading\n\n- item",
    "\"quoted\" & 'single' </title><svg onload=alert(1)>",
    "",
    "é\u{202e}rtl",
];

#[derive(Debug, Clone)]
enum Change {
    Figure(f64),
    Integer(u64),
    Text(usize),
    Remove,
    Empty,
    Repeat(usize),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        any_figure().prop_map(Change::Figure),
        any::<u64>().prop_map(Change::Integer),
        (0..HOSTILE.len()).prop_map(Change::Text),
        Just(Change::Remove),
        Just(Change::Empty),
        (2usize..40).prop_map(Change::Repeat),
    ]
}

fn apply(v: &mut Value, path: &[String], c: &Change) {
    if let Change::Remove = c {
        if let Some((last, parent)) = path.split_last() {
            if let Some(Value::Object(m)) = at_mut(v, parent) {
                m.remove(last);
            }
        }
        return;
    }
    let Some(x) = at_mut(v, path) else { return };
    match c {
        Change::Figure(f) => *x = serde_json::json!(f),
        Change::Integer(n) => *x = serde_json::json!(n),
        Change::Text(i) => *x = Value::String(HOSTILE[*i].to_string()),
        Change::Empty => {
            *x = match x {
                Value::Array(_) => Value::Array(Vec::new()),
                Value::Object(_) => Value::Object(Default::default()),
                Value::String(_) => Value::String(String::new()),
                _ => Value::Null,
            }
        }
        Change::Repeat(n) => {
            if let Value::Array(a) = x {
                if let Some(first) = a.first().cloned() {
                    a.extend(std::iter::repeat_n(first, *n));
                }
            }
        }
        Change::Remove => {}
    }
}

/// Text formats the terminal shows carry no control character but newline and tab.
fn no_controls(name: &str, s: &str) {
    if let Some(c) = s
        .chars()
        .find(|c| (c.is_control() && *c != '\n' && *c != '\t') || *c == '\u{202e}')
    {
        panic!("{name}: control character {c:?} in the output");
    }
}

fn render_all(text: &str) {
    let Ok(doc) = parse_result(text, "fuzz.json") else {
        return;
    };
    let html = candor_report::render_html(&doc);
    assert!(html.starts_with("<!DOCTYPE html>") || html.starts_with("<!doctype html>"));
    assert!(
        !html.contains("<script>alert"),
        "markup from the file escaped in HTML"
    );
    assert!(
        !html.contains("<svg onload"),
        "markup from the file escaped in HTML"
    );
    for f in candor_report::FORMATS {
        let out = candor_report::render(&doc, f.format);
        if matches!(f.name, "table" | "markdown" | "iozone" | "excel" | "csv") {
            no_controls(f.name, &out);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_result_is_refused_or_rendered(
        picks in proptest::collection::vec((any::<prop::sample::Index>(), change()), 1..5)
    ) {
        let mut v = sample();
        let mut paths = Vec::new();
        leaves(&v, &mut Vec::new(), &mut paths);
        for (i, c) in &picks {
            let p = &paths[i.index(paths.len())];
            apply(&mut v, p, c);
        }
        render_all(&v.to_string());
    }

    #[test]
    fn linear_ticks_are_few_finite_and_within_the_range(
        lo in any_figure(), hi in any_figure(), n in 0usize..100
    ) {
        let t = svg::linear_ticks(lo, hi, n);
        let (a, b) = svg::drawable(lo, hi, AxisKind::Linear);
        prop_assert!(!t.is_empty() && t.len() <= MAX_TICKS, "{} ticks for {lo}..{hi}", t.len());
        for x in &t {
            prop_assert!(x.is_finite() && *x >= a && *x <= b, "tick {x} for {lo}..{hi}");
        }
        prop_assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
    }

    #[test]
    fn a_chart_of_any_points_is_drawn_with_finite_coordinates(
        pts in proptest::collection::vec((any_figure(), any_figure()), 0..12),
        kinds in (0usize..3, 0usize..3),
        markers in any::<bool>(),
    ) {
        let kind = |k| [AxisKind::Linear, AxisKind::Log2, AxisKind::Log10][k];
        let c = LineChart {
            id: "f".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_kind: kind(kinds.0),
            y_kind: kind(kinds.1),
            x_fmt: |x| format!("{x}"),
            y_fmt: |x| format!("{x}"),
            series: vec![Series {
                name: "s".into(),
                points: pts.clone(),
                err: pts.iter().map(|p| (p.1, p.0)).collect(),
                ..Default::default()
            }],
            width: 600.0,
            height: 300.0,
            markers,
        };
        let s = svg::line_chart(&c);
        // Every coordinate the chart writes is a number a browser can place.
        for attr in [" x=\"", " y=\"", " x1=\"", " y1=\"", " x2=\"", " y2=\"", " cx=\"", " cy=\""] {
            for part in s.split(attr).skip(1) {
                let v = &part[..part.find('"').unwrap()];
                prop_assert!(v.parse::<f64>().is_ok_and(f64::is_finite), "{attr}{v} in {s}");
            }
        }
        prop_assert!(s.matches("class=\"tk\"").count() <= 2 * MAX_TICKS);
    }
}
