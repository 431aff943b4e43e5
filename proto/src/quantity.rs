//! Fractional resource quantities in fixed point.

/// Fixed-point units per whole resource unit: quantities are exact to
/// 1/10,000 (Ray's `kResourceUnitScaling`), so that 0.1 + 0.2 GPUs add up
/// to exactly 0.3 and ten 0.1 tasks fill exactly one GPU.
pub const SCALE: u64 = 10_000;

/// A non-negative amount of a resource, in 1/[`SCALE`] units.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Quantity(pub u64);

impl Quantity {
    /// Nothing.
    pub const ZERO: Quantity = Quantity(0);
    /// One whole unit.
    pub const ONE: Quantity = Quantity(SCALE);

    /// `units` whole units.
    #[cfg(test)]
    pub const fn whole(units: u64) -> Self {
        Quantity(units * SCALE)
    }

    /// `value` rounded to the nearest 1/[`SCALE`].
    ///
    /// # Errors
    /// A message naming `what` when `value` is negative, not finite or too
    /// large.
    pub fn from_f64(value: f64, what: &str) -> Result<Self, String> {
        if !value.is_finite() || !(0.0..=1e12).contains(&value) {
            return Err(format!(
                "{what} must be a non-negative number (at most 1e12), got {value}"
            ));
        }
        // In range: the cast cannot truncate.
        Ok(Quantity((value * SCALE as f64).round() as u64))
    }

    /// As a float (for display and the WIT).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / SCALE as f64
    }

    /// Whether it is a whole number of units.
    pub fn is_whole(self) -> bool {
        self.0 % SCALE == 0
    }

    /// Whole units in it (rounded down).
    pub fn units(self) -> u64 {
        self.0 / SCALE
    }
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_whole() {
            write!(f, "{}", self.units())
        } else {
            let s = format!("{:.4}", self.as_f64());
            f.write_str(s.trim_end_matches('0'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_are_exact_and_display_plainly() {
        let tenth = Quantity::from_f64(0.1, "x").unwrap();
        assert_eq!(Quantity(tenth.0 * 10), Quantity::ONE);
        assert_eq!(Quantity::from_f64(0.5, "x").unwrap().to_string(), "0.5");
        assert_eq!(Quantity::whole(2).to_string(), "2");
        assert_eq!(Quantity::from_f64(0.25, "x").unwrap().to_string(), "0.25");
        let err = Quantity::from_f64(-1.0, "num_gpus").unwrap_err();
        assert!(err.contains("num_gpus"), "{err}");
        assert!(Quantity::from_f64(f64::NAN, "x").is_err());
    }
}
