//! `vecio info`'s human output.

use super::{DeviceInfo, FileInfo, Kind};
use vecio_host::table::fmt_bytes;
use vecio_host::table::Table;

/// `items` joined with commas, broken into lines of about `width` characters, continuation
/// lines indented under the first.
fn wrap(items: &[String], width: usize) -> String {
    let mut out = String::new();
    let mut len = 0;
    for (i, item) in items.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        if len > 0 && len + sep.len() + item.len() > width {
            out += &format!(",\n{:15}", "");
            len = 0;
        } else {
            out += sep;
            len += sep.len();
        }
        out += item;
        len += item.len();
    }
    out
}

/// The report as text, one fact a line.
pub fn render(i: &FileInfo) -> String {
    let kind = match i.kind {
        Kind::Regular => "regular file",
        Kind::Block => "block device",
        Kind::Directory => "directory",
    };
    let mut out = match i.kind {
        Kind::Directory => format!("{}: {kind}\n", i.path),
        _ => format!("{}: {kind}, {}\n", i.path, fmt_bytes(i.size)),
    };
    let mut line = |k: &str, v: String| out += &format!("{k:<14} {v}\n");
    match (&i.fs, &i.mount) {
        (Some(fs), Some(m)) => line(
            "filesystem",
            format!("{fs}, mounted at {} from {}", m.point, m.source),
        ),
        (Some(fs), None) => line("filesystem", fs.clone()),
        _ => {}
    }
    if let Some(why) = &i.access {
        line("access", why.clone());
    }
    line("direct I/O", dio_text(i));
    if let Some(r) = i.page_cache {
        let pct = if r.total > 0 {
            100.0 * r.resident as f64 / r.total as f64
        } else {
            0.0
        };
        line(
            "page cache",
            format!(
                "{} of {} resident ({pct:.1}%)",
                fmt_bytes(r.resident),
                fmt_bytes(r.total)
            ),
        );
    }
    if let Some(locks) = &i.image_locks {
        line("image locks", locks.clone());
    }
    for (k, v) in device_lines(i.device.as_ref()) {
        line(k, v);
    }
    out += &format!(
        "\nwhat the kernel did: reads on {}; writes on {}\n",
        i.probed_on.reads,
        i.probed_on
            .writes
            .as_deref()
            .unwrap_or("nothing (see below)")
    );
    let mut t = Table::new(["probe", "result", "call and answer"]);
    for (name, p) in i.capabilities.named() {
        t.row([
            name.to_string(),
            p.outcome.name().to_string(),
            p.detail.clone(),
        ]);
    }
    out += &t.to_string();
    out
}

/// The direct-I/O line: what the kernel said about alignment, or why O_DIRECT is unavailable.
fn dio_text(i: &FileInfo) -> String {
    let o_direct = &i.capabilities.o_direct;
    match (&i.dio_align, o_direct.outcome.accepted()) {
        (_, Some(false)) => format!("not available ({})", o_direct.detail),
        (Some(a), _) if a.source == "default" => format!(
            "the kernel gives no alignment (no STATX_DIOALIGN); vecio assumes {} B",
            a.offset
        ),
        (Some(a), _) => format!(
            "buffers aligned to {} B, offsets and lengths to {} B (from {})",
            a.mem, a.offset, a.source
        ),
        (None, _) => format!("alignment unknown ({})", o_direct.detail),
    }
}

/// The block device lines: the device, a loop device's backing file, the queue settings.
fn device_lines(device: Option<&DeviceInfo>) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    match device {
        Some(d) => {
            let part = d
                .disk
                .as_ref()
                .map_or(String::new(), |disk| format!(", a partition of {disk}"));
            lines.push(("block device", format!("{} ({}){part}", d.name, d.number)));
            if let Some(l) = &d.loop_backing {
                let dio = if l.direct_io { "on" } else { "off" };
                lines.push(("loop", format!("backed by {}, direct I/O {dio}", l.file)));
            }
            let q: Vec<String> = d.queue.iter().map(|(k, v)| format!("{k} {v}")).collect();
            lines.push(("queue", wrap(&q, 80)));
        }
        None => lines.push((
            "block device",
            "none (no device behind this filesystem)".into(),
        )),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_well() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(1023), "1023 B");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes(1 << 30), "1.0 GiB");
        let items: Vec<String> = ["aaaa", "bbbb", "cccc"].map(String::from).to_vec();
        assert_eq!(wrap(&items, 12), format!("aaaa, bbbb,\n{:15}cccc", ""));
        assert_eq!(wrap(&items, 80), "aaaa, bbbb, cccc");
    }
}
