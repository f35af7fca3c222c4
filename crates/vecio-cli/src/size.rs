//! Counts on the command line (`vecio fuse --threads`): zero is refused, so clap reports it as
//! a usage error (exit status 2) before anything runs. The bench's sizes and seconds are
//! parsed in `vecio_bench::experiment::options`.

/// Parses a count of at least one (threads, requests in flight).
pub fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts() {
        assert_eq!(super::parse_count("4"), Ok(4));
        assert!(super::parse_count("0").is_err());
        assert!(super::parse_count("-1").is_err());
    }
}
