//! Values on the command lines of `vecio` and `vecio-bench`: sizes, counts and seconds, parsed
//! for clap's `value_parser`, so a bad one is a usage error (exit status 2) before anything runs.

use std::time::Duration;

/// Parses a size such as `1G` or `512k` (binary units) into bytes; zero is refused.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (examples: 4096, 64k, 256M, 1G)"))?;
    let shift = match unit
        .to_ascii_lowercase()
        .trim_end_matches("ib")
        .trim_end_matches('b')
    {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (k, M, G, T)")),
    };
    match n.checked_mul(1u64 << shift) {
        None => Err(format!("{s:?} is too large")),
        Some(0) => Err("a size of zero bytes measures nothing".into()),
        Some(n) => Ok(n),
    }
}

/// Parses a count of at least one (threads, requests in flight).
pub fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}

/// Parses a positive number of seconds (`5`, `0.5`).
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .and_then(|f| Duration::try_from_secs_f64(f).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{s:?} is not a positive number of seconds"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("1Q").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("0G").is_err());
    }

    #[test]
    fn counts_and_seconds() {
        assert_eq!(parse_count("4"), Ok(4));
        assert!(parse_count("0").is_err());
        assert!(parse_count("-1").is_err());
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-2").is_err());
        assert!(parse_seconds("nan").is_err());
    }
}
