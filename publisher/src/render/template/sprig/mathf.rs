//! Sprig's float math: `addf`, `add1f`, `subf`, `mulf`, `divf`, `maxf`, `minf`, `floor`,
//! `ceil` and `round`.
//!
//! Sprig computes `addf`..`divf` in shopspring/decimal: each float becomes the decimal
//! it prints as, the arithmetic is exact (division to 16 places, half away from zero),
//! and the result is the float nearest to the decimal, so `addf 1.1 2.2` is 3.3, not
//! 3.3000000000000003. The same is done here in 128-bit decimals, falling back to float
//! arithmetic for magnitudes they cannot hold.

use gotmpl::Value;

use super::args::{Func, failure, int_at, table, want, want_at_least, wrong_type};
use super::cast::{go_float, to_float64};

/// shopspring/decimal's `DivisionPrecision`.
const DIVISION_PLACES: u32 = 16;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["addf"], |a| decimal_fold("addf", 0.0, a, Op::Add)),
        (&["add1f"], |a| {
            want("add1f", a, 1)?;
            decimal_fold("add1f", to_float64(&a[0]), &[Value::Int(1)], Op::Add)
        }),
        (&["subf"], |a| {
            want_at_least("subf", a, 1)?;
            decimal_fold("subf", to_float64(&a[0]), &a[1..], Op::Sub)
        }),
        (&["mulf"], |a| {
            want_at_least("mulf", a, 1)?;
            decimal_fold("mulf", to_float64(&a[0]), &a[1..], Op::Mul)
        }),
        (&["divf"], |a| {
            want_at_least("divf", a, 1)?;
            decimal_fold("divf", to_float64(&a[0]), &a[1..], Op::Div)
        }),
        (&["maxf"], |a| {
            want_at_least("maxf", a, 1)?;
            Ok(Value::Float(a[1..].iter().map(to_float64).fold(to_float64(&a[0]), go_max)))
        }),
        (&["minf"], |a| {
            want_at_least("minf", a, 1)?;
            Ok(Value::Float(a[1..].iter().map(to_float64).fold(to_float64(&a[0]), go_min)))
        }),
        (&["floor"], |a| {
            want("floor", a, 1)?;
            Ok(Value::Float(to_float64(&a[0]).floor()))
        }),
        (&["ceil"], |a| {
            want("ceil", a, 1)?;
            Ok(Value::Float(to_float64(&a[0]).ceil()))
        }),
        (&["round"], |a| {
            if !(2..=3).contains(&a.len()) {
                want("round", a, 2)?;
            }
            let round_on = match a.get(2) {
                None => 0.5,
                Some(v @ (Value::Int(_) | Value::Uint(_) | Value::Float(_))) => to_float64(v),
                Some(other) => return Err(wrong_type("round", 2, "a number", other)),
            };
            Ok(Value::Float(round(to_float64(&a[0]), int_at("round", a, 1)?, round_on)))
        }),
    ])
}

/// Go's `math.Max`: NaN wins, and +0 is larger than -0.
fn go_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y && x == 0.0 {
        if x.is_sign_negative() { y } else { x }
    } else {
        x.max(y)
    }
}

fn go_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y && x == 0.0 {
        if x.is_sign_negative() { x } else { y }
    } else {
        x.min(y)
    }
}

