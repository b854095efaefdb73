//! Kubernetes label selectors: the string form (`env=fv,tier in (a,b),!legacy`) used by
//! v1alpha1 objects, its conversion to and from `metav1.LabelSelector`, and matching.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// A label selector that could not be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The string form has a syntax error at the named token.
    #[error("invalid label selector {selector:?}: {reason} at {token:?} (position {position})")]
    Syntax {
        /// The whole selector text.
        selector: String,
        /// The offending token as written.
        token: String,
        /// Byte offset of the token in the selector.
        position: usize,
        /// What was expected or why the token is wrong.
        reason: String,
    },
    /// A label key or value does not follow Kubernetes' rules.
    #[error("invalid label selector {selector:?}: {what} {token:?}: {reason}")]
    InvalidName {
        /// The whole selector text.
        selector: String,
        /// `key` or `value`.
        what: &'static str,
        /// The offending key or value.
        token: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A matchExpressions entry uses an operator Kubernetes does not define, or misses values.
    #[error("invalid matchExpressions entry for key {key:?}: {reason}")]
    InvalidExpression {
        /// The requirement's key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Result alias for selector operations.
pub type Result<T, E = SelectorError> = std::result::Result<T, E>;

/// Operator names of `LabelSelectorRequirement`.
mod op {
    pub const IN: &str = "In";
    pub const NOT_IN: &str = "NotIn";
    pub const EXISTS: &str = "Exists";
    pub const DOES_NOT_EXIST: &str = "DoesNotExist";
}

/// True when the selector has neither matchLabels nor matchExpressions.
pub fn is_empty(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// A set of labels a selector can read: a map, or a more compact form of one.
pub trait Labels {
    /// The value of label `key`.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// Whether `labels` satisfy `selector`; an empty selector matches every label set.
///
/// Callers that select clusters apply Sveltos' rule that an empty selector matches no cluster.
pub fn matches(selector: &LabelSelector, labels: &impl Labels) -> Result<bool> {
    if let Some(match_labels) = &selector.match_labels
        && match_labels
            .iter()
            .any(|(k, v)| labels.label(k) != Some(v.as_str()))
    {
        return Ok(false);
    }
    for requirement in selector.match_expressions.iter().flatten() {
        if !requirement_matches(requirement, labels)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Why `labels` do not match `selector`, in words (the first requirement that fails), or
/// `None` when they match.
pub fn mismatch(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<Option<String>> {
    let has = |key: &str| match labels.get(key) {
        Some(value) => format!("its label {key} is {value:?}"),
        None => format!("it has no label {key}"),
    };
    for (key, wanted) in selector.match_labels.iter().flatten() {
        if labels.get(key) != Some(wanted) {
            return Ok(Some(format!("{key}={wanted} is wanted; {}", has(key))));
        }
    }
    for requirement in selector.match_expressions.iter().flatten() {
        if !requirement_matches(requirement, labels)? {
            let key = &requirement.key;
            let values = requirement.values.as_deref().unwrap_or_default().join(",");
            let wanted = match requirement.operator.as_str() {
                op::IN => format!("{key} in ({values})"),
                op::NOT_IN => format!("{key} notin ({values})"),
                op::EXISTS => key.clone(),
                _ => format!("!{key}"),
            };
            return Ok(Some(format!("{wanted} is wanted; {}", has(key))));
        }
    }
    Ok(None)
}

fn requirement_matches(
    requirement: &LabelSelectorRequirement,
    labels: &impl Labels,
) -> Result<bool> {
    let values = requirement.values.as_deref().unwrap_or_default();
    let value = labels.label(&requirement.key);
    let listed = |value: &str| values.iter().any(|v| v == value);
    let invalid = |reason: &str| SelectorError::InvalidExpression {
        key: requirement.key.clone(),
        reason: reason.to_string(),
    };
    match requirement.operator.as_str() {
        op::IN | op::NOT_IN if values.is_empty() => {
            Err(invalid("operator In/NotIn needs at least one value"))
        }
        op::EXISTS | op::DOES_NOT_EXIST if !values.is_empty() => {
            Err(invalid("operator Exists/DoesNotExist takes no values"))
        }
        op::IN => Ok(value.is_some_and(listed)),
        op::NOT_IN => Ok(value.is_none_or(|v| !listed(v))),
        op::EXISTS => Ok(value.is_some()),
        op::DOES_NOT_EXIST => Ok(value.is_none()),
        other => Err(invalid(&format!(
            "unknown operator {other:?} (expected In, NotIn, Exists or DoesNotExist)"
        ))),
    }
}

/// Formats a selector in the string form; the empty selector formats as "".
pub fn to_selector_string(selector: &LabelSelector) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        parts.push(format!("{key}={value}"));
    }
    for requirement in selector.match_expressions.iter().flatten() {
        let values = requirement.values.clone().unwrap_or_default().join(",");
        let key = &requirement.key;
        parts.push(match requirement.operator.as_str() {
            op::IN => format!("{key} in ({values})"),
            op::NOT_IN => format!("{key} notin ({values})"),
            op::EXISTS => key.clone(),
            op::DOES_NOT_EXIST => format!("!{key}"),
            other => format!("{key} {other} ({values})"),
        });
    }
    parts.join(",")
}

/// Parses the string form into a `LabelSelector`, as Kubernetes' `ParseToLabelSelector` does:
/// `k=v`/`k==v` become matchLabels, `k!=v` a NotIn expression, `in`/`notin` sets, `k` and `!k`
/// existence tests. The empty string parses to the empty selector.
pub fn parse(text: &str) -> Result<LabelSelector> {
    Parser::new(text).parse()
}

#[derive(Debug, Clone, PartialEq)]
enum Token<'a> {
    Word(&'a str),
    Comma,
    Open,
    Close,
    Equals,
    DoubleEquals,
    NotEquals,
    Bang,
    Other(&'a str),
}

impl Token<'_> {
    fn text(&self) -> &str {
        match self {
            Token::Word(w) | Token::Other(w) => w,
            Token::Comma => ",",
            Token::Open => "(",
            Token::Close => ")",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::Bang => "!",
        }
    }
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, ',' | '(' | ')' | '=' | '!' | '<' | '>')
}

fn tokenize(text: &str) -> Vec<(usize, Token<'_>)> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let next_is_eq = || text[start + c.len_utf8()..].starts_with('=');
        let (token, len) = match c {
            ',' => (Token::Comma, 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            '=' if next_is_eq() => (Token::DoubleEquals, 2),
            '=' => (Token::Equals, 1),
            '!' if next_is_eq() => (Token::NotEquals, 2),
            '!' => (Token::Bang, 1),
            '<' | '>' => (Token::Other(&text[start..start + 1]), 1),
            _ => {
                let end = text[start..]
                    .char_indices()
                    .find(|&(_, ch)| !is_word_char(ch))
                    .map_or(text.len(), |(i, _)| start + i);
                (Token::Word(&text[start..end]), end - start)
            }
        };
        tokens.push((start, token));
        while chars.peek().is_some_and(|&(i, _)| i < start + len) {
            chars.next();
        }
    }
    tokens
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(usize, Token<'a>)>,
    pos: usize,
    selector: LabelSelector,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            tokens: tokenize(text),
            pos: 0,
            selector: LabelSelector::default(),
        }
    }

    fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    fn next(&mut self) -> Option<Token<'a>> {
        let token = self.tokens.get(self.pos).map(|(_, t)| t.clone());
        self.pos += 1;
        token
    }

    fn syntax(&self, at: usize, reason: impl Into<String>) -> SelectorError {
        let (position, token) = match self.tokens.get(at) {
            Some((p, t)) => (*p, t.text().to_string()),
            None => (self.text.len(), "end of selector".to_string()),
        };
        SelectorError::Syntax {
            selector: self.text.to_string(),
            token,
            position,
            reason: reason.into(),
        }
    }

    fn parse(mut self) -> Result<LabelSelector> {
        if self.tokens.is_empty() {
            return Ok(self.selector);
        }
        loop {
            self.requirement()?;
            match self.next() {
                None => return Ok(self.selector),
                Some(Token::Comma) if self.peek().is_some() => {}
                Some(Token::Comma) => {
                    return Err(self.syntax(self.pos, "expected a requirement after ','"));
                }
                Some(_) => return Err(self.syntax(self.pos - 1, "expected ',' or end of selector")),
            }
        }
    }

    fn requirement(&mut self) -> Result<()> {
        if self.peek() == Some(&Token::Bang) {
            self.pos += 1;
            let key = self.key()?;
            return self.push_expression(key, op::DOES_NOT_EXIST, Vec::new());
        }
        let key = self.key()?;
        match self.peek().cloned() {
            None | Some(Token::Comma) => self.push_expression(key, op::EXISTS, Vec::new()),
            Some(Token::Equals | Token::DoubleEquals) => {
                self.pos += 1;
                let value = self.value()?;
                self.selector
                    .match_labels
                    .get_or_insert_default()
                    .insert(key, value);
                Ok(())
            }
            Some(Token::NotEquals) => {
                self.pos += 1;
                let value = self.value()?;
                self.push_expression(key, op::NOT_IN, vec![value])
            }
            Some(Token::Word("in")) => {
                self.pos += 1;
                let values = self.value_set()?;
                self.push_expression(key, op::IN, values)
            }
            Some(Token::Word("notin")) => {
                self.pos += 1;
                let values = self.value_set()?;
                self.push_expression(key, op::NOT_IN, values)
            }
            Some(_) => Err(self.syntax(
                self.pos,
                "expected an operator ('=', '==', '!=', 'in', 'notin'), ',' or end of selector",
            )),
        }
    }

    fn push_expression(&mut self, key: String, operator: &str, values: Vec<String>) -> Result<()> {
        self.selector
            .match_expressions
            .get_or_insert_default()
            .push(LabelSelectorRequirement {
                key,
                operator: operator.to_string(),
                values: (!values.is_empty()).then_some(values),
            });
        Ok(())
    }

    fn key(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(word)) => {
                validate_key(word).map_err(|reason| self.invalid("key", word, reason))?;
                Ok(word.to_string())
            }
            _ => Err(self.syntax(self.pos - 1, "expected a label key")),
        }
    }

    /// A value after `=`, `==` or `!=`; it may be empty (`env=`).
    fn value(&mut self) -> Result<String> {
        match self.peek() {
            Some(Token::Word(word)) => {
                let word = *word;
                self.pos += 1;
                validate_value(word).map_err(|reason| self.invalid("value", word, reason))?;
                Ok(word.to_string())
            }
            None | Some(Token::Comma) => Ok(String::new()),
            Some(_) => Err(self.syntax(self.pos, "expected a label value")),
        }
    }

    fn value_set(&mut self) -> Result<Vec<String>> {
        if self.next() != Some(Token::Open) {
            return Err(self.syntax(self.pos - 1, "expected '(' to open the value set"));
        }
        let mut values = Vec::new();
        loop {
            match self.next() {
                Some(Token::Word(word)) => {
                    validate_value(word).map_err(|reason| self.invalid("value", word, reason))?;
                    values.push(word.to_string());
                    match self.next() {
                        Some(Token::Comma) => {}
                        Some(Token::Close) => break,
                        _ => {
                            return Err(
                                self.syntax(self.pos - 1, "expected ',' or ')' in value set")
                            );
                        }
                    }
                }
                Some(Token::Close) if values.is_empty() => {
                    return Err(self.syntax(self.pos - 1, "a value set needs at least one value"));
                }
                _ => return Err(self.syntax(self.pos - 1, "expected a value in the value set")),
            }
        }
        values.sort();
        values.dedup();
        Ok(values)
    }

    fn invalid(&self, what: &'static str, token: &str, reason: String) -> SelectorError {
        SelectorError::InvalidName {
            selector: self.text.to_string(),
            what,
            token: token.to_string(),
            reason,
        }
    }
}

