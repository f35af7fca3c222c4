//! One cached 4 KiB read as a one-request `Batch`, N times: a fixed loop whose user-space
//! instructions per request callgrind counts, to compare two builds of the library's batch path
//! (`docs/results.md`, "The library's direct-I/O planner: no cost added").
//!
//! ```sh
//! cargo build --release -p vecio --example batch_cost
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/batch_cost 12000 uring FILE   # and 2000: the difference / 10000
//! ```

use vecio::{Batch, Direct, EngineKind, File, IoIter, RwFlags};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: batch_cost N serial|sync|uring|pool FILE";
    let n: usize = args.next().ok_or(usage)?.parse()?;
    let kind: EngineKind = args.next().ok_or(usage)?.parse()?;
    let path = args.next().ok_or(usage)?;
    let file = File::options().read(true).direct(Direct::Off).open(&path)?;
    let mut engine = kind.build()?;
    let mut buf = vec![0u8; 4096];
    let mut out = Vec::with_capacity(1);
    for _ in 0..n {
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::read_into(&mut buf), RwFlags::empty());
        out.clear();
        batch.run_into(engine.as_mut(), &mut out);
    }
    std::hint::black_box(&out);
    Ok(())
}
