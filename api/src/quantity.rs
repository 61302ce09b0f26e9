//! Kubernetes quantities (`"250m"`, `"16Gi"`, `"0.045"`, `"1e3"`), parsed and
//! compared exactly: a value is held as an integer number of nano-units, so
//! `"0.1"` + `"0.2"` == `"0.3"` and `"1Gi"` > `"1G"` with no float rounding.

use std::fmt;
use std::str::FromStr;

/// An exact quantity, in nano-units (10⁻⁹).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity {
    nanos: i128,
}

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quantity {text:?} is invalid: {detail} (expected a number with an optional suffix: n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like 1e3)")]
pub struct QuantityError {
    pub text: String,
    pub detail: String,
}

const NANO: i128 = 1_000_000_000;

impl Quantity {
    /// A whole number of units.
    pub fn from_units(units: i64) -> Quantity {
        Quantity { nanos: i128::from(units) * NANO }
    }

    /// The value in nano-units.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// The value in milli-units, rounded up (CPU requests are counted in millicores).
    pub fn millis_ceil(&self) -> i128 {
        self.nanos.saturating_add(999_999).div_euclid(1_000_000)
    }

    /// The value as a float, for scores and display only (never for comparisons).
    pub fn as_f64(&self) -> f64 {
        self.nanos as f64 / NANO as f64
    }

    /// Sum, saturating instead of overflowing.
    pub fn saturating_add(self, other: Quantity) -> Quantity {
        Quantity { nanos: self.nanos.saturating_add(other.nanos) }
    }

    /// Difference, saturating instead of overflowing.
    pub fn saturating_sub(self, other: Quantity) -> Quantity {
        Quantity { nanos: self.nanos.saturating_sub(other.nanos) }
    }

    /// Product with a whole number (replicas × request).
    pub fn times(self, n: i64) -> Quantity {
        Quantity { nanos: self.nanos.saturating_mul(i128::from(n)) }
    }

    /// Parses a quantity.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        let err = |detail: &str| QuantityError { text: text.to_string(), detail: detail.to_string() };
        let s = text.trim();
        if s.is_empty() {
            return Err(err("empty"));
        }
        let (negative, s) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let number_end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (number, suffix) = s.split_at(number_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(err("no number"));
        }
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        // Digits as an integer with a decimal exponent.
        let digits = format!("{whole}{frac}");
        let mut mantissa: i128 = 0;
        for d in digits.bytes() {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(d - b'0')))
                .ok_or_else(|| err("too large"))?;
        }
        let mut exp10: i32 = -(frac.len() as i32);
        let mut binary: u32 = 0;
        match suffix {
            "" => {}
            "n" => exp10 -= 9,
            "u" => exp10 -= 6,
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            "Ki" => binary = 1,
            "Mi" => binary = 2,
            "Gi" => binary = 3,
            "Ti" => binary = 4,
            "Pi" => binary = 5,
            "Ei" => binary = 6,
            s if s.starts_with(['e', 'E']) => {
                let e: i32 = s[1..].parse().map_err(|_| err("bad exponent"))?;
                exp10 = exp10.checked_add(e).ok_or_else(|| err("bad exponent"))?;
            }
            _ => return Err(err("unknown suffix")),
        }
        let mut nanos = mantissa.checked_mul(1024i128.pow(binary)).ok_or_else(|| err("too large"))?;
        let shift = exp10.checked_add(9).ok_or_else(|| err("too large"))?;
        if shift >= 0 {
            nanos = 10i128
                .checked_pow(shift.unsigned_abs())
                .and_then(|p| nanos.checked_mul(p))
                .ok_or_else(|| err("too large"))?;
        } else {
            let p = 10i128.checked_pow(shift.unsigned_abs()).ok_or_else(|| err("too precise"))?;
            if nanos % p != 0 {
                return Err(err("more precise than a nano-unit"));
            }
            nanos /= p;
        }
        Ok(Quantity { nanos: if negative { -nanos } else { nanos } })
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl fmt::Display for Quantity {
    /// The shortest exact decimal form: whole units, `m`, or `n` (`"2"`, `"250m"`, `"45n"`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nanos;
        if n % NANO == 0 {
            write!(f, "{}", n / NANO)
        } else if n % 1_000_000 == 0 {
            write!(f, "{}m", n / 1_000_000)
        } else {
            write!(f, "{n}n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn parses_every_suffix_exactly() {
        assert_eq!(q("250m").nanos(), 250_000_000);
        assert_eq!(q("0.045").nanos(), 45_000_000);
        assert_eq!(q("16Gi"), Quantity::from_units(16 * 1024 * 1024 * 1024));
        assert_eq!(q("1k"), q("1e3"));
        assert_eq!(q("1.5Gi"), Quantity::from_units(1536 * 1024 * 1024));
        assert_eq!(q("100n").nanos(), 100);
        assert_eq!(q("-2").nanos(), -2 * NANO);
        assert!(q("1Gi") > q("1G"));
        assert_eq!(q("0.1").saturating_add(q("0.2")), q("0.3"));
        assert_eq!(q("5"), q("5000m"));
    }

    #[test]
    fn refuses_nonsense_with_the_text() {
        for bad in ["", "abc", "1.2.3", "5Xi", "1e", "0.0000000001"] {
            let e = Quantity::parse(bad).unwrap_err();
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn extreme_exponents_and_sums_are_errors_or_saturate_never_overflow() {
        for bad in ["1e2147483647", "1e2147483639", "9e-2147483648", "1e-2147483640", "0.5e-2147483648", "1e99"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
        let max = Quantity { nanos: i128::MAX };
        assert_eq!(max.saturating_add(q("1")).millis_ceil(), i128::MAX.div_euclid(1_000_000));
        assert_eq!(max.times(i64::MAX), max);
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panicking(text in ".{0,40}") {
            let _ = Quantity::parse(&text);
        }

        #[test]
        fn number_like_text_never_overflows(
            sign in "[-+]?", whole in "[0-9]{0,45}", frac in "(\\.[0-9]{0,45})?",
            suffix in "(|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][-+]?[0-9]{1,11})",
        ) {
            if let Ok(q) = Quantity::parse(&format!("{sign}{whole}{frac}{suffix}")) {
                let _ = (q.millis_ceil(), q.as_f64(), q.times(i64::MAX), q.saturating_add(q), q.to_string());
            }
        }

        #[test]
        fn whole_units_round_trip(units in proptest::num::i64::ANY) {
            let q = Quantity::from_units(units);
            proptest::prop_assert_eq!(Quantity::parse(&q.to_string()), Ok(q));
        }
    }

    #[test]
    fn displays_shortest_exact_form() {
        assert_eq!(q("2").to_string(), "2");
        assert_eq!(q("0.25").to_string(), "250m");
        assert_eq!(q("4Gi").to_string(), "4294967296");
        assert_eq!(q("250m").millis_ceil(), 250);
    }
}
