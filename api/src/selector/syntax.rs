//! The kubectl `-l` string form of a label selector: a small lexer and a
//! recursive-descent parser that checks keys and values as it goes.

use super::{LabelSelector, LabelSelectorRequirement, SelectorError, SelectorOperator};
use crate::names;
use crate::validation::quote;

/// One lexical token of the `-l` syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Eq,
    DoubleEq,
    NotEq,
    Bang,
    Open,
    Close,
    Comma,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Word(w) => quote(w),
            Token::Eq => "'='".into(),
            Token::DoubleEq => "'=='".into(),
            Token::NotEq => "'!='".into(),
            Token::Bang => "'!'".into(),
            Token::Open => "'('".into(),
            Token::Close => "')'".into(),
            Token::Comma => "','".into(),
        }
    }
}

fn describe(token: Option<&Token>) -> String {
    token.map_or_else(|| "end of selector".to_string(), Token::describe)
}

/// Splits selector text into tokens; words run until whitespace or a symbol.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            ',' => tokens.push(Token::Comma),
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            '=' if chars.peek() == Some(&'=') => {
                chars.next();
                tokens.push(Token::DoubleEq);
            }
            '=' => tokens.push(Token::Eq),
            '!' if chars.peek() == Some(&'=') => {
                chars.next();
                tokens.push(Token::NotEq);
            }
            '!' => tokens.push(Token::Bang),
            '<' | '>' => return Err(format!("operator '{c}' is not supported")),
            c => {
                let mut word = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || "=!(),<>".contains(n) {
                        break;
                    }
                    word.push(n);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    Ok(tokens)
}

/// A recursive-descent parser over the tokens of one selector string.
struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    selector: LabelSelector,
}

impl Parser<'_> {
    fn syntax(&self, detail: impl Into<String>) -> SelectorError {
        SelectorError::Syntax { text: self.text.to_string(), detail: detail.into() }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        token
    }

    fn at_requirement_end(&self) -> bool {
        matches!(self.peek(), None | Some(Token::Comma))
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        match self.next() {
            Some(Token::Word(key)) => match names::validate_label_key(&key) {
                None => Ok(key),
                Some(detail) => Err(SelectorError::InvalidKey { text: self.text.to_string(), key, detail }),
            },
            other => Err(self.syntax(format!("expected a label key, found {}", describe(other.as_ref())))),
        }
    }

    fn value(&self, value: String) -> Result<String, SelectorError> {
        match names::validate_label_value(&value) {
            None => Ok(value),
            Some(detail) => Err(SelectorError::InvalidValue { text: self.text.to_string(), value, detail }),
        }
    }

    /// The value after `=`, `==` or `!=`; nothing before `,` or the end is "".
    fn single_value(&mut self, op: &str) -> Result<String, SelectorError> {
        if self.at_requirement_end() {
            return Ok(String::new());
        }
        match self.next() {
            Some(Token::Word(value)) => self.value(value),
            other => Err(self.syntax(format!("expected a value after '{op}', found {}", describe(other.as_ref())))),
        }
    }

    /// `( v1, v2 )`; empty elements are "" values, so `()` is `[""]` as in
    /// Kubernetes.
    fn value_list(&mut self, op: &str) -> Result<Vec<String>, SelectorError> {
        match self.next() {
            Some(Token::Open) => {}
            other => return Err(self.syntax(format!("expected '(' after '{op}', found {}", describe(other.as_ref())))),
        }
        let mut values = Vec::new();
        let mut current = String::new();
        loop {
            match self.next() {
                Some(Token::Word(w)) if current.is_empty() => current = w,
                Some(Token::Comma) => values.push(self.value(std::mem::take(&mut current))?),
                Some(Token::Close) => {
                    values.push(self.value(current)?);
                    return Ok(values);
                }
                other => {
                    return Err(self.syntax(format!(
                        "expected a value, ',' or ')' in the '{op}' list, found {}",
                        describe(other.as_ref())
                    )))
                }
            }
        }
    }

    fn push(&mut self, key: String, operator: SelectorOperator, values: Vec<String>) {
        self.selector.match_expressions.push(LabelSelectorRequirement { key, operator, values });
    }

    fn requirement(&mut self) -> Result<(), SelectorError> {
        if self.peek() == Some(&Token::Bang) {
            self.pos += 1;
            let key = self.key()?;
            if !self.at_requirement_end() {
                return Err(self.syntax(format!("expected ',' or end after '!{key}', found {}", describe(self.peek()))));
            }
            self.push(key, SelectorOperator::DoesNotExist, Vec::new());
            return Ok(());
        }
        let key = self.key()?;
        let shown = quote(&key);
        match self.next() {
            None | Some(Token::Comma) => {
                self.pos -= 1;
                self.push(key, SelectorOperator::Exists, Vec::new());
            }
            Some(op @ (Token::Eq | Token::DoubleEq)) => {
                let value = self.single_value(if op == Token::Eq { "=" } else { "==" })?;
                match self.selector.match_labels.get(&key) {
                    // A second, different equality on one key can never hold
                    // together with the first; keep both as requirements.
                    Some(existing) if *existing != value => {
                        self.push(key, SelectorOperator::In, vec![value]);
                    }
                    _ => {
                        self.selector.match_labels.insert(key, value);
                    }
                }
            }
            Some(Token::NotEq) => {
                let value = self.single_value("!=")?;
                self.push(key, SelectorOperator::NotIn, vec![value]);
            }
            Some(Token::Word(w)) if w == "in" => {
                let values = self.value_list("in")?;
                self.push(key, SelectorOperator::In, values);
            }
            Some(Token::Word(w)) if w == "notin" => {
                let values = self.value_list("notin")?;
                self.push(key, SelectorOperator::NotIn, values);
            }
            other => {
                let found = describe(other.as_ref());
                let allowed = "'=', '==', '!=', 'in', 'notin', ',' or end";
                return Err(self.syntax(format!("expected {allowed} after key {shown}, found {found}")));
            }
        }
        if !self.at_requirement_end() {
            return Err(self.syntax(format!(
                "expected ',' or end after the requirement on {shown}, found {}",
                describe(self.peek())
            )));
        }
        Ok(())
    }
}

/// Parses one `-l` selector string.
pub(super) fn parse(text: &str) -> Result<LabelSelector, SelectorError> {
    let tokens = tokenize(text).map_err(|detail| SelectorError::Syntax { text: text.to_string(), detail })?;
    let mut parser = Parser { text, tokens, pos: 0, selector: LabelSelector::default() };
    if parser.tokens.is_empty() {
        return Ok(parser.selector);
    }
    loop {
        parser.requirement()?;
        match parser.next() {
            None => return Ok(parser.selector),
            Some(Token::Comma) if parser.peek().is_none() => {
                return Err(parser.syntax("expected a requirement after ','"))
            }
            _ => {}
        }
    }
}
