//! What a server serves: one [`Export`], or an [`ExportDir`] of them. The handshake asks
//! this for the export a name means and for the list; the server flushes it at the end.

use std::sync::Arc;

use crate::dir::ExportDir;
use crate::error::{Error, Result};
use crate::export::Export;

/// The exports of one server.
#[derive(Debug)]
pub(crate) enum Exports {
    /// One file, answering to its name and to "".
    One(Arc<Export>),
    /// Every regular file of a directory.
    Dir(ExportDir),
}

impl Exports {
    /// The export a client asking for `name` gets, or the reason it gets none.
    pub(crate) fn get(&self, name: &str) -> std::result::Result<Arc<Export>, String> {
        match self {
            Exports::One(e) if e.answers_to(name) => Ok(e.clone()),
            Exports::One(_) => Err("no such export".into()),
            Exports::Dir(d) => d.get(name),
        }
    }

    /// Names and descriptions for `NBD_OPT_LIST`.
    pub(crate) fn list(&self) -> Result<Vec<(String, String)>> {
        match self {
            Exports::One(e) => Ok(vec![(e.name().into(), e.description().into())]),
            Exports::Dir(d) => d.list(),
        }
    }

    /// Exports open now, and retired ones still in use.
    pub(crate) fn open_counts(&self) -> (usize, usize) {
        match self {
            Exports::One(_) => (1, 0),
            Exports::Dir(d) => d.open_counts(),
        }
    }

    /// The final flush of every export open for writing.
    pub(crate) fn flush(&self) -> Result<()> {
        match self {
            Exports::One(e) if e.is_read_only() => Ok(()),
            Exports::One(e) => e.flush().map_err(|source| Error::Flush {
                path: e.file().display_path(),
                source,
            }),
            Exports::Dir(d) => d.flush(),
        }
    }
}
