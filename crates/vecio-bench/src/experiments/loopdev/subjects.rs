//! Who serves the image and which fio jobs run against it, with the seed's figures per job.

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::harness::fio::FioRw;
use vecio_host::peers::Peers;

/// What serves the image: a server process, or fio on the file itself.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Subject {
    /// `vecio nbd --cache=none --aio=uring`: direct and asynchronous, the seed's "after".
    VecioDirect,
    /// `vecio nbd --cache=writeback --aio=uring`: buffered, through the page cache.
    VecioBuffered,
    /// `qemu-nbd --cache=none --aio=io_uring`.
    QemuNbd,
    /// nbdkit's file plugin with `cache=none` (it evicts what it read or wrote from the page
    /// cache).
    Nbdkit,
    /// fio's own `io_uring` engine with `O_DIRECT` on the file: the device's limit.
    FioDirect,
}

impl Subject {
    /// Every subject, in table order.
    pub const ALL: [Subject; 5] = [
        Subject::VecioDirect,
        Subject::VecioBuffered,
        Subject::QemuNbd,
        Subject::Nbdkit,
        Subject::FioDirect,
    ];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Subject::VecioDirect => "vecio nbd none+uring",
            Subject::VecioBuffered => "vecio nbd writeback+uring",
            Subject::QemuNbd => "qemu-nbd none+io_uring",
            Subject::Nbdkit => "nbdkit file cache=none",
            Subject::FioDirect => "fio io_uring direct (limit)",
        }
    }

    /// The peer program it needs from `PATH`, for the peers.
    pub fn peer_program(self) -> Option<&'static str> {
        match self {
            Subject::QemuNbd => Some("qemu-nbd"),
            Subject::Nbdkit => Some("nbdkit"),
            _ => None,
        }
    }

    /// The command serving `image` on `socket`; `None` for fio on the file. A peer comes from
    /// `peers` (a chroot's sees the image's, the socket's and the certificates' directories
    /// at their own paths). With `tls`, the server requires TLS with the certificates in that
    /// directory (see [`Subject::tls_args`]).
    pub(super) fn command(
        self,
        vecio: &Path,
        peers: &Peers,
        image: &Path,
        socket: &Path,
        tls: Option<&Path>,
    ) -> Option<Command> {
        let mut shares: Vec<&Path> = [image.parent(), socket.parent(), tls]
            .into_iter()
            .flatten()
            .filter(|d| !d.starts_with("/dev"))
            .collect();
        shares.dedup();
        let mut c = match self {
            Subject::VecioDirect | Subject::VecioBuffered => {
                let direct = self == Subject::VecioDirect;
                let mut c = Command::new(vecio);
                c.arg("nbd").arg("-U").arg(socket);
                let cache = if direct { "none" } else { "writeback" };
                c.arg(format!("--cache={cache}"));
                c.arg("--aio=uring");
                c
            }
            Subject::QemuNbd => {
                let mut c = peers.command_sharing("qemu-nbd", &shares);
                c.args([
                    "--cache=none",
                    "--aio=io_uring",
                    "--format=raw",
                    "--persistent",
                ]);
                c.arg(format!("--socket={}", socket.display()));
                c
            }
            Subject::Nbdkit => {
                let mut c = peers.command_sharing("nbdkit", &shares);
                c.args(["--foreground", "--exit-with-parent", "--unix"])
                    .arg(socket);
                c
            }
            Subject::FioDirect => return None,
        };
        c.args(tls.map(|dir| self.tls_args(dir)).unwrap_or_default());
        match self {
            Subject::Nbdkit => c
                .arg("file")
                .arg(format!("file={}", image.display()))
                .arg("cache=none"),
            _ => c.arg(image),
        };
        Some(c)
    }

    /// The options that make the server require TLS with the X.509 certificates in `dir`
    /// (`ca-cert.pem`, `server-cert.pem`, `server-key.pem`), client certificates not asked for:
    /// nbdkit's `--tls=require --tls-certificates`, which vecio nbd shares, and qemu's
    /// `tls-creds-x509` object (a comma in its `dir=` doubled, as qemu's option syntax asks).
    fn tls_args(self, dir: &Path) -> Vec<String> {
        let dir = dir.display().to_string();
        match self {
            Subject::QemuNbd => vec![
                "--object".into(),
                format!(
                    "tls-creds-x509,id=tls0,dir={},endpoint=server,verify-peer=off",
                    dir.replace(',', ",,")
                ),
                "--tls-creds".into(),
                "tls0".into(),
            ],
            _ => vec!["--tls=require".into(), format!("--tls-certificates={dir}")],
        }
    }
}