/// Sprig's `round X PLACES [ROUND_ON]`: up when the fraction at PLACES reaches
/// ROUND_ON (0.5 by default), else down.
fn round(x: f64, places: i64, round_on: f64) -> f64 {
    let pow = 10f64.powf(places as f64);
    let digits = pow * x;
    let rounded = if digits.fract() >= round_on { digits.ceil() } else { digits.floor() };
    rounded / pow
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

fn decimal_fold(name: &str, first: f64, rest: &[Value], op: Op) -> gotmpl::Result<Value> {
    let finite = |x: f64| if x.is_finite() { Ok(x) } else { Err(failure(name, format!("cannot make a decimal of {}", go_float(x)))) };
    // Exact while the decimals fit, then the float the exact value had reached.
    let mut state: Result<Decimal, f64> = Decimal::from_f64(finite(first)?).ok_or(first);
    for value in rest {
        let x = finite(to_float64(value))?;
        if matches!(op, Op::Div) && x == 0.0 {
            return Err(failure(name, "decimal division by 0"));
        }
        state = match state {
            Ok(acc) => Decimal::from_f64(x).and_then(|d| acc.apply(d, op)).ok_or_else(|| float_op(acc.to_f64(), x, op)),
            Err(f) => Err(float_op(f, x, op)),
        };
    }
    Ok(Value::Float(state.map_or_else(|f| f, Decimal::to_f64)))
}

fn float_op(x: f64, y: f64, op: Op) -> f64 {
    match op {
        Op::Add => x + y,
        Op::Sub => x - y,
        Op::Mul => x * y,
        Op::Div => x / y,
    }
}

/// `mantissa × 10^-scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

impl Decimal {
    /// The decimal a finite float prints as in its shortest form; `None` past 128 bits.
    fn from_f64(f: f64) -> Option<Self> {
        let sci = format!("{f:e}");
        let (mantissa, exponent) = sci.split_once('e')?;
        let exponent: i64 = exponent.parse().ok()?;
        let fraction_digits = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i64;
        let digits: i128 = mantissa.replace('.', "").parse().ok()?;
        let scale = fraction_digits - exponent;
        if scale >= 0 {
            Some(Self { mantissa: digits, scale: u32::try_from(scale).ok()? })
        } else {
            Some(Self { mantissa: digits.checked_mul(10i128.checked_pow(u32::try_from(-scale).ok()?)?)?, scale: 0 })
        }
    }

    fn to_f64(self) -> f64 {
        format!("{}e-{}", self.mantissa, self.scale).parse().unwrap_or(f64::NAN)
    }

    /// The mantissa at a larger `scale`.
    fn at(self, scale: u32) -> Option<i128> {
        self.mantissa.checked_mul(10i128.checked_pow(scale - self.scale)?)
    }

    fn apply(self, other: Self, op: Op) -> Option<Self> {
        let common = self.scale.max(other.scale);
        match op {
            Op::Add => Some(Self { mantissa: self.at(common)?.checked_add(other.at(common)?)?, scale: common }),
            Op::Sub => Some(Self { mantissa: self.at(common)?.checked_sub(other.at(common)?)?, scale: common }),
            Op::Mul => Some(Self { mantissa: self.mantissa.checked_mul(other.mantissa)?, scale: self.scale.checked_add(other.scale)? }),
            Op::Div => {
                // self / other = (m1 · 10^s2) / (m2 · 10^s1), carried to DIVISION_PLACES.
                let numerator = self.mantissa.checked_mul(10i128.checked_pow(other.scale.checked_add(DIVISION_PLACES)?)?)?;
                let denominator = other.mantissa.checked_mul(10i128.checked_pow(self.scale)?)?;
                let (quotient, remainder) = (numerator / denominator, numerator % denominator);
                let away = remainder.checked_mul(2)?.abs() >= denominator.abs();
                let rounded = if away { quotient + numerator.signum() * denominator.signum() } else { quotient };
                Some(Self { mantissa: rounded, scale: DIVISION_PLACES })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(first: f64, rest: &[f64], op: Op) -> f64 {
        let rest: Vec<Value> = rest.iter().map(|f| Value::Float(*f)).collect();
        match decimal_fold("t", first, &rest, op).unwrap() {
            Value::Float(f) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decimal_arithmetic_matches_shopspring() {
        assert_eq!(fold(1.1, &[2.2], Op::Add), 3.3);
        assert_eq!(fold(1.1, &[3.0], Op::Mul), 3.3);
        assert_eq!(fold(10.0, &[3.0], Op::Div), 3.3333333333333335);
        assert_eq!(fold(2.0, &[3.0], Op::Div), 0.6666666666666667);
        assert_eq!(fold(0.3, &[0.1], Op::Sub), 0.2);
        assert_eq!(fold(1e300, &[1e300], Op::Mul), f64::INFINITY, "falls back to floats");
    }

    #[test]
    fn rounds_like_sprig() {
        assert_eq!(round(123.555555, 3, 0.5), 123.556);
        assert_eq!(round(123.5555, 3, 0.6), 123.555);
        assert_eq!(round(-2.5, 0, 0.5), -3.0);
    }
}
