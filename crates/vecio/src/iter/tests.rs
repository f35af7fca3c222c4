//! IoIter against a plain byte-vector model: the window is a range of the concatenated bytes.

use std::io::{IoSlice, IoSliceMut};

use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
enum Step {
    Advance(usize),
    Revert(usize),
    Truncate(usize),
    Reexpand,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0usize..200).prop_map(Step::Advance),
        (0usize..200).prop_map(Step::Revert),
        (0usize..200).prop_map(Step::Truncate),
        Just(Step::Reexpand),
    ]
}

/// The model: a window [start, end) over `total` bytes.
#[derive(Debug)]
struct Model {
    start: usize,
    end: usize,
    total: usize,
}

impl Model {
    fn apply(&mut self, s: &Step) {
        match *s {
            Step::Advance(n) => self.start += n.min(self.end - self.start),
            Step::Revert(n) => self.start -= n.min(self.start),
            Step::Truncate(n) => self.end = self.end.min(self.start + n),
            Step::Reexpand => self.end = self.total,
        }
    }
}

fn apply(it: &mut IoIter<'_>, s: &Step) {
    match *s {
        Step::Advance(n) => it.advance(n),
        Step::Revert(n) => it.revert(n),
        Step::Truncate(n) => it.truncate(n),
        Step::Reexpand => it.reexpand(),
    }
}

/// Bytes of the window, read through the iterator without moving it.
fn window_bytes(it: &IoIter<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    it.for_each_segment(|p, len| {
        // SAFETY: the iterator borrows these bytes for the duration of the test.
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(p, len) })
    });
    out
}

fn make_segments(lens: &[usize]) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut flat = Vec::new();
    let mut segs = Vec::new();
    for &l in lens {
        let s: Vec<u8> = (0..l).map(|i| (flat.len() + i) as u8 ^ 0x5a).collect();
        flat.extend_from_slice(&s);
        segs.push(s);
    }
    (segs, flat)
}

proptest! {
    #[test]
    fn window_matches_model(lens in prop::collection::vec(0usize..40, 0..12),
                            steps in prop::collection::vec(step(), 0..30)) {
        let (segs, flat) = make_segments(&lens);
        let slices: Vec<IoSlice<'_>> = segs.iter().map(|s| IoSlice::new(s)).collect();
        let mut it = IoIter::writev_from(&slices);
        let mut m = Model { start: 0, end: flat.len(), total: flat.len() };
        for s in &steps {
            apply(&mut it, s);
            m.apply(s);
            prop_assert_eq!(it.len(), m.end - m.start);
            prop_assert_eq!(it.consumed(), m.start);
            prop_assert_eq!(window_bytes(&it), flat[m.start..m.end].to_vec());
            let mut scratch = Vec::new();
            let iov = it.iovecs(&mut scratch);
            let n: usize = iov.iter().map(|v| v.iov_len).sum();
            prop_assert_eq!(n, it.len());
        }
    }

    #[test]
    fn ubuf_matches_model(len in 0usize..300, steps in prop::collection::vec(step(), 0..30)) {
        let flat: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut it = IoIter::write_from(&flat);
        let mut m = Model { start: 0, end: len, total: len };
        for s in &steps {
            apply(&mut it, s);
            m.apply(s);
            prop_assert_eq!(window_bytes(&it), flat[m.start..m.end].to_vec());
            prop_assert_eq!(it.single().map(|(_, l)| l), Some(m.end - m.start));
        }
    }

    #[test]
    fn split_covers_window_exactly(lens in prop::collection::vec(0usize..40, 0..12),
                                   adv in 0usize..100, at in 0usize..300) {
        let (segs, flat) = make_segments(&lens);
        let slices: Vec<IoSlice<'_>> = segs.iter().map(|s| IoSlice::new(s)).collect();
        let mut it = IoIter::writev_from(&slices);
        it.advance(adv);
        let start = adv.min(flat.len());
        let (front, back) = it.split_at(at);
        let mid = (start + at).min(flat.len());
        prop_assert_eq!(window_bytes(&front), flat[start..mid].to_vec());
        prop_assert_eq!(window_bytes(&back), flat[mid..].to_vec());
    }

    #[test]
    fn copy_round_trip(lens in prop::collection::vec(0usize..40, 0..12), adv in 0usize..60,
                       cap in 0usize..400) {
        let total: usize = lens.iter().sum();
        let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0u8; l]).collect();
        let src: Vec<u8> = (0..total).map(|i| (i * 7) as u8).collect();
        {
            let mut slices: Vec<IoSliceMut<'_>> =
                bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            let mut it = IoIter::readv_into(&mut slices);
            it.advance(adv);
            let start = adv.min(total);
            let n = it.copy_from_slice(&src[..cap.min(total)]).unwrap();
            prop_assert_eq!(n, cap.min(total).min(total - start));
            prop_assert_eq!(it.consumed(), start + n);
            it.revert(n);
            let mut back = vec![0u8; n];
            prop_assert_eq!(it.copy_to_slice(&mut back), n);
            prop_assert_eq!(&back[..], &src[..n]);
        }
    }

    #[test]
    fn alignment_is_or_of_bases_and_lengths(lens in prop::collection::vec(0usize..5000, 1..6)) {
        let (segs, _) = make_segments(&lens);
        let slices: Vec<IoSlice<'_>> = segs.iter().map(|s| IoSlice::new(s)).collect();
        let it = IoIter::writev_from(&slices);
        let want = segs.iter().filter(|s| !s.is_empty())
            .fold(0usize, |a, s| a | s.as_ptr() as usize | s.len());
        prop_assert_eq!(it.alignment(), want);
    }
}

#[test]
fn truncate_drops_whole_trailing_segments() {
    let (segs, _) = make_segments(&[4, 4, 4, 4]);
    let slices: Vec<IoSlice<'_>> = segs.iter().map(|s| IoSlice::new(s)).collect();
    let mut it = IoIter::writev_from(&slices);
    it.truncate(6);
    let mut scratch = Vec::new();
    let iov = it.iovecs(&mut scratch);
    assert_eq!(iov.len(), 2);
    assert_eq!(iov[1].iov_len, 2);
}

#[test]
fn whole_window_uses_callers_array() {
    let (segs, _) = make_segments(&[8, 8]);
    let slices: Vec<IoSlice<'_>> = segs.iter().map(|s| IoSlice::new(s)).collect();
    let it = IoIter::writev_from(&slices);
    let mut scratch = Vec::new();
    let iov = it.iovecs(&mut scratch);
    assert_eq!(iov.as_ptr() as usize, slices.as_ptr() as usize);
}

#[test]
fn source_cannot_be_written() {
    let buf = [0u8; 8];
    let mut it = IoIter::write_from(&buf);
    assert_eq!(it.copy_from_slice(&[1, 2]), Err(Invalid::Direction));
}