/// Checks the "name" part of a label key or a non-empty label value: at most 63 characters,
/// alphanumeric at both ends, `-`, `_` and `.` inside.
fn validate_name_part(part: &str) -> std::result::Result<(), String> {
    if part.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !ends_ok(part.chars().next()) || !ends_ok(part.chars().last()) {
        return Err("must start and end with an alphanumeric character".into());
    }
    if !part
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err("may contain only alphanumerics, '-', '_' and '.'".into());
    }
    Ok(())
}

/// Checks a label key: an optional DNS-subdomain prefix and `/`, then a name part.
pub fn validate_key(key: &str) -> std::result::Result<(), String> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            let dns_ok = !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|label| {
                    !label.is_empty()
                        && label
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                });
            if !dns_ok {
                return Err(format!(
                    "prefix {prefix:?} must be a lowercase DNS subdomain"
                ));
            }
            name
        }
        None => key,
    };
    if name.is_empty() {
        return Err("name part must not be empty".into());
    }
    validate_name_part(name)
}

/// Checks a label value: empty, or a valid name part.
pub fn validate_value(value: &str) -> std::result::Result<(), String> {
    if value.is_empty() {
        Ok(())
    } else {
        validate_name_part(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn a_mismatch_names_the_label_and_what_it_is() {
        let selector = parse("env=fv,tier in (web,api)").unwrap();
        let said = |pairs: &[(&str, &str)]| mismatch(&selector, &labels(pairs)).unwrap();
        assert_eq!(said(&[("env", "fv"), ("tier", "web")]), None);
        assert_eq!(
            said(&[("env", "prod")]).unwrap(),
            "env=fv is wanted; its label env is \"prod\""
        );
        assert_eq!(
            said(&[("env", "fv")]).unwrap(),
            "tier in (api,web) is wanted; it has no label tier"
        );
    }

    #[test]
    fn equality_forms_become_match_labels() {
        for text in ["env=fv", "env==fv", " env = fv "] {
            let selector = parse(text).unwrap();
            assert_eq!(
                selector.match_labels,
                Some(labels(&[("env", "fv")])),
                "{text}"
            );
            assert_eq!(selector.match_expressions, None);
        }
    }

    #[test]
    fn every_operator_parses() {
        let selector = parse("a=1,b==2,c!=3,d in (x, y),e notin (z),f,!g,example.com/h=v").unwrap();
        assert_eq!(
            selector.match_labels,
            Some(labels(&[("a", "1"), ("b", "2"), ("example.com/h", "v")]))
        );
        assert_eq!(
            selector.match_expressions.unwrap(),
            vec![
                expr("c", "NotIn", &["3"]),
                expr("d", "In", &["x", "y"]),
                expr("e", "NotIn", &["z"]),
                expr("f", "Exists", &[]),
                expr("g", "DoesNotExist", &[]),
            ]
        );
    }

    #[test]
    fn empty_value_and_empty_selector() {
        assert_eq!(
            parse("env=").unwrap().match_labels,
            Some(labels(&[("env", "")]))
        );
        assert!(is_empty(&parse("").unwrap()));
        assert!(is_empty(&parse("   ").unwrap()));
    }

    #[test]
    fn bad_syntax_names_the_offending_token() {
        let cases = [
            ("env=fv,", "end of selector"),
            ("env in x", "x"),
            ("env in (a b)", "b"),
            ("env in ()", ")"),
            ("env > 3", ">"),
            ("=fv", "="),
            ("env=fv prod", "prod"),
            (",env", ","),
            ("env notin (a,", "end of selector"),
            ("!", "end of selector"),
        ];
        for (text, token) in cases {
            match parse(text) {
                Err(SelectorError::Syntax { token: t, .. }) => assert_eq!(t, token, "{text}"),
                other => panic!("{text}: expected a syntax error, got {other:?}"),
            }
        }
    }

    #[test]
    fn invalid_keys_and_values_are_rejected() {
        for (text, bad) in [
            ("-env=fv", "-env"),
            ("env=fv-", "fv-"),
            ("Example.com/env=fv", "Example.com/env"),
            ("env in (ok,b@d)", "b@d"),
            ("a/=x", "a/"),
        ] {
            match parse(text) {
                Err(SelectorError::InvalidName { token, .. }) => assert_eq!(token, bad, "{text}"),
                other => panic!("{text}: expected an invalid-name error, got {other:?}"),
            }
        }
        let long = "v".repeat(64);
        assert!(parse(&format!("env={long}")).is_err());
        let message = parse("env in (a b)").unwrap_err().to_string();
        assert!(message.contains("\"b\""), "{message}");
    }

    #[test]
    fn matching_covers_every_operator() {
        let selector = parse("env=fv,tier in (a,b),zone notin (x),team,!legacy").unwrap();
        let ok = labels(&[("env", "fv"), ("tier", "a"), ("team", "t")]);
        assert!(matches(&selector, &ok).unwrap());
        let mut wrong_env = ok.clone();
        wrong_env.insert("env".into(), "prod".into());
        assert!(!matches(&selector, &wrong_env).unwrap());
        let mut wrong_tier = ok.clone();
        wrong_tier.insert("tier".into(), "c".into());
        assert!(!matches(&selector, &wrong_tier).unwrap());
        let mut excluded_zone = ok.clone();
        excluded_zone.insert("zone".into(), "x".into());
        assert!(!matches(&selector, &excluded_zone).unwrap());
        let mut no_team = ok.clone();
        no_team.remove("team");
        assert!(!matches(&selector, &no_team).unwrap());
        let mut legacy = ok.clone();
        legacy.insert("legacy".into(), "".into());
        assert!(!matches(&selector, &legacy).unwrap());
    }

    #[test]
    fn not_equal_matches_missing_key() {
        let selector = parse("env!=prod").unwrap();
        assert!(matches(&selector, &labels(&[])).unwrap());
        assert!(matches(&selector, &labels(&[("env", "fv")])).unwrap());
        assert!(!matches(&selector, &labels(&[("env", "prod")])).unwrap());
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(matches(&LabelSelector::default(), &labels(&[("a", "b")])).unwrap());
    }

    #[test]
    fn malformed_expressions_are_errors() {
        let bad_op = LabelSelector {
            match_expressions: Some(vec![expr("a", "Gt", &["1"])]),
            ..Default::default()
        };
        assert!(matches!(
            matches(&bad_op, &labels(&[])),
            Err(SelectorError::InvalidExpression { .. })
        ));
        let in_without_values = LabelSelector {
            match_expressions: Some(vec![expr("a", "In", &[])]),
            ..Default::default()
        };
        assert!(matches(&in_without_values, &labels(&[("a", "1")])).is_err());
        let exists_with_values = LabelSelector {
            match_expressions: Some(vec![expr("a", "Exists", &["1"])]),
            ..Default::default()
        };
        assert!(matches(&exists_with_values, &labels(&[("a", "1")])).is_err());
    }

    #[test]
    fn string_form_round_trips() {
        for text in ["env=fv", "a=1,b in (x,y),c notin (z),d,!e", ""] {
            let selector = parse(text).unwrap();
            assert_eq!(
                parse(&to_selector_string(&selector)).unwrap(),
                selector,
                "{text}"
            );
        }
        assert_eq!(to_selector_string(&parse("env=fv").unwrap()), "env=fv");
    }
}
