//! A binary buddy allocator over the pages of a region: blocks of 2^k pages are split in two
//! to serve smaller requests and merged with their buddy when both halves are free again.
//! Free blocks are bitsets per order, so allocating and freeing never allocate memory.

/// Free blocks of a region of `2^top` pages, by order.
pub(crate) struct Buddy {
    /// `free[k]`: one bit per block of `2^k` pages, set when that block is free.
    free: Vec<Vec<u64>>,
    top: u32,
}

impl Buddy {
    /// A region of `2^top` pages, all free.
    pub(crate) fn new(top: u32) -> Buddy {
        let free = (0..=top)
            .map(|k| vec![0u64; (1usize << (top - k)).div_ceil(64)])
            .collect();
        let mut b = Buddy { free, top };
        b.set(top, 0, true);
        b
    }

    /// A free block of `2^order` pages, as its first page, or `None` when none is left.
    pub(crate) fn alloc(&mut self, order: u32) -> Option<usize> {
        if order > self.top {
            return None;
        }
        let (mut k, mut block) = (order..=self.top).find_map(|k| Some((k, self.first_free(k)?)))?;
        self.set(k, block, false);
        while k > order {
            // Keep the left half, free the right one.
            k -= 1;
            block *= 2;
            self.set(k, block + 1, true);
        }
        Some(block << order)
    }

    /// Gives back the block of `2^order` pages starting at page `first`, merging it with its
    /// free buddies.
    pub(crate) fn free(&mut self, first: usize, order: u32) {
        let (mut k, mut block) = (order, first >> order);
        while k < self.top && self.is_free(k, block ^ 1) {
            self.set(k, block ^ 1, false);
            block /= 2;
            k += 1;
        }
        self.set(k, block, true);
    }

    fn first_free(&self, k: u32) -> Option<usize> {
        let words = &self.free[k as usize];
        let (i, w) = words.iter().enumerate().find(|(_, w)| **w != 0)?;
        Some(i * 64 + w.trailing_zeros() as usize)
    }

    fn is_free(&self, k: u32, block: usize) -> bool {
        self.free[k as usize][block / 64] & (1 << (block % 64)) != 0
    }

    fn set(&mut self, k: u32, block: usize, free: bool) {
        let word = &mut self.free[k as usize][block / 64];
        if free {
            *word |= 1 << (block % 64);
        } else {
            *word &= !(1 << (block % 64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_and_merges_back_to_one_block() {
        let mut b = Buddy::new(3); // 8 pages
        assert_eq!(b.alloc(0), Some(0));
        assert_eq!(b.alloc(1), Some(2));
        assert_eq!(b.alloc(2), Some(4));
        assert_eq!(b.alloc(0), Some(1));
        assert_eq!(b.alloc(0), None, "full");
        assert_eq!(b.alloc(4), None, "larger than the region");
        b.free(2, 1);
        b.free(0, 0);
        b.free(4, 2);
        assert_eq!(b.alloc(3), None, "page 1 is still taken");
        b.free(1, 0);
        assert_eq!(b.alloc(3), Some(0), "all merged");
    }

    proptest! {
        /// Blocks handed out never overlap, and freeing everything gives the whole region back.
        #[test]
        fn blocks_are_disjoint_and_all_come_back(orders in proptest::collection::vec(0u32..5, 1..64),
                                                 frees in proptest::collection::vec(any::<bool>(), 64)) {
            let mut b = Buddy::new(6);
            let mut owner = [usize::MAX; 64];
            let mut held = Vec::new();
            for (i, k) in orders.iter().enumerate() {
                if let Some(first) = b.alloc(*k) {
                    for (p, o) in owner.iter_mut().enumerate().skip(first).take(1 << k) {
                        prop_assert_eq!(*o, usize::MAX, "page {} handed out twice", p);
                        *o = i;
                    }
                    held.push((first, *k));
                }
                if frees[i] {
                    if let Some((first, k)) = held.pop() {
                        owner[first..first + (1 << k)].fill(usize::MAX);
                        b.free(first, k);
                    }
                }
            }
            for (first, k) in held {
                b.free(first, k);
            }
            prop_assert_eq!(b.alloc(6), Some(0));
        }
    }
}
