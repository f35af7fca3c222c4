//! vecio's benchmark crate:
//!
//! - [`experiment`]: what an experiment is (the [`experiment::Experiment`] trait) and the data
//!   it hands the report: tables, plot specifications, targets, summary rows, figures;
//! - [`experiments`]: one folder per source document, each holding its run and what its report
//!   shows, side by side; [`registry`] lists them;
//! - [`all`]: `vecio bench all`, every experiment in turn, gathered into one [`results`]
//!   document;
//! - [`report`]: the report on the terminal, in HTML and Markdown, its plots and verdict, and
//!   `vecio bench compare`; it knows experiments through [`experiment::Entry`] only;
//! - [`harness`]: what every experiment shares (fio as a peer, servers as processes, scratch
//!   files, CPU accounting, statistics, progress, the clean-up that runs when a bench is
//!   stopped).

#![warn(missing_docs)]

pub mod all;
pub mod experiment;
pub mod experiments;
pub mod harness;
pub mod registry;
pub mod report;
pub mod results;
