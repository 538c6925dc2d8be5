//! The latency-cost chart: one point per candidate (cost per million requests against p99
//! latency), the frontier of candidates no other beats on both, the recommendation ringed.

use std::fmt::Write;

use super::CandidateResult;

const W: f64 = 880.0;
const H: f64 = 480.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 320.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An axis over `[lo, hi]`, logarithmic when the values span more than a factor of 20.
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn new(values: impl Iterator<Item = f64> + Clone) -> Self {
        let lo = values.clone().fold(f64::INFINITY, f64::min);
        let hi = values.fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let log = lo > 0.0 && hi / lo > 20.0;
        if log {
            Self {
                lo: lo / 1.3,
                hi: hi * 1.3,
                log,
            }
        } else {
            let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.05).max(1e-9);
            Self {
                lo: (lo - pad).max(0.0),
                hi: hi + pad,
                log,
            }
        }
    }

    /// Position in 0..1.
    fn at(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let mut p = 10f64.powf(self.lo.log10().floor());
            while p <= self.hi {
                for m in [1.0, 2.0, 5.0] {
                    let v = p * m;
                    if v >= self.lo && v <= self.hi {
                        t.push(v);
                    }
                }
                p *= 10.0;
            }
            t
        } else {
            let raw = (self.hi - self.lo) / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw)
                .unwrap_or(raw);
            let mut v = (self.lo / step).ceil() * step;
            let mut t = Vec::new();
            while v <= self.hi + step * 1e-9 {
                t.push(v);
                v += step;
            }
            t
        }
    }
}

fn label(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Indices of the candidates on the frontier, by increasing cost.
pub(super) fn frontier(points: &[(usize, f64, f64)]) -> Vec<usize> {
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.2.total_cmp(&b.2)));
    let mut best = f64::INFINITY;
    let mut out = Vec::new();
    for (i, _, y) in sorted {
        if y < best {
            best = y;
            out.push(i);
        }
    }
    out
}

/// The chart as an SVG document.
pub(super) fn frontier_svg(results: &[CandidateResult], recommended: Option<usize>) -> String {
    let use_ttft = results.iter().all(|r| r.ok == 0 || r.ttft_ms.samples > 0);
    let y_name = if use_ttft {
        "TTFT p99 (ms)"
    } else {
        "latency p99 (ms)"
    };
    let points: Vec<(usize, f64, f64)> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.ok > 0)
        .map(|(i, r)| {
            let y = if use_ttft {
                r.ttft_ms.p99
            } else {
                r.latency_ms.p99
            };
            (i, r.cost_per_million_usd, y)
        })
        .collect();
    let names: Vec<String> = results.iter().map(|r| r.candidate.name.clone()).collect();
    scatter_svg(
        &Scatter {
            title: "Latency against cost per candidate",
            x_name: "cost per million requests (USD",
            y_name,
            names: &names,
            points: &points,
        },
        recommended,
    )
}

/// A scatter of named points with the frontier of those no other beats on both axes.
pub(super) struct Scatter<'a> {
    pub title: &'a str,
    /// The x axis's name, without its closing parenthesis (the scale's note goes in it).
    pub x_name: &'a str,
    pub y_name: &'a str,
    pub names: &'a [String],
    /// (index into `names`, x, y).
    pub points: &'a [(usize, f64, f64)],
}

/// A scatter as an SVG document, the point `ringed` marked.
pub(super) fn scatter_svg(chart: &Scatter<'_>, ringed: Option<usize>) -> String {
    let Scatter {
        title,
        x_name,
        y_name,
        names,
        points,
    } = *chart;
    let recommended = ringed;
    let x = Axis::new(points.iter().map(|p| p.1));
    let y = Axis::new(points.iter().map(|p| p.2));
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let px = |v: f64| LEFT + x.at(v) * pw;
    let py = |v: f64| TOP + (1.0 - y.at(v)) * ph;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        escape(title)
    );
    for t in x.ticks() {
        let at = px(t);
        let _ = writeln!(
            s,
            r##"<line x1="{at:.1}" y1="{TOP}" x2="{at:.1}" y2="{:.1}" stroke="#eee"/><text x="{at:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 18.0,
            label(t)
        );
    }
    for t in y.ticks() {
        let at = py(t);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{at:.1}" x2="{:.1}" y2="{at:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            at + 4.0,
            label(t)
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_name}{})</text>"#,
        LEFT + pw / 2.0,
        H - 18.0,
        if x.log { ", log scale" } else { "" }
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{y_name}{}</text>"#,
        TOP + ph / 2.0,
        if y.log { ", log scale" } else { "" }
    );
    let line: Vec<String> = frontier(points)
        .iter()
        .map(|&i| {
            let p = points.iter().find(|p| p.0 == i).expect("a point");
            format!("{:.1},{:.1}", px(p.1), py(p.2))
        })
        .collect();
    if line.len() > 1 {
        let _ = writeln!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#2a7" stroke-width="2" stroke-dasharray="6 4"/>"##,
            line.join(" ")
        );
    }
    for (n, &(i, cx, cy)) in points.iter().enumerate() {
        let (cx, cy) = (px(cx), py(cy));
        if Some(i) == recommended {
            let _ = writeln!(
                s,
                r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="11" fill="none" stroke="#d33" stroke-width="2.5"/>"##
            );
        }
        let _ = writeln!(
            s,
            r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="5" fill="#36c"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"##,
            cx + 8.0,
            cy - 6.0,
            n + 1
        );
    }
    // The legend names each numbered point.
    for (n, &(i, _, _)) in points.iter().enumerate() {
        let mark = if Some(i) == recommended {
            " (recommended)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11">{}. {}{mark}</text>"#,
            W - RIGHT + 14.0,
            TOP + 14.0 + n as f64 * 16.0,
            n + 1,
            escape(&names[i])
        );
    }
    s.push_str("</svg>\n");
    s
}

