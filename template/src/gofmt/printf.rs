//! `fmt.Sprintf`'s reading of a format: flags, explicit argument indexes (`%[2]s`, `%[1]*d`),
//! `*` widths and precisions taken from arguments, and Go's reports for what goes wrong
//! (`%!d(BADINDEX)`, `%!(BADWIDTH)`, `%!d(MISSING)`, `%!(EXTRA ...)`, `%!(NOVERB)`).

use std::fmt::Write;

use crate::gofmt::to_v;
use crate::gofmt::verbs::{Spec, format_one};
use crate::value::Value;

/// Go refuses widths, precisions and indexes beyond a million (`tooLarge`).
const TOO_LARGE: i64 = 1_000_000;

/// `fmt.Sprintf` for template values.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut printer = Printer {
        format,
        bytes: format.as_bytes(),
        args,
        out: String::new(),
        arg_num: 0,
        reordered: false,
        good_arg_num: true,
    };
    printer.run();
    printer.out
}

/// The state of one `Sprintf` (Go's `pp` fields that matter here).
struct Printer<'f, 'a> {
    format: &'f str,
    bytes: &'f [u8],
    args: &'a [Value],
    out: String,
    /// The next operand to use.
    arg_num: usize,
    /// An explicit index was seen: unused operands are then not reported as EXTRA.
    reordered: bool,
    /// The directive's last explicit index was valid.
    good_arg_num: bool,
}

impl Printer<'_, '_> {
    fn run(&mut self) {
        let end = self.bytes.len();
        let mut i = 0;
        while i < end {
            self.good_arg_num = true;
            let start = i;
            while i < end && self.bytes[i] != b'%' {
                i += 1;
            }
            self.out.push_str(&self.format[start..i]);
            if i >= end {
                break;
            }
            i += 1;
            let mut spec = Spec::default();
            let (next, done) = self.flags(&mut spec, i);
            i = next;
            if done {
                continue;
            }
            match self.directive(&mut spec, i) {
                Some(next) => i = next,
                None => {
                    self.out.push_str("%!(NOVERB)");
                    break;
                }
            }
        }
        if !self.reordered && self.arg_num < self.args.len() {
            self.extra();
        }
    }

    /// Reads flags from `i`. A lower-case verb right after them with an operand left is
    /// printed at once (Go's fast path); then the second result is true.
    fn flags(&mut self, spec: &mut Spec, mut i: usize) -> (usize, bool) {
        while let Some(&c) = self.bytes.get(i) {
            match c {
                b'#' => spec.sharp = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b'-' => spec.minus = true,
                b' ' => spec.space = true,
                _ => {
                    if c.is_ascii_lowercase() && self.arg_num < self.args.len() {
                        self.print(spec, char::from(c));
                        return (i + 1, true);
                    }
                    return (i, false);
                }
            }
            i += 1;
        }
        (i, false)
    }

    /// Reads index, width, precision and verb from `i` and prints; the position after the
    /// verb, or `None` when the format ends before a verb.
    fn directive(&mut self, spec: &mut Spec, i: usize) -> Option<usize> {
        let end = self.bytes.len();
        let (mut i, mut after_index) = self.arg_number(i);
        if self.bytes.get(i) == Some(&b'*') {
            i += 1;
            match self.int_from_arg() {
                Some(width) => {
                    if width < 0 {
                        spec.minus = true;
                        spec.zero = false;
                    }
                    spec.width = Some(width.unsigned_abs() as usize);
                }
                None => self.out.push_str("%!(BADWIDTH)"),
            }
            after_index = false;
        } else {
            let (width, next) = parse_num(self.bytes, i);
            i = next;
            spec.width = width;
            if after_index && width.is_some() {
                // "%[3]2d": an index must come right before the verb.
                self.good_arg_num = false;
            }
        }
        if i + 1 < end && self.bytes[i] == b'.' {
            i += 1;
            if after_index {
                // "%[3].2d"
                self.good_arg_num = false;
            }
            (i, after_index) = self.arg_number(i);
            if self.bytes.get(i) == Some(&b'*') {
                i += 1;
                match self.int_from_arg() {
                    Some(precision) if precision >= 0 => spec.precision = Some(precision as usize),
                    _ => {
                        spec.precision = None;
                        self.out.push_str("%!(BADPREC)");
                    }
                }
                after_index = false;
            } else {
                let (precision, next) = parse_num(self.bytes, i);
                i = next;
                // A bare "." means precision zero.
                spec.precision = Some(precision.unwrap_or(0));
            }
        }
        if !after_index {
            (i, _) = self.arg_number(i);
        }
        let verb = self.format.get(i..).and_then(|rest| rest.chars().next())?;
        if verb == '%' {
            // Consumes no operand and ignores width and precision.
            self.out.push('%');
        } else if !self.good_arg_num {
            let _ = write!(self.out, "%!{verb}(BADINDEX)");
        } else if self.arg_num >= self.args.len() {
            let _ = write!(self.out, "%!{verb}(MISSING)");
        } else {
            self.print(spec, verb);
        }
        Some(i + verb.len_utf8())
    }

