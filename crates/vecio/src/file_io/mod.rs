//! The I/O calls of [`File`](crate::File), the layer above [`Batch`](crate::Batch): the
//! blocking positional calls (`positional.rs`: `read_at`, `write_at`, `readv_at`, `writev_at`,
//! `io_at` and the exact forms), the calls that change a file's space under its range lock
//! (`space.rs`: `fallocate`, `set_len`, `copy_range_to`) and the inline fast read
//! (`fast_read.rs`: `try_read_inline`).
//!
//! What an open file *is* (descriptor, alignment, cached flags, slot id, range lock) is the
//! file layer's (`file/`), which the request core, `direct/`, `Batch` and `Queue` name. These
//! calls run requests through those layers (one system call where the request allows it, a
//! one-request `Batch` over a `SyncEngine` where it does not; `direct/`'s lock spans around
//! the space calls), so they live above them. They are inherent methods of `File`: callers see
//! one type.

mod fast_read;
mod positional;
mod space;
