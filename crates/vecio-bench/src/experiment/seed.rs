//! A source document as the report presents it: who wrote it and when, and its claims in its
//! own words.

/// A claim of a seed: its own words and the figure they give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The seed's words, verbatim.
    pub quote: &'static str,
    /// The figure, as the report compares it.
    pub figure: &'static str,
}

/// A claim, quoted.
pub const fn claim(quote: &'static str, figure: &'static str) -> Claim {
    Claim { quote, figure }
}

/// A source document and how one experiment re-measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed {
    /// `000` to `004`.
    pub id: &'static str,
    /// What it is.
    pub title: &'static str,
    /// Its file under `seeds/`.
    pub file: &'static str,
    /// The post's date.
    pub date: &'static str,
    /// Its author and where it was posted.
    pub author: &'static str,
    /// Its headline claim, in a sentence: the documents are not in the repository.
    pub headline: &'static str,
    /// How the experiment re-measures it.
    pub method: &'static str,
    /// Its claims.
    pub claims: &'static [Claim],
}
