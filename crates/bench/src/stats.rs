//! Sample summaries.

use std::time::Duration;

/// Median and 90th percentile of `samples` (each one measurement of one operation), and
/// the fastest and slowest.
pub struct Summary {
    pub median: Duration,
    pub p90: Duration,
    pub min: Duration,
    pub max: Duration,
    pub samples: usize,
}

pub fn summarize(mut samples: Vec<Duration>) -> Summary {
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).copied().unwrap_or_default()
    };
    Summary {
        median: at(0.5),
        p90: at(0.9),
        min: samples.first().copied().unwrap_or_default(),
        max: samples.last().copied().unwrap_or_default(),
        samples: samples.len(),
    }
}

/// Prints one result line and the command that reproduces it.
pub fn report(bench: &str, case: &str, summary: &Summary) {
    println!(
        "{case:<44} median {:>10.3?}  p90 {:>10.3?}  ({} samples)",
        summary.median, summary.p90, summary.samples
    );
    println!("    command: cargo run --release -p dsh-bench -- {bench}");
}

/// Like [`report`], with the fastest and slowest sample too.
pub fn report_range(bench: &str, case: &str, summary: &Summary) {
    println!(
        "{case:<44} min {:>10.3?}  median {:>10.3?}  max {:>10.3?}  p90 {:>10.3?}  ({} samples)",
        summary.min, summary.median, summary.max, summary.p90, summary.samples
    );
    println!("    command: cargo run --release -p dsh-bench -- {bench}");
}

/// Like [`report`], for samples that each timed `items` operations: adds the rate at the
/// median (and at the p90 time, the slower figure).
pub fn report_rate(bench: &str, case: &str, items: u64, summary: &Summary) {
    let rate = |d: Duration| items as f64 / d.as_secs_f64().max(f64::MIN_POSITIVE);
    println!(
        "{case:<44} median {:>10.3?}  p90 {:>10.3?}  ({} samples)  {:.0}/s at median, {:.0}/s at p90",
        summary.median,
        summary.p90,
        summary.samples,
        rate(summary.median),
        rate(summary.p90)
    );
    println!("    command: cargo run --release -p dsh-bench -- {bench}");
}
