//! Errors as the commands print them: one line, each cause said once.

/// An error and its causes on one line. A cause whose text its context already quotes (an OS
/// error formatted into the message that wraps it) is said once.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn an_os_error_is_said_once() {
        let os = std::io::Error::from_raw_os_error(2);
        let e = anyhow::Error::new(os).context(format!(
            "cannot open x: {}",
            std::io::Error::from_raw_os_error(2)
        ));
        assert_eq!(
            one_line(&e),
            "cannot open x: No such file or directory (os error 2)"
        );
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(one_line(&e), "outer: inner");
    }
}
