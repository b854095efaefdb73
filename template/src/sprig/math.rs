//! Arithmetic and number conversions: integer math through cast's `ToInt64`, float math
//! (`addf`...) through decimal arithmetic as sprig does with shopspring/decimal.

use rand::Rng;

use crate::funcs::{FuncError, FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{int_arg, str_arg, strval, to_float64, to_int64};
use crate::value::Value;

use Param::{Any, Float, Int, String as Str};

/// Registers the math functions.
pub fn register(map: &mut FuncMap) {
    map.insert(
        "add1",
        Function::new(&[Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_add(1)))
        }),
    );
    map.insert(
        "add",
        Function::variadic(&[], Any, |a| {
            Ok(Value::Int64(
                a.iter().fold(0i64, |sum, v| sum.wrapping_add(to_int64(v))),
            ))
        }),
    );
    map.insert(
        "sub",
        Function::new(&[Any, Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
        }),
    );
    map.insert(
        "mul",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Int64(
                a.iter().fold(1i64, |p, v| p.wrapping_mul(to_int64(v))),
            ))
        }),
    );
    map.insert(
        "div",
        Function::new(&[Any, Any], |a| {
            int_division(&a[0], &a[1], i64::wrapping_div)
        }),
    );
    map.insert(
        "mod",
        Function::new(&[Any, Any], |a| {
            int_division(&a[0], &a[1], i64::wrapping_rem)
        }),
    );
    for name in ["max", "biggest"] {
        map.insert(
            name,
            Function::variadic(&[Any], Any, |a| {
                Ok(Value::Int64(a.iter().map(to_int64).max().unwrap_or(0)))
            }),
        );
    }
    map.insert(
        "min",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Int64(a.iter().map(to_int64).min().unwrap_or(0)))
        }),
    );
    map.insert(
        "maxf",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::float(
                a.iter().map(to_float64).fold(f64::MIN, go_max),
            ))
        }),
    );
    map.insert(
        "minf",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::float(
                a.iter().map(to_float64).fold(f64::MAX, go_min),
            ))
        }),
    );
    map.insert(
        "add1f",
        Function::new(&[Any], |a| Ok(decimal_op(&a[0], &[Value::Int(1)], Op::Add))),
    );
    map.insert(
        "addf",
        Function::variadic(&[], Any, |a| Ok(decimal_op(&Value::float(0.0), a, Op::Add))),
    );
    map.insert(
        "subf",
        Function::variadic(&[Any], Any, |a| Ok(decimal_op(&a[0], &a[1..], Op::Sub))),
    );
    map.insert(
        "mulf",
        Function::variadic(&[Any], Any, |a| Ok(decimal_op(&a[0], &a[1..], Op::Mul))),
    );
    map.insert(
        "divf",
        Function::variadic(&[Any], Any, |a| Ok(decimal_op(&a[0], &a[1..], Op::Div))),
    );
    map.insert(
        "ceil",
        Function::new(&[Any], |a| Ok(Value::float(to_float64(&a[0]).ceil()))),
    );
    map.insert(
        "floor",
        Function::new(&[Any], |a| Ok(Value::float(to_float64(&a[0]).floor()))),
    );
    map.insert(
        "round",
        Function::variadic(&[Any, Int], Float, |a| {
            let round_on = a.get(2).map_or(0.5, to_float64);
            Ok(Value::float(round(
                to_float64(&a[0]),
                int_arg(&a[1]),
                round_on,
            )))
        }),
    );
    map.insert(
        "randInt",
        Function::new(&[Int, Int], |a| {
            let (min, max) = (int_arg(&a[0]), int_arg(&a[1]));
            if max <= min {
                return Err("invalid argument to Intn".into());
            }
            Ok(Value::Int(rand::rng().random_range(min..max)))
        }),
    );
    map.insert(
        "atoi",
        Function::new(&[Str], |a| Ok(Value::Int(atoi(str_arg(&a[0]))))),
    );
    map.insert(
        "int64",
        Function::new(&[Any], |a| Ok(Value::Int64(to_int64(&a[0])))),
    );
    map.insert(
        "int",
        Function::new(&[Any], |a| Ok(Value::Int(to_int64(&a[0])))),
    );
    map.insert(
        "float64",
        Function::new(&[Any], |a| Ok(Value::float(to_float64(&a[0])))),
    );
    map.insert(
        "toDecimal",
        Function::new(&[Any], |a| {
            Ok(Value::Int64(
                i64::from_str_radix(&strval(&a[0]), 8).unwrap_or(0),
            ))
        }),
    );
}