/// One fio job of the table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Job {
    /// 4 KiB random reads (the seed's `randread`).
    RandRead4k,
    /// 4 KiB random writes (the seed's `randwrite`).
    RandWrite4k,
    /// 128 KiB sequential reads (the seed's `read`).
    Read128k,
    /// 128 KiB sequential writes (the seed's `write`).
    Write128k,
}

impl Job {
    /// Every job, in the seed's column order.
    pub const ALL: [Job; 4] = [
        Job::RandRead4k,
        Job::Read128k,
        Job::RandWrite4k,
        Job::Write128k,
    ];

    /// Its name in tables, fio's `--rw` and the block size in bytes.
    fn spec(self) -> (&'static str, FioRw, u64) {
        match self {
            Job::RandRead4k => ("4k randread", FioRw::RandRead, 4096),
            Job::RandWrite4k => ("4k randwrite", FioRw::RandWrite, 4096),
            Job::Read128k => ("128k read", FioRw::Read, 128 << 10),
            Job::Write128k => ("128k write", FioRw::Write, 128 << 10),
        }
    }

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        self.spec().0
    }

    /// fio's `--rw`.
    pub fn rw(self) -> FioRw {
        self.spec().1
    }

    /// Block size in bytes.
    pub fn bs(self) -> u64 {
        self.spec().2
    }

    /// True when the job is reported in IOPS (4 KiB), false for MB/s (128 KiB).
    pub fn in_iops(self) -> bool {
        self.bs() == 4096
    }

    /// Its headline figure out of two: `iops` for 4 KiB jobs, `mb_s` for 128 KiB ones.
    pub fn pick<T>(self, iops: T, mb_s: T) -> T {
        if self.in_iops() {
            iops
        } else {
            mb_s
        }
    }

    /// The unit of its headline figure: `IOPS` or `MB/s`.
    pub fn unit(self) -> &'static str {
        self.pick("IOPS", "MB/s")
    }

    /// The field of its headline figure in `results.json`: `iops` or `mb_s`.
    pub fn field(self) -> &'static str {
        self.pick("iops", "mb_s")
    }

    /// Decimals of its headline figure: none for IOPS, one for MB/s.
    pub fn prec(self) -> usize {
        usize::from(!self.in_iops())
    }

    /// The seed's IOPS: `(fio jobs, base, loop dio+aio)` for its two tests.
    pub fn seed_iops(self) -> [(u32, f64, f64); 2] {
        match self {
            Job::RandRead4k => [(16, 240.0, 242.0), (1, 109.0, 114.0)],
            Job::Read128k => [(16, 8705.0, 9258.0), (1, 21180.0, 21018.0)],
            Job::RandWrite4k => [(16, 3763.0, 4577.0), (1, 4192.0, 5404.0)],
            Job::Write128k => [(16, 20914.0, 21451.0), (1, 22782.0, 22670.0)],
        }
    }

    /// The seed's change of context switches with dio+aio `(16 jobs, 1 job)`, where it gives one.
    pub fn seed_ctx_change(self) -> Option<(f64, f64)> {
        match self {
            Job::RandRead4k => Some((-0.16, -0.10)),
            Job::Read128k => Some((-0.33, -0.50)),
            _ => None,
        }
    }
}