    /// Prints the current operand and moves to the next.
    fn print(&mut self, spec: &Spec, verb: char) {
        if let Some(arg) = self.args.get(self.arg_num) {
            self.out.push_str(&format_one(spec, verb, arg));
        }
        self.arg_num += 1;
    }

    /// An explicit `[n]` at `i`: selects operand n (1-based) when valid. Returns the position
    /// after it and whether a well-formed index was read (even one out of range, which only
    /// makes the directive a BADINDEX).
    fn arg_number(&mut self, i: usize) -> (usize, bool) {
        if self.bytes.get(i) != Some(&b'[') {
            return (i, false);
        }
        self.reordered = true;
        let (index, consumed, ok) = parse_arg_index(&self.bytes[i..]);
        match index {
            Some(index) if ok && index < self.args.len() => {
                self.arg_num = index;
                (i + consumed, true)
            }
            _ => {
                self.good_arg_num = false;
                (i + consumed, ok)
            }
        }
    }

    /// The current operand as a width or precision (`*`), moving past it; `None` when it is
    /// missing, not an integer or too large.
    fn int_from_arg(&mut self) -> Option<i64> {
        let arg = self.args.get(self.arg_num)?;
        self.arg_num += 1;
        arg.as_int()
            .filter(|n| (-TOO_LARGE..=TOO_LARGE).contains(n))
    }

    /// `%!(EXTRA type=value, ...)` for the operands no directive used.
    fn extra(&mut self) {
        self.out.push_str("%!(EXTRA ");
        for (i, arg) in self.args[self.arg_num..].iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            match arg {
                Value::Null => self.out.push_str("<nil>"),
                _ => {
                    let _ = write!(self.out, "{}={}", arg.type_name(), to_v(arg));
                }
            }
        }
        self.out.push(')');
    }
}

/// Decimal digits at `i`: the number (if any) and the position after it. A number growing
/// past a million makes Go give up on the rest of the format, so the position is then the end.
fn parse_num(bytes: &[u8], mut i: usize) -> (Option<usize>, usize) {
    let mut num: i64 = 0;
    let mut seen = false;
    while let Some(digit) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
        if num > TOO_LARGE {
            return (None, bytes.len());
        }
        num = num * 10 + i64::from(digit - b'0');
        seen = true;
        i += 1;
    }
    (seen.then_some(num as usize), i)
}

/// `[n]` at the start of `bytes`: the 0-based index, how many bytes to skip, and whether it
/// was well formed. Without a closing bracket only the `[` is skipped.
fn parse_arg_index(bytes: &[u8]) -> (Option<usize>, usize, bool) {
    if bytes.len() < 3 {
        return (None, 1, false);
    }
    let Some(close) = bytes.iter().skip(1).position(|&b| b == b']').map(|p| p + 1) else {
        return (None, 1, false);
    };
    let (number, after) = parse_num(&bytes[..close], 1);
    match number {
        // "[0]" is well formed but names no operand.
        Some(n) if after == close => (n.checked_sub(1), close + 1, true),
        _ => (None, close + 1, false),
    }
}