const PALETTE: &[&str] = &["#36c", "#d62", "#2a7", "#a3c", "#c93", "#099", "#777"];

/// Grouped bars: per group (a class), one bar per series (a configuration), values in 0..=1.
pub(super) fn bars_svg(title: &str, groups: &[String], series: &[(String, Vec<f64>)]) -> String {
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12"><rect width="{W}" height="{H}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        escape(title)
    );
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let y = TOP + (1.0 - t) * ph;
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{:.0}%</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            t * 100.0
        );
    }
    let group_w = pw / groups.len().max(1) as f64;
    let bar_w = (group_w * 0.8) / series.len().max(1) as f64;
    for (g, name) in groups.iter().enumerate() {
        let x0 = LEFT + g as f64 * group_w + group_w * 0.1;
        for (k, (_, values)) in series.iter().enumerate() {
            let v = values.get(g).copied().unwrap_or(0.0).clamp(0.0, 1.0);
            let h = v * ph;
            let _ = writeln!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{:.1}%</title></rect>"#,
                x0 + k as f64 * bar_w,
                TOP + ph - h,
                bar_w * 0.9,
                PALETTE[k % PALETTE.len()],
                v * 100.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x0 + group_w * 0.4,
            TOP + ph + 18.0,
            escape(name)
        );
    }
    legend(&mut s, series.iter().map(|(n, _)| n.as_str()));
    s.push_str("</svg>\n");
    s
}

/// Lines over time: per series (a configuration), a value per bucket (a minute's cost).
pub(super) fn lines_svg(
    title: &str,
    x_name: &str,
    y_name: &str,
    series: &[(String, Vec<f64>)],
) -> String {
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let n = series
        .iter()
        .map(|(_, v)| v.len())
        .max()
        .unwrap_or(0)
        .max(2);
    let hi = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0, f64::max)
        .max(1e-12);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12"><rect width="{W}" height="{H}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        escape(title)
    );
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
        LEFT + pw / 2.0,
        H - 18.0,
        escape(x_name),
        TOP + ph / 2.0,
        escape(y_name),
        LEFT - 6.0,
        TOP + 4.0,
        label(hi)
    );
    for (k, (_, values)) in series.iter().enumerate() {
        let pts: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                format!(
                    "{:.1},{:.1}",
                    LEFT + i as f64 / (n - 1) as f64 * pw,
                    TOP + (1.0 - v / hi) * ph
                )
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
            pts.join(" "),
            PALETTE[k % PALETTE.len()]
        );
    }
    legend(&mut s, series.iter().map(|(n, _)| n.as_str()));
    s.push_str("</svg>\n");
    s
}

fn legend<'a>(s: &mut String, names: impl Iterator<Item = &'a str>) {
    for (k, name) in names.enumerate() {
        let y = TOP + 14.0 + k as f64 * 16.0;
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            W - RIGHT + 14.0,
            y - 9.0,
            PALETTE[k % PALETTE.len()],
            W - RIGHT + 30.0,
            y,
            escape(name)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontier_keeps_only_undominated_points() {
        // (index, cost, latency): 1 is dominated by 0; 3 by 2.
        let pts = [
            (0, 1.0, 500.0),
            (1, 2.0, 600.0),
            (2, 3.0, 200.0),
            (3, 4.0, 250.0),
            (4, 5.0, 100.0),
        ];
        assert_eq!(frontier(&pts), vec![0, 2, 4]);
    }

    #[test]
    fn axes_switch_to_log_for_wide_ranges_and_give_ticks_inside() {
        let lin = Axis::new([10.0, 50.0].into_iter());
        assert!(!lin.log);
        assert!(
            lin.ticks()
                .iter()
                .all(|t| *t >= lin.lo && *t <= lin.hi + 1e-9)
        );
        let log = Axis::new([1.0, 1000.0].into_iter());
        assert!(log.log && log.ticks().contains(&100.0));
        assert!((log.at(log.lo)).abs() < 1e-12 && (log.at(log.hi) - 1.0).abs() < 1e-12);
    }
}
