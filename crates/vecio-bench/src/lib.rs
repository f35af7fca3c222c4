//! vecio's benchmark crate: [`experiment`] (what an experiment is), [`experiments`] (one folder
//! per source document, listed in [`registry`]), [`all`] and [`results`] (`bench all` and its
//! document), [`report`] and [`harness`]. Layout: docs/report.md.

#![warn(missing_docs)]

pub mod all;
pub mod experiment;
pub mod experiments;
pub mod harness;
pub mod registry;
pub mod report;
pub mod results;
