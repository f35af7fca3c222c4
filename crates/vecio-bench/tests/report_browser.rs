//! The report's `index.html` in headless Chromium: it loads from disk with nothing from the
//! network, its inline check script finds every plot drawn (a non-empty box with shapes in
//! it), and the page logs nothing to the console; its first screen (1280 x 900) shows the
//! verdict, one line per source document. Skips, saying why, without Chromium.

mod common;

use std::process::Command;

use common::{fixture, write_report};

/// The Chromium binary, if one is installed.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn the_page_needs_no_network() {
    let (_dir, files) = write_report(&fixture());
    let html = std::fs::read_to_string(&files.html).expect("index.html");
    for banned in ["<script src", "<link", "@import", "url(", "<img"] {
        assert!(!html.contains(banned), "the page loads something: {banned}");
    }
    let outside: Vec<&str> = html
        .match_indices("http")
        .map(|(i, _)| &html[i..(i + 40).min(html.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "addresses in the page: {outside:?}");
}

#[test]
fn every_plot_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        println!("skipped: chromium is not installed (scripts/setup installs it)");
        return;
    };
    let (dir, files) = write_report(&fixture());
    let profile = dir.path().join("chromium-profile");
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", files.html.display()))
        .output()
        .expect("running chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {err}");
    let plots = std::fs::read_to_string(&files.html)
        .expect("index.html")
        .matches("<figure class=\"plot\"")
        .count();
    assert_eq!(plots, 16);
    assert!(
        dom.contains("data-status=\"ok\"") && dom.contains(&format!(">plots-ok {plots}<")),
        "the page's check did not pass: {}",
        dom.split("id=\"report-check\"")
            .nth(1)
            .unwrap_or("no check element")
            .chars()
            .take(200)
            .collect::<String>()
    );
    let console: Vec<&str> = err.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console output: {console:?}");
}

/// Width and height of a PNG, from its IHDR chunk.
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.get(..8)? != b"\x89PNG\r\n\x1a\n" || png.get(12..16)? != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(png.get(16..20)?), be(png.get(20..24)?)))
}

#[test]
fn the_first_screen_shows_the_verdict() {
    let Some(browser) = chromium() else {
        println!("skipped: chromium is not installed (scripts/setup installs it)");
        return;
    };
    let (dir, files) = write_report(&fixture());
    let html = std::fs::read_to_string(&files.html).expect("index.html");
    // The verdict comes before anything else in the page, the count is the sections' own.
    let verdict_at = html.find("id=\"verdict\"").expect("a verdict section");
    let summary_at = html.find("id=\"summary\"").expect("a summary section");
    assert!(verdict_at < summary_at);
    assert_eq!(
        html.matches("<tr data-seed=").count(),
        6,
        "one line per experiment"
    );
    let sections = common::sections(&fixture());
    let met: usize = sections
        .iter()
        .map(|s| s.targets.iter().filter(|t| t.met).count())
        .sum();
    let total: usize = sections.iter().map(|s| s.targets.len()).sum();
    assert!(
        html.contains(&format!(">{met} of {total} targets met<")),
        "count"
    );
    assert!(
        !html.contains("id=\"report-check\">"),
        "the check is hidden from readers"
    );

    let (width, height) = (1280, 900);
    let common = |profile: &str| {
        let mut c = Command::new("timeout");
        c.arg("120").arg(browser).args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
        ]);
        c.arg(format!(
            "--user-data-dir={}",
            dir.path().join(profile).display()
        ))
        .arg(format!("--window-size={width},{height}"));
        c
    };
    let url = format!("file://{}", files.html.display());
    let out = common("dom")
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("running chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let bottom: u32 = dom
        .split("data-verdict-bottom=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok())
        .expect("the page measured its verdict");
    assert!(
        bottom <= height,
        "the verdict ends at {bottom} px, below the first screen"
    );

    let shot = dir.path().join("first-screen.png");
    let out = common("shot")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .expect("running chromium");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("the screenshot");
    assert_eq!(png_size(&png), Some((width, height)));
    assert!(
        png.len() > 20_000,
        "a blank screen compresses to almost nothing"
    );
    // Kept for a human to look at.
    let keep = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-first-screen.png");
    let _ = std::fs::copy(&shot, &keep);
    println!("first screen: {}", keep.display());
}