fn int_division(a: &Value, b: &Value, op: fn(i64, i64) -> i64) -> FuncResult {
    let divisor = to_int64(b);
    if divisor == 0 {
        return Err(FuncError(
            "runtime error: integer divide by zero".to_string(),
        ));
    }
    Ok(Value::Int64(op(to_int64(a), divisor)))
}

fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// `strconv.Atoi`, 0 on error.
fn atoi(s: &str) -> i64 {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    s.parse().unwrap_or(0)
}

/// sprig's `round`: rounds up from `round_on` of the last kept place.
fn round(value: f64, places: i64, round_on: f64) -> f64 {
    let pow = 10f64.powf(places as f64);
    let digit = pow * value;
    let fraction = digit.fract();
    let rounded = if fraction >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    rounded / pow
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A decimal `mantissa × 10^exponent`.
#[derive(Clone, Copy)]
struct Decimal {
    mantissa: i128,
    exponent: i32,
}

impl Decimal {
    /// The shortest decimal that reads back as `f` (shopspring's `NewFromFloat`).
    fn from_f64(f: f64) -> Option<Decimal> {
        if !f.is_finite() {
            return None;
        }
        let text = format!("{f:e}");
        let (mantissa, exp) = text.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = format!("{int}{frac}");
        Some(Decimal {
            mantissa: digits.parse().ok()?,
            exponent: exp - frac.len() as i32,
        })
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.mantissa, self.exponent)
            .parse()
            .unwrap_or(f64::NAN)
    }

    fn rescale(self, exponent: i32) -> Option<Decimal> {
        let shift = u32::try_from(self.exponent - exponent).ok()?;
        Some(Decimal {
            mantissa: self.mantissa.checked_mul(10i128.checked_pow(shift)?)?,
            exponent,
        })
    }

    fn apply(self, op: Op, other: Decimal) -> Option<Decimal> {
        match op {
            Op::Add | Op::Sub => {
                let exponent = self.exponent.min(other.exponent);
                let (a, b) = (self.rescale(exponent)?, other.rescale(exponent)?);
                let mantissa = match op {
                    Op::Add => a.mantissa.checked_add(b.mantissa)?,
                    _ => a.mantissa.checked_sub(b.mantissa)?,
                };
                Some(Decimal { mantissa, exponent })
            }
            Op::Mul => Some(Decimal {
                mantissa: self.mantissa.checked_mul(other.mantissa)?,
                exponent: self.exponent.checked_add(other.exponent)?,
            }),
            Op::Div => {
                if other.mantissa == 0 {
                    return None;
                }
                // Quotient rounded half away from zero to 16 decimal places.
                let shift = 17 + self.exponent - other.exponent;
                let scaled = if shift >= 0 {
                    self.mantissa
                        .checked_mul(10i128.checked_pow(u32::try_from(shift).ok()?)?)?
                } else {
                    self.mantissa / 10i128.checked_pow(shift.unsigned_abs())?
                };
                let q = scaled / other.mantissa;
                let rounded = (q + q.signum() * 5) / 10;
                Some(Decimal {
                    mantissa: rounded,
                    exponent: -16,
                })
            }
        }
    }
}

fn float_op(a: f64, op: Op, b: f64) -> f64 {
    match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => a / b,
    }
}

/// sprig's `execDecimalOp`: folds `rest` into `first` with decimal arithmetic, falling back to
/// float arithmetic where the decimal would not fit.
fn decimal_op(first: &Value, rest: &[Value], op: Op) -> Value {
    let mut float = to_float64(first);
    let mut decimal = Decimal::from_f64(float);
    for value in rest {
        let x = to_float64(value);
        if matches!(op, Op::Div) && x == 0.0 {
            decimal = None;
        }
        decimal = decimal.and_then(|d| d.apply(op, Decimal::from_f64(x)?));
        float = match decimal {
            Some(d) => d.to_f64(),
            None => float_op(float, op, x),
        };
    }
    Value::float(float)
}
