//! Printing the benchmark's tables and the verdict on each target.

use super::*;

pub(crate) fn pct(v: &[i64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i] as f64 / 1000.0
}

pub(crate) fn print_tables(outcomes: &[Outcome]) {
    let per_s = |o: &Outcome, x: u64| x as f64 / o.client.window_s;
    println!();
    println!("Cost: CPU of each process over the window (cores = CPU seconds per second)");
    println!(
        "{:<32} {:>9} {:>9} {:>8} {:>8} {:>11} {:>9} {:>11} {:>9}",
        "case",
        "tok/s",
        "chunks/s",
        "client",
        "sim",
        "cpu s/Mtok",
        "µs/chunk",
        "tok/s/core",
        "load"
    );
    for o in outcomes {
        let c = &o.client;
        println!(
            "{:<32} {:>9.0} {:>9.0} {:>8.2} {:>8.2} {:>11.2} {:>9.2} {:>11.0} {:>9}",
            o.case.label(),
            per_s(o, c.tokens),
            per_s(o, c.chunks),
            c.client_cpu_s / c.window_s,
            c.sim_cpu_s / c.window_s,
            c.client_cpu_s / (c.tokens as f64 / 1e6),
            c.client_cpu_s * 1e6 / c.chunks as f64,
            c.tokens as f64 / c.client_cpu_s,
            format!("{}→{}", o.load_before, o.load_after),
        );
        if c.errors > 0 {
            println!(
                "    {} of {} requests failed; first: {}",
                c.errors,
                c.requests,
                c.first_error.as_deref().unwrap_or("?")
            );
        }
    }
    println!();
    println!(
        "Memory of the client process: peak RSS, the timing records' share, and the rest per stream"
    );
    println!(
        "{:<32} {:>9} {:>9} {:>11} {:>12} {:>13}",
        "case", "base MB", "peak MB", "records MB", "KB/stream", "chunks/strm"
    );
    for o in outcomes.iter().filter(|o| !o.case.raw()) {
        let c = &o.client;
        let mb = |kb: u64| kb as f64 / 1024.0;
        let rest_kb =
            c.rss_peak_kb.saturating_sub(c.rss_base_kb) as f64 - c.record_bytes as f64 / 1024.0;
        println!(
            "{:<32} {:>9.1} {:>9.1} {:>11.1} {:>12.1} {:>13.0}",
            o.case.label(),
            mb(c.rss_base_kb),
            mb(c.rss_peak_kb),
            c.record_bytes as f64 / (1 << 20) as f64,
            rest_kb / f64::from(o.case.streams),
            // Chunks held per stream over the whole run, not just the window.
            c.record_bytes as f64 / 16.0 / f64::from(o.case.streams),
        );
    }
    let timing: Vec<&Outcome> = outcomes.iter().filter(|o| o.case.timing()).collect();
    if !timing.is_empty() {
        print_timing(&timing);
    }
    print_targets(outcomes);
    print_reader_targets(outcomes);
}

/// The timestamp-error table of the timing cases.
fn print_timing(timing: &[&Outcome]) {
    println!();
    println!(
        "Timestamp error (µs): the reader's instant for a chunk − the simulator's instant when it handed that chunk to hyper"
    );
    println!(
        "{:<32} {:>8} {:>7} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}",
        "case", "chunks", "unmatch", "min", "p50", "p90", "p99", "max", "load"
    );
    for o in timing {
        let e = &o.errors_ns;
        println!(
            "{:<32} {:>8} {:>7} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>9.1} {:>9}",
            o.case.label(),
            e.len(),
            o.unmatched,
            pct(e, 0.0),
            pct(e, 0.5),
            pct(e, 0.9),
            pct(e, 0.99),
            pct(e, 1.0),
            format!("{}→{}", o.load_before, o.load_after),
        );
    }
    println!(
        "[raw]: a bare tokio socket reader of the same streams (no HTTP library, SSE decoder or JSON parser): the host's floor"
    );
}

