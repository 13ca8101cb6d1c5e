//! The capacity search's ending in one sentence, as the page, report.json and the lab's
//! closing line say it: [`Ending::sentence`], but for a search the generator ended, the
//! figure that ended it (the generator's thread busy past its limit, or the share of
//! requests never sent) with what the probe achieved; "fell behind" alone beside a row that
//! shows the rate achieved and nothing late reads as a contradiction. Here, below the pages,
//! because the experiment says it too.

use webscope_load::thousands;
use webscope_report::human::pct_brief;

use crate::capacity::search::Ending;
use crate::objective::Outcome;
use crate::step::Judged;
use webscope_bottleneck::Bound;

/// The sentence; `achieved` gives the goodput of the probe at an index of `probes`, when
/// known (the lab's closing line has no points).
pub fn said_of(
    ending: &Ending,
    probes: &[Judged],
    achieved: impl Fn(usize) -> Option<f64>,
) -> String {
    let Ending::GeneratorBound { above, at } = ending else {
        return ending.sentence();
    };
    let Some((i, judged)) = probes
        .iter()
        .enumerate()
        .rfind(|(_, j)| j.outcome == Outcome::Generator && (j.level.value() - at).abs() < 0.5)
    else {
        return ending.sentence();
    };
    let start = match above {
        Some(r) => format!(
            "capacity is above {} req/s, beyond what this generator can offer",
            thousands(*r)
        ),
        None => {
            "no capacity measured: the first rate offered is beyond what this generator can offer"
                .into()
        }
    };
    let not_sent = judged
        .not_sent_share
        .map_or("not sent: not counted".into(), |s| {
            format!("{} not sent", pct_brief(s))
        });
    let figures = match achieved(i) {
        Some(rps) => format!("it achieved {} req/s; {not_sent}", thousands(rps)),
        None => not_sent,
    };
    format!(
        "{start}: at {} req/s {} ({figures})",
        thousands(*at),
        trigger(judged)
    )
}

/// The figure that made a probe the generator's: the lab's generator verdict when it fired
/// (its reading quotes the busy share and the limit), else the objective's reason (requests
/// never sent past their limit).
fn trigger(judged: &Judged) -> &str {
    if judged.bound == Bound::Generator {
        &judged.bound_reading
    } else {
        &judged.reason
    }
}
