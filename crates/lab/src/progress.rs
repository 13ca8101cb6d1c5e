//! Where the lab is, shown twice: the terminal's bar (indicatif) and, with `--live`, the live
//! page (each interval of each run, each finished run with its goodput and health).

use std::ops::Deref;

use indicatif::ProgressBar;

use webscope_live::{Gauges, Live, Point, RunDone, Step};
use webscope_record::health::{Expect, Health, Judge};

/// The lab's progress. Derefs to the bar, so experiments move it as they always did.
pub struct Progress<'a> {
    bar: ProgressBar,
    live: Option<&'a Live>,
    expect: Expect,
    max_error_pct: f64,
}

impl Deref for Progress<'_> {
    type Target = ProgressBar;

    fn deref(&self) -> &ProgressBar {
        &self.bar
    }
}

impl<'a> Progress<'a> {
    /// The progress of a lab drawn on `bar` (and on the live page, when there is one); runs are
    /// judged by `judge`, whose expected statuses must parse.
    pub fn new(
        bar: ProgressBar,
        live: Option<&'a Live>,
        judge: &Judge,
    ) -> anyhow::Result<Progress<'a>> {
        Ok(Progress {
            bar,
            live,
            expect: Expect::parse(&judge.expect_status).map_err(anyhow::Error::msg)?,
            max_error_pct: judge.max_error_pct,
        })
    }

    /// The statuses this lab expects (`--expect-status`): its runs' engines count errors by
    /// them, as its judges do.
    pub fn expect(&self) -> &Expect {
        &self.expect
    }

    /// The bar's position and length, and its estimate of the time left.
    fn step(&self, run: &str) -> (Step, Option<f64>) {
        let step = Step {
            experiment: self.bar.prefix(),
            run: run.to_string(),
            done: self.bar.position(),
            total: self.bar.length().unwrap_or(0),
        };
        let left = (step.done > 0).then(|| self.bar.eta().as_secs_f64());
        (step, left)
    }

    /// One interval of the run `label`, with the monitor's latest sample of the machine.
    pub fn interval(
        &self,
        label: &str,
        interval: &webscope_load::IntervalReport,
        sample: Option<webscope_monitor::Sample>,
        port: Option<u16>,
        gauges: &mut Gauges,
    ) {
        let Some(live) = self.live else {
            return;
        };
        let mut point = Point::of(interval, live.elapsed_s(), label).with_cpu(gauges);
        if let Some(sample) = &sample {
            point = point.with_tcp(sample, port);
        }
        let (step, left) = self.step(label);
        live.push(point, interval.requests, interval.errors, left, Some(step));
    }

    /// The CPU counters of a run against the processes `roots`, when the page is on (they
    /// cost two reads of /proc an interval).
    pub fn gauges(&self, roots: &[u32]) -> Option<Gauges> {
        self.live.map(|_| Gauges::new(roots.to_vec()))
    }

    /// The run `label` is over; `load` is its report.
    pub fn run_done(&self, label: &str, load: &webscope_load::Report) {
        let Some(live) = self.live else {
            return;
        };
        let health = Health::of(load, &self.expect, self.max_error_pct);
        let done = RunDone {
            experiment: self.bar.prefix(),
            run: label.to_string(),
            goodput_per_s: health.goodput_rps,
            p99_us: load.total.latency_us.p99,
            errors: health.attempts - health.good,
            invalid: health.invalid,
        };
        live.update(|state| state.runs.push(done));
    }
}