/// The three targets, judged from the cases above.
pub(crate) fn print_targets(outcomes: &[Outcome]) {
    let find = |kind: &str, n: u32, step: f64, spec: u32, raw: bool| {
        outcomes.iter().find(|o| {
            o.case.kind == kind
                && o.case.streams == n
                && o.case.step_ms == step
                && o.case.spec_tokens == spec
                && o.case.raw() == raw
        })
    };
    println!();
    println!("Targets");
    for spec in [1, 8] {
        let best = outcomes
            .iter()
            .filter(|o| o.case.kind == "ingest" && o.case.spec_tokens == spec)
            .map(|o| o.client.tokens as f64 / o.client.client_cpu_s)
            .fold(f64::NAN, f64::max);
        println!(
            "  ≥1M tok/s ingested per core, {spec} token(s) per chunk: best {:.2}M → {}",
            best / 1e6,
            if best >= 1e6 { "met" } else { "NOT met" }
        );
    }
    for n in [1, 64, 1024] {
        if let (Some(m), Some(r)) = (
            find("timing", n, 10.0, 1, false),
            find("timing", n, 10.0, 1, true),
        ) {
            let p99 = pct(&m.errors_ns, 0.99);
            println!(
                "  p99 timestamp error < 100 µs, N={n}: {p99:.0} µs (raw floor {:.0} µs) → {}",
                pct(&r.errors_ns, 0.99),
                if p99 < 100.0 { "met" } else { "NOT met" }
            );
        }
    }
    // Memory beyond the timing records (which grow with the window's chunks, 16 bytes each,
    // not with streams): peak − base − records.
    let rest = |n, step| {
        find("timing", n, step, 1, false).map(|o| {
            let c = &o.client;
            c.rss_peak_kb as f64 - c.rss_base_kb as f64 - c.record_bytes as f64 / 1024.0
        })
    };
    if let (Some(a), Some(b), Some(c10), Some(c20)) = (
        rest(1, 10.0),
        rest(64, 10.0),
        rest(1024, 10.0),
        rest(1024, 20.0),
    ) {
        let s1 = (b - a) / 63.0;
        let (s10, s20) = ((c10 - b) / 960.0, (c20 - b) / 960.0);
        // Linear: a stream added at 1024 costs about what one added at 64 did (2× allows for
        // allocator and buffer-size noise; quadratic growth would be ~16×).
        let linear = |s: f64| s <= 2.0 * s1.max(1.0);
        println!(
            "  RSS linear in streams (beyond records): +{s1:.0} KB per stream from 1 to 64; \
             from 64 to 1024 +{s20:.0} KB at 20 ms steps, +{s10:.0} KB at 10 ms → {}",
            match (linear(s20), linear(s10)) {
                (true, true) => "linear",
                (true, false) => {
                    "linear at 20 ms; more per stream at 10 ms, where backlogged connections buffer more"
                }
                _ => "grows faster than linear",
            }
        );
    }
}

/// The hot path's targets: the readers' CPU per token against the bare floor (one token per
/// chunk), and the raw reader's timestamp error with a CPU hog in the client.
pub(crate) fn print_reader_targets(outcomes: &[Outcome]) {
    let us_per_token = |reader: &str, n: u32| {
        outcomes
            .iter()
            .find(|o| {
                o.case.kind == "ingest"
                    && o.case.streams == n
                    && o.case.spec_tokens == 1
                    && o.case.reader == reader
                    && o.case.hog == 0
            })
            .map(|o| o.client.client_cpu_s * 1e6 / o.client.tokens.max(1) as f64)
    };
    for n in [1, 64, 256, 1024] {
        let Some(floor) = us_per_token("raw", n) else {
            continue;
        };
        for (reader, name) in [("rawhttp", "raw reader"), ("measure", "present client")] {
            if let Some(us) = us_per_token(reader, n) {
                println!(
                    "  CPU per token ≤ 1.2× the bare floor, N={n}, {name}: {us:.2} µs vs {floor:.2} µs = {:.2}× → {}",
                    us / floor,
                    if us <= 1.2 * floor { "met" } else { "NOT met" }
                );
            }
        }
    }
    if let Some(us) = us_per_token("rawhttp", 256) {
        println!(
            "  ≤ 1 µs CPU per token at N=256, raw reader: {us:.2} µs → {}",
            if us <= 1.0 { "met" } else { "NOT met" }
        );
    }
    let hogged = outcomes
        .iter()
        .filter(|o| o.case.timing() && o.case.hog > 0 && o.case.reader == "rawhttp");
    for o in hogged {
        let p99 = pct(&o.errors_ns, 0.99);
        println!(
            "  p99 timestamp error ≤ 50 µs with a CPU hog, raw reader, {}: {p99:.0} µs → {}",
            o.case.label(),
            if p99 <= 50.0 { "met" } else { "NOT met" }
        );
    }
}
