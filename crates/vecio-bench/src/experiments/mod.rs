//! The experiments, one folder per source document, each an [`crate::experiment::Experiment`]
//! named as its subcommand and its field of `results.json`: the run (`mod.rs` and helpers) and
//! what its report shows (`view.rs`). Adding one: a folder, a line here and one in
//! [`crate::registry`] (docs/report.md, "How vecio-bench is laid out").

pub mod callcost;
pub mod fuse;
pub mod loopdev;
pub mod nowait;
pub mod tokio_reads;
pub mod tree;
pub mod writev;
