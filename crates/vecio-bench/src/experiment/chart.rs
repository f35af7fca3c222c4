//! What a plot shows, as data: grouped bars (spread and the seed's mark) or curves; drawn by
//! `report::plot`.

use crate::harness::stats::Summary;

/// A plot's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    /// Grouped bars.
    Bars(Bars),
    /// Curves.
    Lines(Lines),
}

/// One bar: its height, the spread of the repetitions, and the seed's mark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BarValue {
    /// Height (the median).
    pub value: f64,
    /// Lowest repetition.
    pub low: f64,
    /// Highest repetition.
    pub high: f64,
    /// Where the seed's ratio puts this bar, if it says.
    pub mark: Option<f64>,
}

impl BarValue {
    /// A bar with no spread and no mark.
    pub fn plain(value: f64) -> BarValue {
        BarValue {
            value,
            low: value,
            high: value,
            mark: None,
        }
    }

    /// A bar from a summary of repetitions.
    pub fn of(s: &Summary) -> BarValue {
        BarValue {
            value: s.median,
            low: s.min,
            high: s.max,
            mark: None,
        }
    }

    /// The same bar with the seed's mark at `mark`.
    pub fn marked(self, mark: Option<f64>) -> BarValue {
        BarValue { mark, ..self }
    }
}

/// A group of bars on the x axis, one per series (`None`: not measured).
#[derive(Debug, Clone, PartialEq)]
pub struct BarGroup {
    /// Its label under the axis.
    pub label: String,
    /// One value per series.
    pub values: Vec<Option<BarValue>>,
}

/// A grouped bar plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// Title.
    pub title: String,
    /// The y axis.
    pub y_label: String,
    /// Series names (the legend).
    pub series: Vec<String>,
    /// Groups along the x axis.
    pub groups: Vec<BarGroup>,
    /// What the marks mean (legend), e.g. `seed's ratio x serial`.
    pub mark_label: String,
}

/// One curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Its name in the legend.
    pub name: String,
    /// Its points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// How the x axis of a line plot is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XTicks {
    /// Seconds, one decimal.
    Seconds,
    /// A percentile drawn in "nines" (1 is the 90th, 2 the 99th): labelled `90`, `99`, `99.9`.
    Nines,
}

impl XTicks {
    /// The label at `x`.
    pub fn label(self, x: &f64) -> String {
        match self {
            XTicks::Seconds => format!("{x:.1}"),
            XTicks::Nines => {
                let p = 100.0 * (1.0 - 10f64.powf(-x));
                let digits = (x.ceil() as i32 - 2).clamp(0, 3) as usize;
                format!("{p:.digits$}")
            }
        }
    }
}

/// A line plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    /// Title.
    pub title: String,
    /// The x axis.
    pub x_label: String,
    /// The y axis.
    pub y_label: String,
    /// The curves.
    pub lines: Vec<Line>,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// How x values are written on the axis.
    pub x_ticks: XTicks,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis() {
        let label = |x| XTicks::Nines.label(&x);
        assert_eq!(label(1.0), "90");
        assert_eq!(label(2.0), "99");
        assert_eq!(label(3.0), "99.9");
        assert_eq!(label(0.0), "0");
        assert_eq!(XTicks::Seconds.label(&1.25), "1.2");
    }
}
