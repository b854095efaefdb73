//! One string as go-yaml writes it: the style its encoder asks for (literal block when it
//! has a newline, plain unless it would read back as another type, else double-quoted), the
//! style the emitter's analysis then allows, and the writers. Plain and quoted scalars fold
//! at a space once the line is past the flavour's width (yaml.v2: 80 columns), continuing on
//! the next line at the scalar's indentation; keys never fold.

use crate::yaml::resolve::needs_quotes;
use crate::yaml::writer::Writer;

/// How a scalar is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// What go-yaml's `yaml_emitter_analyze_scalar` finds out about a value.
struct Analysis {
    multiline: bool,
    plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// A line break for YAML: LF, CR, NEL, LS, PS.
pub(super) fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// libyaml's printable set: no C0/C1 controls but LF, no BOM or U+FFFE/FFFF, nothing above
/// the Basic Multilingual Plane.
fn is_printable(c: char) -> bool {
    c == '\n'
        || ('\u{20}'..='\u{7e}').contains(&c)
        || ('\u{a0}'..='\u{d7ff}').contains(&c)
        || (('\u{e000}'..='\u{fffd}').contains(&c) && c != '\u{feff}')
}

fn analyze(value: &str, tabs_in_blocks: bool) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let mut indicators = value.starts_with("---") || value.starts_with("...");
    let (mut line_breaks, mut special, mut tabs) = (false, false, false);
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&next| is_blank(next));
        if i == 0 {
            indicators |= match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => true,
                '?' | ':' | '-' => followed_by_whitespace,
                _ => false,
            };
        } else {
            indicators |= match c {
                ':' => followed_by_whitespace,
                '#' => preceded_by_whitespace,
                _ => false,
            };
        }
        if c == '\t' && tabs_in_blocks {
            tabs = true;
        } else if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i == last;
            break_space |= previous_break;
            (previous_space, previous_break) = (true, false);
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i == last;
            space_break |= previous_space;
            (previous_space, previous_break) = (false, true);
        } else {
            (previous_space, previous_break) = (false, false);
        }
        preceded_by_whitespace = is_blank(c) || is_break(c) || c == '\0';
    }
    let mut analysis = Analysis {
        multiline: line_breaks,
        plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break || line_breaks {
        analysis.plain_allowed = false;
    }
    if trailing_space || space_break || special {
        analysis.block_allowed = false;
    }
    if break_space || space_break || tabs || special {
        analysis.plain_allowed = false;
        analysis.single_quoted_allowed = false;
    }
    if indicators {
        analysis.plain_allowed = false;
    }
    analysis
}

/// Whether a mapping key can be written as a simple key (`key: value`): one line and at most
/// 128 bytes; longer or multi-line keys take the `? key` form.
pub(super) fn simple_key_allowed(key: &str) -> bool {
    key.len() <= 128 && !key.chars().any(is_break)
}

impl Writer {
    /// A string: in a simple key (`key`), or a value whose continuation lines and block
    /// content go at column `indent`.
    pub(super) fn string(&mut self, value: &str, indent: usize, key: bool) {
        let analysis = analyze(value, self.flavour.tabs_in_blocks);
        let mut style = if value.contains('\n') {
            Style::Literal
        } else if needs_quotes(value) {
            Style::DoubleQuoted
        } else {
            Style::Plain
        };
        if key && analysis.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!analysis.plain_allowed || (value.is_empty() && key)) {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!analysis.block_allowed || key) {
            style = Style::DoubleQuoted;
        }
        let fold = !key;
        match style {
            Style::Plain => self.plain(value, indent, fold),
            Style::SingleQuoted => self.single_quoted(value, indent, fold),
            Style::DoubleQuoted => self.double_quoted(value, indent, fold),
            Style::Literal => self.literal(value, indent),
        }
    }

    /// Whether a space may become a line break here: folding allowed, the previous character
    /// not a space, and the line already past the width.
    fn may_fold(&self, fold: bool, spaces: bool) -> bool {
        fold && !spaces && self.column > self.flavour.width
    }

    /// A plain scalar (numbers, bools and null are written this way too).
    pub(super) fn plain(&mut self, value: &str, indent: usize, fold: bool) {
        if !value.is_empty() && !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if self.may_fold(fold, spaces) && chars.get(i + 1) != Some(&' ') {
                    self.write_indent(indent);
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                }
                self.put(c);
                self.indention = false;
                (spaces, breaks) = (false, false);
            }
        }
        if !value.is_empty() {
            self.whitespace = false;
        }
        self.indention = false;
    }

    fn single_quoted(&mut self, value: &str, indent: usize, fold: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let inside = i > 0 && i + 1 < chars.len() && chars[i + 1] != ' ';
                if self.may_fold(fold, spaces) && inside {
                    self.write_indent(indent);
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                (spaces, breaks) = (false, false);
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn double_quoted(&mut self, value: &str, indent: usize, fold: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        // libyaml's BOM test looks at the value's start, whatever the position: a value
        // starting with a BOM has every character escaped.
        let starts_with_bom = value.starts_with('\u{feff}');
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                self.escape(c);
                spaces = false;
            } else if c == ' ' {
                if self.may_fold(fold, spaces) && i > 0 && i + 1 < chars.len() {
                    self.write_indent(indent);
                    // A space starting the next line would be folded away: escape it.
                    if chars[i + 1] == ' ' {
                        self.put('\\');
                    }
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The escape after the backslash, as libyaml spells it.
    fn escape(&mut self, c: char) {
        let short = match c {
            '\0' => Some('0'),
            '\u{7}' => Some('a'),
            '\u{8}' => Some('b'),
            '\t' => Some('t'),
            '\n' => Some('n'),
            '\u{b}' => Some('v'),
            '\u{c}' => Some('f'),
            '\r' => Some('r'),
            '\u{1b}' => Some('e'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            '\u{85}' => Some('N'),
            '\u{a0}' => Some('_'),
            '\u{2028}' => Some('L'),
            '\u{2029}' => Some('P'),
            _ => None,
        };
        if let Some(short) = short {
            self.put(short);
            return;
        }
        let code = c as u32;
        let (letter, digits) = match code {
            0..=0xff => ('x', 2),
            0x100..=0xffff => ('u', 4),
            _ => ('U', 8),
        };
        self.put(letter);
        for c in format!("{code:0digits$X}").chars() {
            self.put(c);
        }
    }

    /// A literal block (`|`), with an indentation hint when the text starts with a space or a
    /// break and a chomping hint (`-` no final break, `+` several).
    fn literal(&mut self, value: &str, indent: usize) {
        self.write_indicator("|", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            let hint = self.flavour.indent.to_string();
            self.write_indicator(&hint, false, false, false);
        }
        let chomp = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        if self.flavour.break_after_block_header {
            self.put_break();
        }
        self.whitespace = true;
        let mut breaks = true;
        for c in chars {
            if is_break(c) {
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}
