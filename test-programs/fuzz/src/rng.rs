//! A small seeded generator (xorshift64*, Marsaglia 2003 / Vigna 2016): the
//! same seed gives the same calls, with no dependency.

/// The generator's state.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// A size: mostly small, sometimes a page edge, sometimes enormous.
    pub fn size(&mut self) -> u64 {
        match self.below(8) {
            0 => *self.pick(&[0, 1, 4095, 4096, 4097, 65536, 1 << 20]),
            1 => *self.pick(&[
                u64::MAX,
                u64::MAX - 4095,
                1 << 63,
                1 << 40,
                u32::MAX as u64 + 1,
            ]),
            2 => self.next(),
            _ => self.below(16 << 10),
        }
    }

    /// A count for `num-returns` and the like.
    pub fn count(&mut self) -> u32 {
        match self.below(6) {
            // Around the bound (`MAX_RETURNS`, 16,384: one past it is
            // refused) and a large count the store must take.
            0 => *self.pick(&[0, 1024, 16_385, u32::MAX]),
            1 => self.next() as u32,
            _ => 1 + self.below(4) as u32,
        }
    }

    /// A float for a resource quantity: ordinary, or NaN, infinite,
    /// negative, enormous.
    pub fn quantity(&mut self) -> Option<f64> {
        match self.below(8) {
            0 => None,
            1 => Some(*self.pick(&[f64::NAN, f64::INFINITY, -1.0, 1e300, -0.0, 1e12])),
            _ => Some(self.below(5) as f64 / 2.0),
        }
    }

    /// Random bytes, `len` of them.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}
