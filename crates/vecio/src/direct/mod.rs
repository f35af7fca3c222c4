//! The one direct-I/O planner: every rule for a request that a direct file's alignment refuses,
//! written once. [`Batch`](crate::Batch) (and the blocking `File` calls through it) runs these
//! plans to completion; [`Queue`](crate::Queue) steps them asynchronously, one completion at a
//! time.
//!
//! The block arithmetic ([`DioAlign::window`](crate::DioAlign::window), the aligned blocks
//! around a request) is the file layer's (`file/window.rs`), below this one; nothing here
//! writes it by hand.
//!
//! - `bounce.rs`: an unaligned read through an aligned bounce buffer.
//! - `rmw.rs`: the read-modify-write of an unaligned (or appending) write: edge reads, the
//!   window write resumed when short, and the cut-back when the window grew the file.
//! - `span.rs`: the range of the file's lock a request holds, and how long.
//!
//! The page cache never serves these bytes: edges and bounce windows are read with direct I/O
//! too, so there is nothing to flush or invalidate.

mod bounce;
mod rmw;
mod span;

pub(crate) use bounce::Bounce;
pub(crate) use rmw::{Rmw, RmwOp, WriteNext};
pub(crate) use span::{hold, LockSpan, Route};
