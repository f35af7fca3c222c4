//! The integration tests of vecio-nbd, one module per capability, built as one test binary (one
//! compile and one link rather than one per file).

#[path = "../common/mod.rs"]
mod common;

mod clients;
mod deployment;
mod exports_dir;
mod filesystem;
mod protocol_commands;
mod protocol_connections;
mod protocol_extended;
mod protocol_faults;
mod protocol_handshake;
mod sparse_reads;
mod tls;
mod tls_psk;
