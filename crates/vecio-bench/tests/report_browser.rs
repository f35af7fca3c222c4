//! The report's `index.html` in headless Chromium: it loads from disk with nothing from the
//! network, its inline check script finds every plot drawn (a non-empty box with shapes in
//! it), and the page logs nothing to the console. Skips, saying why, without Chromium.

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
    assert_eq!(plots, 15);
    assert!(
        dom.contains(&format!("data-status=\"ok\">plots-ok {plots}<")),
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
