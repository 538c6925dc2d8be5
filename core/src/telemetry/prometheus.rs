//! The Prometheus text exposition of a [`MetricsSnapshot`], with OpenTelemetry GenAI semantic
//! convention names where they exist (dots become underscores).

use std::fmt::Write;

use super::{LaneKey, MetricsSnapshot, Percentiles};

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(k: &LaneKey) -> String {
    format!(
        "gen_ai_system=\"aws.bedrock\",family=\"{}\",gen_ai_request_model=\"{}\",target=\"{}\",region=\"{}\",tier=\"{}\",slo_class=\"{}\"",
        escape(k.family.as_deref().unwrap_or("")),
        escape(&k.model),
        escape(&k.target),
        escape(&k.region),
        k.tier.map(|t| t.to_string()).unwrap_or_default(),
        k.slo_class
    )
}

fn summary(out: &mut String, name: &str, help: &str, rows: &[(String, Percentiles)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} summary");
    for (l, p) in rows.iter().filter(|(_, p)| p.count > 0) {
        for (q, v) in [("0.5", p.p50), ("0.9", p.p90), ("0.99", p.p99)] {
            let _ = writeln!(out, "{name}{{{l},quantile=\"{q}\"}} {v}");
        }
        let _ = writeln!(out, "{name}_sum{{{l}}} {}", p.mean * p.count as f64);
        let _ = writeln!(out, "{name}_count{{{l}}} {}", p.count);
    }
}

fn counter(out: &mut String, name: &str, help: &str, rows: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} counter");
    for (l, v) in rows {
        let _ = writeln!(out, "{name}{{{l}}} {v}");
    }
}

impl MetricsSnapshot {
    /// The snapshot in the Prometheus text format (version 0.0.4).
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        let lane = |f: &dyn Fn(&super::LaneSnapshot) -> Percentiles| -> Vec<(String, Percentiles)> {
            self.lanes.iter().map(|(k, s)| (labels(k), f(s))).collect()
        };
        summary(
            &mut out,
            "gen_ai_client_operation_duration_seconds",
            "End-to-end duration of calls, failovers included.",
            &lane(&|s| s.latency_s),
        );
        summary(
            &mut out,
            "gen_ai_server_time_to_first_token_seconds",
            "Time to first token of streamed calls.",
            &lane(&|s| s.ttft_s),
        );
        summary(
            &mut out,
            "gen_ai_server_time_per_output_token_seconds",
            "Mean gap between content deltas, per stream.",
            &lane(&|s| s.inter_token_s),
        );
        summary(
            &mut out,
            "laneway_output_tokens_per_second",
            "Output tokens per second after the first token.",
            &lane(&|s| s.output_tokens_per_second),
        );
        let counts = |f: &dyn Fn(&super::LaneSnapshot) -> f64| -> Vec<(String, f64)> {
            self.lanes.iter().map(|(k, s)| (labels(k), f(s))).collect()
        };
        counter(
            &mut out,
            "laneway_requests_total",
            "Calls that succeeded.",
            &counts(&|s| s.requests as f64),
        );
        let mut tokens = Vec::new();
        for (k, s) in &self.lanes {
            for (ty, v) in [
                ("input", s.input_tokens),
                ("cache_read", s.cache_read_tokens),
                ("cache_write", s.cache_write_tokens),
                ("output", s.output_tokens),
            ] {
                tokens.push((
                    format!("{},gen_ai_token_type=\"{ty}\"", labels(k)),
                    v as f64,
                ));
            }
        }
        counter(
            &mut out,
            "gen_ai_client_token_usage_total",
            "Tokens by type (input new, cache read, cache write, output).",
            &tokens,
        );
        counter(
            &mut out,
            "laneway_cost_usd_total",
            "Cost in US dollars at the price book's rates.",
            &counts(&|s| s.cost_usd),
        );
        counter(
            &mut out,
            "laneway_failovers_total",
            "Failed attempts before a success.",
            &counts(&|s| s.failovers as f64),
        );
        counter(
            &mut out,
            "laneway_hedges_total",
            "Hedged calls.",
            &counts(&|s| s.hedges as f64),
        );
        counter(
            &mut out,
            "laneway_escalations_total",
            "Calls escalated to a faster tier for their deadline.",
            &counts(&|s| s.escalations as f64),
        );
        let mut errors = Vec::new();
        for (k, s) in &self.lanes {
            for (kind, n) in &s.errors {
                errors.push((
                    format!("{},error_type=\"{}\"", labels(k), kind.as_str()),
                    *n as f64,
                ));
            }
        }
        counter(
            &mut out,
            "laneway_errors_total",
            "Calls that failed, by error kind.",
            &errors,
        );
        let mut slo = Vec::new();
        for (class, a) in &self.slo {
            for (what, n) in [
                ("calls", a.calls),
                ("ttft_targeted", a.ttft_targeted),
                ("ttft_met", a.ttft_met),
                ("deadline_targeted", a.deadline_targeted),
                ("deadline_met", a.deadline_met),
            ] {
                slo.push((
                    format!("slo_class=\"{class}\",outcome=\"{what}\""),
                    n as f64,
                ));
            }
        }
        counter(
            &mut out,
            "laneway_slo_calls_total",
            "Calls per SLO class, with and meeting a TTFT target or deadline.",
            &slo,
        );
        let mut tasks = vec![
            (
                "slo_class=\"all\",outcome=\"finished\"".to_string(),
                self.tasks.tasks as f64,
            ),
            (
                "slo_class=\"all\",outcome=\"successful\"".to_string(),
                self.tasks.successful as f64,
            ),
            (
                "slo_class=\"all\",outcome=\"abandoned\"".to_string(),
                self.tasks.abandoned as f64,
            ),
        ];
        for (class, t) in &self.tasks_by_class {
            tasks.push((
                format!("slo_class=\"{class}\",outcome=\"finished\""),
                t.tasks as f64,
            ));
            tasks.push((
                format!("slo_class=\"{class}\",outcome=\"successful\""),
                t.successful as f64,
            ));
            tasks.push((
                format!("slo_class=\"{class}\",outcome=\"abandoned\""),
                t.abandoned as f64,
            ));
        }
        counter(
            &mut out,
            "laneway_tasks_total",
            "Tasks closed with finish_task (finished, of them successful), or closed as abandoned after telemetry.task_idle.",
            &tasks,
        );
        let mut task_cost = vec![("slo_class=\"all\"".to_string(), self.tasks.cost_usd)];
        task_cost.extend(
            self.tasks_by_class
                .iter()
                .map(|(c, t)| (format!("slo_class=\"{c}\""), t.cost_usd)),
        );
        counter(
            &mut out,
            "laneway_task_cost_usd_total",
            "Cost of closed tasks.",
            &task_cost,
        );
        let _ = writeln!(
            out,
            "# HELP laneway_requests_in_flight Calls running now (the client-side queue)."
        );
        let _ = writeln!(out, "# TYPE laneway_requests_in_flight gauge");
        let _ = writeln!(out, "laneway_requests_in_flight {}", self.in_flight);
        if let Some(sh) = &self.shared {
            let _ = writeln!(
                out,
                "# HELP laneway_shared_state_degraded 1 while Redis is unreachable and local state decides."
            );
            let _ = writeln!(out, "# TYPE laneway_shared_state_degraded gauge");
            let _ = writeln!(
                out,
                "laneway_shared_state_degraded {}",
                u8::from(sh.degraded)
            );
            let _ = writeln!(
                out,
                "# HELP laneway_shared_state_degraded_episodes_total Times Redis became unreachable."
            );
            let _ = writeln!(
                out,
                "# TYPE laneway_shared_state_degraded_episodes_total counter"
            );
            let _ = writeln!(
                out,
                "laneway_shared_state_degraded_episodes_total {}",
                sh.degraded_episodes
            );
            let _ = writeln!(
                out,
                "# HELP laneway_shared_state_fallback_admissions_total Reserved admissions decided locally while degraded."
            );
            let _ = writeln!(
                out,
                "# TYPE laneway_shared_state_fallback_admissions_total counter"
            );
            let _ = writeln!(
                out,
                "laneway_shared_state_fallback_admissions_total {}",
                sh.fallback_admissions
            );
        }
        out
    }
}
